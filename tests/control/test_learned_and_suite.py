"""The policy artifact (model.zip + its training config), the shipped default policy, and the
evaluation suite end to end on a tiny workload."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from cachetuner.control import make_controller
from cachetuner.control.learned import load_policy
from cachetuner.errors import ConfigError
from cachetuner.evaluation import evaluate_controllers

TINY_ENV = {
    "workloads": [{"trace": "synthetic:zipf", "rate": 200, "params": {"n_requests": 12000, "n_keys": 1500}}],
    "interval_s": 10, "episode_intervals": None, "warmup_intervals": 1,
    "bounds": {"min_bytes": 1_500_000, "max_bytes": 9_000_000, "initial_bytes": 4_000_000},
    "actions": {"policies": ["allkeys-lru", "allkeys-lfu"], "timeouts": [0]},
}


def test_a_model_without_its_training_config_is_refused(tmp_path: Path) -> None:
    from stable_baselines3 import PPO

    from cachetuner.env import CacheTuningEnv

    model = PPO("MlpPolicy", CacheTuningEnv(TINY_ENV), n_steps=16, batch_size=16, n_epochs=1, device="cpu")
    model.save(tmp_path / "model.zip")
    with pytest.raises(ConfigError, match="train_config.yaml"):
        load_policy(tmp_path / "model.zip")
    # with its config (no price features, as trained) it loads and decides
    (tmp_path / "train_config.yaml").write_text(yaml.safe_dump({"env": TINY_ENV, "price_features": False}))
    art = load_policy(tmp_path / "model.zip")
    rep = evaluate_controllers(art.env_config, {"ppo": make_controller("ppo", model=art)}, seed=0)
    assert rep.results["ppo"].summary["intervals"] > 0
    # the same model declared with price features does not match its observation width: one clear line
    (tmp_path / "train_config.yaml").write_text(yaml.safe_dump({"env": TINY_ENV, "price_features": True}))
    art = load_policy(tmp_path / "model.zip")
    with pytest.raises(ConfigError, match="expects observations of shape"):
        evaluate_controllers(art.env_config, {"ppo": make_controller("ppo", model=art)}, seed=0)


def test_the_shipped_default_policy_loads_and_runs() -> None:
    art = load_policy("default")
    assert art.model_card() and "held out" in art.model_card().lower()
    cfg = art.env_config.model_copy(update={"workloads": art.env_config.workloads[:1], "episode_intervals": 6})
    rep = evaluate_controllers(cfg, {"ppo": make_controller("ppo", model=art)}, seed=0)
    assert rep.results["ppo"].summary["intervals"] == 6


def test_the_anchor_runs_the_rule_a_policy_was_trained_around(tmp_path: Path) -> None:
    """The env's anchor follows ``controllers.mrc`` unless ``env.mrc.anchor`` pins its own; the shipped
    policy and its recipe pin every field of the rule it was trained around (``mrc`` as of 2026-12-02), so
    that a later change to ``mrc``'s defaults does not silently change what the policy's actions mean."""
    from cachetuner.agent.config import TrainConfig
    from cachetuner.env import CacheTuningEnv
    from cachetuner.mrc.decide import MRCControlSettings

    trained_around = {"min_weight": 500.0, "free_shrink": 1.25, "fill_headroom": 2.0, "cold_growth": 1.25,
                      "cold_free_growth": 0.25, "cold_memory_bound": 2.0, "policy_sustained_gain": 0.01,
                      "free_growth_amortized": True, "free_shrink_min_gets": None, "cold_return_waits": False,
                      "regrow_guard": False, "fill_amortized": False, "gets_floor_smoothing": None,
                      "hysteresis_growth": None}
    art = load_policy("default")
    raw_anchor = art.raw_config["env"]["mrc"]["anchor"]
    assert set(raw_anchor) == set(MRCControlSettings.model_fields)  # pinned field by field, not by default
    shipped = TrainConfig.from_yaml("experiments/general.yaml")  # the recipe reproduces the training anchor
    for anchor in (art.train_env_config.mrc.anchor, shipped.env.mrc.anchor, shipped.eval_env_config().mrc.anchor):
        assert anchor == art.train_env_config.mrc.anchor
        assert {k: getattr(anchor, k) for k in trained_around} == trained_around
    # it runs with mrc's free-shrink evidence gate since 2026-12-03 (experiments/suite-gate-check.yaml's rule; 1,500
    # GETs since experiments/suite-audit-10.yaml's) and with cold_return_waits and regrow_guard since 2026-12-04
    # (experiments/suite-audit-6.yaml's rule): the evaluation env's anchor differs from the training one in those
    # fields only, and is mrc's rule as it ships
    run_with = art.env_config.mrc.anchor
    # and with mrc's fill cap that weighs its memory over payback_intervals (fill_amortized) since
    # experiments/suite-audit-13.yaml's rule (2026-12-04, after mrc got it by suite-audit-12.yaml's)
    # and with mrc's slow load floor (gets_floor_smoothing) since 2026-12-05, by the rule written in docs/agent.md
    # and with the quicker budget policy switch in the first 30 intervals since 2026-12-05 (budget audits 6 and 7)
    # and with the narrower band for growths since 2026-12-05 (experiments/suite-audit-17.yaml's rule)
    # and with mrc's cold growth for its first ten intervals since 2026-12-06 (window audits 11 and 12's rule, after
    # mrc got it by window audits 9 and 10's)
    # and with the size shortfall and the scan band cap since 2026-12-06 (audits 30-32 and window audits 24-26's rule,
    # adopted for mrc and this anchor together)
    # and counting in wall time at 57 s or more (reference_interval_s: auto) since 2026-12-07 (rules five and six,
    # interval audits 23-32; the identity at the 10 s it was trained and measured at)
    # and holding the fill cap at the bytes in use while a shrink waits for its evidence, at 57 s or more, since
    # 2026-12-07 (rule nine, interval audits 49-54, adopted for mrc and this anchor together)
    # and with rule ten's young window by reach and its two guards at 57 s or more since 2026-12-08 (rule eleven,
    # interval audits 63-68, adopted for mrc and this anchor together)
    # and with a payback horizon of at least three intervals since 2026-12-08 (rule twelve, interval audits 69-73,
    # adopted for mrc and this anchor together)
    assert run_with == art.train_env_config.mrc.anchor.model_copy(
        update={"free_shrink_min_gets": 1500.0, "cold_return_waits": True, "regrow_guard": True,
                "fill_amortized": True, "gets_floor_smoothing": 0.01, "budget_policy_gain": 0.01,
                "budget_min_weight": 100.0, "budget_quick_intervals": 30, "hysteresis_growth": 0.01,
                "cold_growth_intervals": 10, "size_shortfall": 0.05, "shrink_band_cap_misses": 0.01,
                "reference_interval_s": "auto", "fill_pending_shrink_from_s": 57.0, "cold_growth_reach": 2.0,
                "cold_growth_rebase": True, "cold_growth_heeds_optimum": True, "cold_growth_reach_from_s": 57.0,
                "payback_min_intervals": 3.0})
    assert run_with == MRCControlSettings()
    # trained and run with the growing curve window, which the recipe pins too
    assert shipped.env.mrc.half_life_growth == art.env_config.mrc.half_life_growth == 0.5
    follows = TrainConfig.model_validate({"experiment": "x", "total_timesteps": 1,
                                          "controllers": {"mrc": {"min_weight": 250, "hysteresis": 0.05}}})
    assert follows.env.mrc.anchor.min_weight == 250 and follows.env.mrc.anchor.hysteresis == 0.05
    env = CacheTuningEnv(follows.env)
    assert env.anchor_rule.min_weight == 250  # the env's rule is the config's
    own = TrainConfig.model_validate({"experiment": "x", "total_timesteps": 1, "controllers": {"mrc": {"min_weight": 250}},
                                      "env": {"mrc": {"anchor": {"min_weight": 700}}}})
    assert own.env.mrc.anchor.min_weight == 700


def test_defer_cold_runs_the_anchor_until_the_curves_are_first_ready() -> None:
    """``controllers.ppo.defer_cold``: while the env's anchor is in its cold phase the policy's action is replaced by
    the anchor's config (the config in force when there is none); from the first ready curves on, its own."""
    from cachetuner.control.settings import ControlSettings
    from cachetuner.env import CacheTuningEnv
    from cachetuner.evaluation.episode import context_from_env

    art = load_policy("default")
    cfg = art.env_config.model_copy(update={"workloads": art.env_config.workloads[:1], "episode_intervals": 40})
    settings = ControlSettings.model_validate({"ppo": {"defer_cold": True}})
    ctl = make_controller("ppo", settings, model=art)
    env = CacheTuningEnv(cfg)
    obs, info = env.reset(seed=0)
    ctl.reset(context_from_env(env, obs, info))
    cold, warm, done = 0, 0, False
    while not done:
        ctx = context_from_env(env, obs, info)
        was_cold, anchor = bool(info["anchor_cold"]), info["anchor"]
        chosen = ctl.decide(ctx)
        if was_cold:
            cold += 1
            assert chosen == (anchor if anchor is not None else ctx.config)
        else:
            warm += 1
            assert not cold or ctl.deferred == cold  # the phase ends for good: no deferral after it
        obs, _, term, trunc, info = env.step_config(chosen)
        done = bool(term or trunc)
    assert cold > 0 and warm > 0 and ctl.deferred == cold
    # the shipped policy turns it on (experiments/suite-audit-7.yaml's rule, 2026-12-04), so a controller built with
    # default settings (the daemon's, an A/B arm's) follows the artifact; an explicit setting wins; its recipe agrees
    assert art.ppo.defer_cold is True and make_controller("ppo", ControlSettings(), model=art).defer_cold is True
    off = ControlSettings.model_validate({"ppo": {"defer_cold": False}})
    assert make_controller("ppo", off, model=art).defer_cold is False
    from cachetuner.agent.config import TrainConfig
    from cachetuner.reports.evaluate import resolve_train_config

    assert resolve_train_config("default", None)[0].controllers.ppo.defer_cold is True
    assert TrainConfig.from_yaml("experiments/general.yaml").controllers.ppo.defer_cold is True


def test_defer_outside_runs_the_anchor_where_the_price_feature_left_the_training_range() -> None:
    """``controllers.ppo.defer_outside``: a decision whose price feature lies outside ``price_support`` runs the
    anchor's config, one inside runs the policy's; a support that holds every value changes nothing, and asking for
    the guard without a support is one line that names what is missing."""
    from cachetuner.control.settings import ControlSettings
    from cachetuner.env import CacheTuningEnv
    from cachetuner.evaluation.episode import context_from_env

    art = load_policy("default")
    cfg = art.env_config.model_copy(update={"workloads": art.env_config.workloads[:1], "episode_intervals": 30})

    def run(ppo: dict) -> tuple[list, int, int]:
        settings = ControlSettings.model_validate({"ppo": {"defer_cold": False, "defer_young": False, **ppo}})
        ctl = make_controller("ppo", settings, model=art)
        env = CacheTuningEnv(cfg)
        obs, info = env.reset(seed=0)
        ctl.reset(context_from_env(env, obs, info))
        chosen, outside, done = [], 0, False
        while not done:
            ctx = context_from_env(env, obs, info)
            feature = float(ctl.observation(ctx)[-1])
            lo, hi = ctl.price_support or (0.0, 1.0)
            cfg_ = ctl.decide(ctx)
            if ctl.defer_outside and not lo <= feature <= hi:
                outside += 1
                assert cfg_ == (info["anchor"] if info["anchor"] is not None else ctx.config)
            chosen.append(cfg_)
            obs, _, term, trunc, info = env.step_config(cfg_)
            done = bool(term or trunc)
        return chosen, outside, ctl.deferred_outside

    plain, _, _ = run({"defer_outside": False})
    wide, outside, deferred = run({"defer_outside": True, "price_support": (0.0, 1.0)})
    assert wide == plain and outside == deferred == 0
    narrow, outside, deferred = run({"defer_outside": True, "price_support": (0.999, 1.0)})
    assert outside == deferred == len(narrow) > 0  # every decision outside: the anchor's, all along
    # the shipped policy turns it on with its measured range (docs/agent.md, "Pre-registered: handing decisions outside
    # the training range to the anchor", adopted 2026-12-06), and a controller built with default settings follows it
    assert art.ppo.defer_outside is True and art.ppo.price_support == (0.0725, 0.8164)
    assert make_controller("ppo", ControlSettings(), model=art).defer_outside is True
    import dataclasses

    bare = dataclasses.replace(art, ppo=art.ppo.model_copy(update={"price_support": None}))
    with pytest.raises(ConfigError, match="defer_outside needs price_support"):
        make_controller("ppo", ControlSettings.model_validate({"ppo": {"defer_outside": True}}), model=bare)
    with pytest.raises(ValueError, match="needs 0 <= low <= high <= 1"):
        ControlSettings.model_validate({"ppo": {"price_support": [0.8, 0.2]}})


def test_price_load_anchor_prices_memory_at_the_anchors_load_through_a_lull() -> None:
    """``controllers.ppo.price_load``: ``interval`` divides the memory's cost by the interval's GETs (how the policy
    was trained), ``anchor`` by the larger of those and the anchor rule's load estimate (``info["anchor_load"]``,
    ``mrc``'s ``rate``), so an interval without reads does not make memory look dearer than ever."""
    import dataclasses

    from cachetuner.agent.features import PriceFeatures
    from cachetuner.control.learned import price_features, price_load
    from cachetuner.control.settings import ControlSettings
    from cachetuner.env import CacheTuningEnv
    from cachetuner.evaluation.episode import context_from_env

    assert price_load("interval", 0, {"anchor_load": 500.0}) == 0.0
    assert price_load("anchor", 0, {"anchor_load": 500.0}) == 500.0
    assert price_load("anchor", 800, {"anchor_load": 500.0}) == 800.0  # a rise is followed at once
    assert price_load("anchor", 7, {}) == price_load("anchor", 7, {"anchor_load": None}) == 7.0  # no curves: the interval's

    art = load_policy("default")
    cfg = art.env_config.model_copy(update={"workloads": art.env_config.workloads[:1], "episode_intervals": 30})
    env = CacheTuningEnv(cfg)
    obs, info = env.reset(seed=0)
    for _ in range(20):
        obs, _, _, _, info = env.step_config(info["config"])
    load = info["anchor_load"]
    assert load == env._decider.rate and load > 100  # the anchor's estimate, after 20 intervals of steady reads
    ctx = context_from_env(env, obs, info)
    lull = dataclasses.replace(ctx, snapshot=dataclasses.replace(ctx.snapshot, gets=0))
    by_interval = make_controller("ppo", ControlSettings.model_validate({"ppo": {"price_load": "interval"}}), model=art)
    by_anchor = make_controller("ppo", ControlSettings.model_validate({"ppo": {"price_load": "anchor"}}), model=art)
    mem = float(ctx.prices.memory_cost(ctx.snapshot.maxmemory))
    assert by_interval.observation(lull)[-1] == pytest.approx(price_features(mem, ctx.prices.miss, 1)[0])
    assert by_anchor.observation(lull)[-1] == pytest.approx(price_features(mem, ctx.prices.miss, load)[0])
    assert by_anchor.observation(lull)[-1] < by_interval.observation(lull)[-1] - 0.1  # memory looks cheaper per GET
    # with reads, the two modes differ only where the interval's GETs fall below the estimate
    assert by_anchor.observation(ctx)[-1] <= by_interval.observation(ctx)[-1]
    # training computes the same feature (agent.features.PriceFeatures, passed the setting by make_env)
    wrapped = PriceFeatures(CacheTuningEnv(cfg), "anchor")
    o, i = wrapped.reset(seed=0)
    for _ in range(20):
        o, _, _, _, i = wrapped.step(0)  # mrc-offset's 0: keep the config in force
    held = i["snapshot"].maxmemory
    want = price_features(float(wrapped.unwrapped.prices.memory_cost(held)), wrapped.unwrapped.prices.miss,
                          max(float(i["snapshot"].gets), i["anchor_load"]))
    assert o[-1] == pytest.approx(want[0])
    # the shipped policy evaluates with `anchor` (adopted 2026-12-05 by the rule in docs/agent.md), so a controller
    # built with default settings (the daemon's, an A/B arm's) follows the artifact; its recipe pins how it was
    # trained, `interval`; an explicit setting wins
    from cachetuner.agent.config import TrainConfig

    assert art.ppo.price_load == "anchor" and by_interval.price_load == "interval"
    assert make_controller("ppo", ControlSettings(), model=art).price_load == "anchor"
    assert TrainConfig.from_yaml("experiments/general.yaml").controllers.ppo.price_load == "interval"


def test_suite_end_to_end(tmp_path: Path, mlflow_store, capfd) -> None:
    from cachetuner.reports.suite import run_suite

    exp = tmp_path / "exp.yaml"
    exp.write_text(yaml.safe_dump({"experiment": "suite-test", "total_timesteps": 1, "env": TINY_ENV,
                                   "controllers": {"grid": {"n_sizes": 3, "timeouts": [0]}}}))
    suite = tmp_path / "suite.yaml"
    suite.write_text(yaml.safe_dump({
        "name": "tiny", "model": None, "config": str(exp),
        "controllers": ["mrc", "static-default", "best-static"],
        # 16k requests (8 intervals of 10 s): a tiny workload, as for the Ray suite test; the whole
        # default synthetic trace (1M requests, 500 intervals) took a minute and checked nothing more
        "traces": [{"trace": "synthetic:zipf", "name": "zipf", "size_model": None, "rate": 200, "limit": 16000}],
        # a preset name, and a regime spelled out: the budget regime needs its cap
        "prices": ["scaled", {"name": "budget-5MB", "preset": "budget", "budget_bytes": 5_000_000}], "seeds": [0],
    }))
    uri = mlflow_store(tmp_path)
    res = run_suite(suite, tracking_uri=uri)
    assert len(res["cells"]) == 2
    # stderr is not a terminal here (a log file, CI): a line per finished cell instead of the live bar
    err = capfd.readouterr().err
    assert "suite 1/2: zipf / scaled / seed 0" in err and "suite 2/2: zipf / budget-5MB / seed 0" in err
    budget = next(c for c in res["cells"] if c["prices"] == "budget-5MB")
    for name, row in budget["tuners"].items():
        assert 0 < row["mean_maxmemory_bytes"] <= 5_000_000, name
    s = res["summary"]
    assert s["best-static"]["regret"]["mean"] == pytest.approx(0.0)
    assert s["static-default"]["savings_vs_default"]["mean"] == pytest.approx(0.0)
    assert s["best-static"]["hindsight"] and not s["mrc"]["hindsight"]
    for c in res["cells"]:
        assert c["currency"] == "USD" and c["best_hindsight"]["tuner"] == "best-static"
    # the paired comparisons against static-default and mrc: every online controller (best-static is hindsight),
    # each pair once, over both cells
    assert set(res["paired"]) == {"mrc vs static-default"}
    pair = res["paired"]["mrc vs static-default"]
    assert pair["cells"] == 2 and pair["cheaper"] + pair["dearer"] + pair["same"] == 2
    assert pair["mean_regret_diff"] == pytest.approx(s["mrc"]["regret"]["mean"] - s["static-default"]["regret"]["mean"])
    import mlflow

    mlflow.set_tracking_uri(uri)
    runs = mlflow.search_runs(search_all_experiments=True)
    assert len(runs) == 3  # the parent and one child per cell
    parent = runs[runs["tags.kind"] == "suite"].iloc[0]
    assert parent["metrics.paired.mrc_vs_static-default.mean_regret_diff"] == pytest.approx(pair["mean_regret_diff"])
    plots = {f.path for f in mlflow.MlflowClient().list_artifacts(parent["run_id"], "plots")}
    assert plots == {"plots/suite_regret.png", "plots/suite_paired.png"}


def test_a_suite_with_history_replays_the_rest_and_sizes_recommended_on_the_past(tmp_path: Path, mlflow_store) -> None:
    """``history: 0.5``: every controller runs on the second half only, and ``recommended`` holds what
    ``cachetuner recommend`` computes on the first half at the cell's prices; listing it without history, or
    building it without a config, is one line naming what is missing."""
    from cachetuner.env.prices import PricesConfig
    from cachetuner.mrc.recommend import recommend
    from cachetuner.reports.suite import run_suite
    from cachetuner.traces import read_trace

    exp = tmp_path / "exp.yaml"
    exp.write_text(yaml.safe_dump({"experiment": "suite-test", "total_timesteps": 1, "env": TINY_ENV,
                                   "controllers": {"grid": {"n_sizes": 3, "timeouts": [0]}}}))
    doc = {"name": "tiny", "model": None, "config": str(exp), "history": 0.5,
           "controllers": ["mrc", "mrc-history", "recommended", "static-default", "best-static"],
           "traces": [{"trace": "synthetic:zipf", "name": "zipf", "size_model": None, "rate": 200, "limit": 32000}],
           "prices": ["scaled", {"name": "budget-half", "preset": "budget", "budget_fraction": 0.5}], "seeds": [0]}
    suite = tmp_path / "suite.yaml"
    suite.write_text(yaml.safe_dump(doc))
    res = run_suite(suite, tracking_uri=mlflow_store(tmp_path))
    cell, budget = res["cells"]
    assert budget["prices"] == "budget-half"
    assert budget["tuners"]["recommended"]["config_changes"] == 1  # its one move away from the initial config
    assert cell["history"] == {"share": 0.5, "requests": 16000}
    trace = read_trace("synthetic:zipf", rate=200, limit=32000)
    mem, miss = PricesConfig(preset="scaled").resolve()
    past = recommend(trace.slice(0, 16000), memory_per_gib_hour=mem, per_miss=miss, verify=False)
    row = cell["tuners"]["recommended"]
    assert row["config_changes"] == 1  # the move to the recommended config, then held
    assert row["mean_maxmemory_bytes"] == pytest.approx(min(max(past.maxmemory, 1_500_000), 9_000_000))
    # the episode is the second half: 16,000 requests at 200 req/s, 8 intervals of 10 s
    assert cell["tuners"]["static-default"]["intervals"] == 8
    assert cell["tuners"]["mrc-history"]["intervals"] == 8
    doc.pop("history")
    suite.write_text(yaml.safe_dump(doc))
    with pytest.raises(ConfigError, match="controller 'recommended' needs `history:`"):
        run_suite(suite, tracking_uri=f"sqlite:///{tmp_path}/other.db")
    doc["controllers"].remove("recommended")
    suite.write_text(yaml.safe_dump(doc))
    with pytest.raises(ConfigError, match="controller 'mrc-history' needs `history:`"):
        run_suite(suite, tracking_uri=f"sqlite:///{tmp_path}/other.db")
    with pytest.raises(ConfigError, match="needs history"):
        make_controller("recommended")
    from cachetuner.env import WorkloadSpec
    from cachetuner.env.sim_backend import load_workload

    assert len(load_workload(WorkloadSpec(trace="synthetic:zipf", rate=200, limit=300, skip=100))) == 200
    with pytest.raises(ConfigError, match="skip 300 leaves nothing of its 300 requests"):
        load_workload(WorkloadSpec(trace="synthetic:zipf", rate=200, limit=300, skip=300))


def test_under_a_budget_the_operator_with_history_has_the_cells_cap(tmp_path: Path, mlflow_store) -> None:
    """A budget is memory in bytes that every controller of a cell shares: ``recommended`` is sized under the cap the
    replayed part gets (a share of *its* working set), not a share of the past's. Here the past reads 300 keys and
    the replayed half 3,000, so a share of the past's working set would be a tenth of the cap, and so would the past's
    whole working set (recommend's upper bound without a budget); memory is free below the cap and every key is
    reused, so the whole cap is worth holding, as best-static finds."""
    import numpy as np

    path = tmp_path / "grows.trace"
    rng = np.random.default_rng(0)
    np.savetxt(path, np.concatenate([rng.integers(0, 300, 16000), rng.integers(0, 3000, 16000)]), fmt="%d")
    exp = tmp_path / "exp.yaml"
    env = {**TINY_ENV, "bounds": {"min_fraction": 0.02, "max_fraction": 1.0, "initial_fraction": 0.1}}
    exp.write_text(yaml.safe_dump({"experiment": "suite-test", "total_timesteps": 1, "env": env,
                                   "controllers": {"grid": {"n_sizes": 3, "timeouts": [0]}}}))
    suite = tmp_path / "suite.yaml"
    suite.write_text(yaml.safe_dump({
        "name": "tiny", "model": None, "config": str(exp), "history": 0.5,
        "controllers": ["recommended", "static-default", "best-static"],
        "traces": [{"trace": str(path), "name": "grows", "format": "lirs", "size_model": "fixed:4096", "rate": 200}],
        "prices": [{"name": "budget-half", "preset": "budget", "budget_fraction": 0.5}], "seeds": [0]}))
    (cell,) = run_suite_here(suite, mlflow_store(tmp_path))
    from cachetuner.env import WorkloadSpec
    from cachetuner.env.sim_backend import load_workload
    from cachetuner.sim.params import SimParams
    from cachetuner.sim.sizing import full_size

    replayed = load_workload(WorkloadSpec(trace=str(path), format="lirs", size_model="fixed:4096", rate=200, skip=16000))
    cap = int(0.5 * full_size(replayed, SimParams()))
    assert cell["tuners"]["best-static"]["mean_maxmemory_bytes"] == cap
    assert cell["tuners"]["recommended"]["mean_maxmemory_bytes"] == cap


def run_suite_here(suite: Path, uri: str) -> list[dict]:
    from cachetuner.reports.suite import run_suite

    return run_suite(suite, tracking_uri=uri)["cells"]


def test_suite_needs_a_model_or_a_config(tmp_path: Path) -> None:
    from cachetuner.reports.suite import run_suite

    suite = tmp_path / "suite.yaml"
    suite.write_text(yaml.safe_dump({"model": None, "traces": [{"trace": "synthetic:zipf"}]}))
    with pytest.raises(ConfigError, match="config"):
        run_suite(suite, tracking_uri=f"sqlite:///{tmp_path}/mlflow.db")
    # a model lends its training config even when `ppo` is not among the controllers
    suite.write_text(yaml.safe_dump({"model": "default", "controllers": ["mrc", "static-default"], "intervals": 3,
                                     "traces": [{"trace": "synthetic:zipf", "params": {"n_requests": 20000, "n_keys": 2000}}]}))
    (cell,) = run_suite(suite, tracking_uri=f"sqlite:///{tmp_path}/mlflow.db")["cells"]
    assert set(cell["tuners"]) == {"mrc", "static-default"} and cell["tuners"]["mrc"]["intervals"] == 3


def test_a_recurrent_policy_trains_loads_and_decides(tmp_path: Path, mlflow_store) -> None:
    """``ppo.policy: lstm`` (sb3-contrib RecurrentPPO): the artifact records it and the controller keeps
    the LSTM state across decisions."""
    from cachetuner.agent.config import TrainConfig
    from cachetuner.agent.train import train

    cfg = TrainConfig(experiment="lstm", total_timesteps=64, n_envs=1, env=TINY_ENV, eval={"enabled": False},
                      ppo={"n_steps": 32, "batch_size": 32, "n_epochs": 1, "policy": "lstm"}, output_dir=tmp_path)
    res = train(cfg, tracking_uri=mlflow_store(tmp_path))
    art = load_policy(res.model_path)
    assert art.recurrent
    rep = evaluate_controllers(art.env_config, {"ppo": make_controller("ppo", model=art)}, seed=0)
    assert rep.results["ppo"].summary["intervals"] > 0


@pytest.mark.parametrize("name", sorted(p.name for p in (Path(__file__).resolve().parents[2] / "experiments").glob("suite*.yaml")))
def test_every_shipped_suite_loads_with_distinct_price_regimes(name: str) -> None:
    from cachetuner.reports.suite import SuiteConfig, price_label
    from cachetuner.yamlconfig import load_model

    path = Path(__file__).resolve().parents[2] / "experiments" / name
    loaded = load_model(SuiteConfig, path)
    for full in (False, True) if loaded.full is not None else (False,):  # --full needs a full: section
        suite = loaded.resolved(full)
        labels = [price_label(p) for p in suite.prices]
        assert suite.traces and len(set(labels)) == len(labels)


def test_a_suite_refuses_a_budget_without_its_cap(tmp_path: Path) -> None:
    from cachetuner.reports.suite import SuiteConfig
    from cachetuner.yamlconfig import load_model

    bad = tmp_path / "suite.yaml"
    bad.write_text(yaml.safe_dump({"traces": [{"trace": "synthetic:zipf"}], "prices": ["scaled", "budget"]}))
    with pytest.raises(ConfigError, match="suite.yaml.*budget.*cap"):
        load_model(SuiteConfig, bad)


def _timed_sized_csv(tmp_path: Path) -> tuple[Path, dict]:
    """``t.csv``: 60 s of Zipf requests with timestamps and sizes, in a layout only ``format: csv`` reads; returns a
    tiny experiment YAML for the suite's ``config:`` and the csv reader's params."""
    keys = np.random.default_rng(0).zipf(1.3, 12_000) % 800
    (tmp_path / "t.csv").write_text("ts;obj;bytes\n" + "".join(f"{i / 200:.3f};k{k};{500 + k}\n" for i, k in enumerate(keys)))
    exp = tmp_path / "exp.yaml"
    exp.write_text(yaml.safe_dump({"experiment": "suite-csv", "total_timesteps": 1, "env": TINY_ENV,
                                   "controllers": {"grid": {"n_sizes": 3, "timeouts": [0]}}}))
    return exp, {"header": True, "delimiter": ";", "key": "obj", "time": "ts", "size": "bytes"}


def test_a_suite_trace_takes_reader_params(tmp_path: Path, mlflow_store) -> None:
    """A held-out trace in no known layout (``format: csv``) is configured in the suite with its reader params, as
    ``evaluate --trace --params`` does; a bad param is one line naming it."""
    from cachetuner.errors import ConfigError
    from cachetuner.reports.suite import run_suite

    exp, cols = _timed_sized_csv(tmp_path)
    suite = tmp_path / "suite.yaml"

    def write(params: dict) -> None:
        suite.write_text(yaml.safe_dump({
            "name": "csv", "model": None, "config": str(exp), "controllers": ["mrc", "static-default"],
            "traces": [{"trace": str(tmp_path / "t.csv"), "name": "csv", "format": "csv", "size_model": None,
                        "rate": None, "params": params}],
            "prices": ["scaled"], "seeds": [0]}))

    write(cols)
    (cell,) = run_suite(suite, tracking_uri=mlflow_store(tmp_path))["cells"]
    assert cell["tuners"]["mrc"]["intervals"] == 5  # the csv's 60 s of timestamps: 6 intervals of 10 s, 1 of warm-up
    write({**cols, "kye": "obj"})
    with pytest.raises(ConfigError, match=r"t\.csv: param 'kye': unknown parameter \(valid params: key, "):
        run_suite(suite, tracking_uri=f"sqlite:///{tmp_path}/other.db")


def test_a_suite_says_when_its_defaults_replaced_a_traces_own_sizes_or_clock(tmp_path: Path, mlflow_store) -> None:
    """A suite entry's defaults (4 KiB values, 100 req/s) replace a trace's own sizes and timestamps: that is the
    suites' convention, never silent. The cell records it and the result carries one note per trace naming the
    entry's fields that keep the trace as recorded; an entry that keeps both gets no note."""
    from cachetuner.reports.suite import run_suite

    exp, cols = _timed_sized_csv(tmp_path)
    entry = {"trace": str(tmp_path / "t.csv"), "format": "csv", "params": cols}
    suite = tmp_path / "suite.yaml"
    suite.write_text(yaml.safe_dump({
        "name": "notes", "model": None, "config": str(exp), "controllers": ["mrc", "static-default"],
        "traces": [{**entry, "name": "as-recorded", "size_model": None, "rate": None}, {**entry, "name": "defaults"},
                   {**entry, "name": "own-sizes", "size_model": None}],
        "prices": ["scaled"], "seeds": [0]}))
    res = run_suite(suite, tracking_uri=mlflow_store(tmp_path))
    replaced = {c["trace"]: c["replaced"] for c in res["cells"]}
    assert replaced == {"as-recorded": [], "defaults": ["sizes (with fixed:4096)", "timestamps (re-timed uniformly at 100 req/s)"],
                        "own-sizes": ["timestamps (re-timed uniformly at 100 req/s)"]}
    assert len(res["notes"]) == 2
    assert res["notes"][0].startswith("defaults: replaced the trace's own sizes") and "size_model: null and rate: null" in res["notes"][0]
    assert res["notes"][1].startswith("own-sizes:") and res["notes"][1].endswith("set rate: null in its suite entry")


def test_a_suite_finds_its_files_beside_it_and_names_a_missing_one(tmp_path: Path, mlflow_store,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Paths in a suite are read as on the command line (from the working directory: the shipped suites say
    ``../shared/...``) or, failing that, relative to the suite file, so a suite kept beside its traces runs from
    anywhere; a file in neither place stops the suite before its first cell, in one line naming the entry."""
    from cachetuner.errors import ConfigError
    from cachetuner.reports.suite import SuiteConfig, run_suite
    from cachetuner.yamlconfig import load_model

    home = tmp_path / "study"
    (home / "traces").mkdir(parents=True)
    keys = np.random.default_rng(0).zipf(1.3, 12_000) % 800
    (home / "traces" / "t.lirs").write_text("".join(f"{k}\n" for k in keys))
    (home / "exp.yaml").write_text(yaml.safe_dump({"experiment": "suite-beside", "total_timesteps": 1, "env": TINY_ENV,
                                                   "controllers": {"grid": {"n_sizes": 3, "timeouts": [0]}}}))
    suite = home / "suite.yaml"
    entry = {"trace": "traces/t.lirs", "format": "lirs", "size_model": None, "rate": 200}
    suite.write_text(yaml.safe_dump({"name": "beside", "model": None, "config": "exp.yaml",
                                     "controllers": ["mrc", "static-default"], "traces": [entry],
                                     "prices": ["scaled"], "seeds": [0]}))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    located = load_model(SuiteConfig, suite).located(suite)
    assert located.traces[0].trace == str(home / "traces" / "t.lirs") and located.config == str(home / "exp.yaml")
    assert located.traces[0].label == "t.lirs"  # the cells' name does not change with where the file was found
    (cell,) = run_suite(suite, tracking_uri=mlflow_store(tmp_path))["cells"]
    assert cell["trace"] == "t.lirs" and cell["tuners"]["mrc"]["intervals"] > 0
    # as written from the working directory still wins (and an absolute path is used as it is)
    monkeypatch.chdir(home)
    assert load_model(SuiteConfig, suite).located(suite).traces[0].trace == "traces/t.lirs"
    monkeypatch.chdir(elsewhere)
    suite.write_text(yaml.safe_dump({"model": None, "config": "exp.yaml", "traces": [entry, {**entry, "trace": "traces/gone.lirs"}]}))
    with pytest.raises(ConfigError) as e:
        run_suite(suite, tracking_uri=f"sqlite:///{tmp_path}/other.db")
    assert str(e.value) == (f"{suite}: traces[1].trace: 'traces/gone.lirs': no such file (looked in {elsewhere} and "
                            f"{home})")


def test_a_suite_can_redraw_the_key_sample_with_each_seed(tmp_path: Path, mlflow_store) -> None:
    """``redraw_keys: true``: a cell of seed s replays its trace with the key ids relabelled by draw s, so the curves'
    fixed hash samples other keys while the traffic stays the same (every request, its order and size; a history's
    skipped part is a slice of the relabelled whole). Off (the default), every seed replays the trace's own ids."""
    from cachetuner.env import WorkloadSpec
    from cachetuner.env.sim_backend import load_workload

    exp = tmp_path / "exp.yaml"
    exp.write_text(yaml.safe_dump({"experiment": "suite-test", "total_timesteps": 1, "env": TINY_ENV}))
    suite = tmp_path / "suite.yaml"
    spec = {"trace": "synthetic:zipf", "name": "zipf", "rate": 200, "params": {"n_requests": 12000, "n_keys": 1500}}
    body = {"name": "draws", "model": None, "config": str(exp), "controllers": ["mrc", "static-default"],
            "traces": [spec], "prices": ["scaled"], "seeds": [0, 2]}
    suite.write_text(yaml.safe_dump({**body, "redraw_keys": True}))
    cells = run_suite_here(suite, mlflow_store(tmp_path))
    assert [(c["seed"], c.get("key_draw")) for c in cells] == [(0, None), (2, 2)]
    suite.write_text(yaml.safe_dump(body))
    assert all("key_draw" not in c for c in run_suite_here(suite, f"sqlite:///{tmp_path}/other.db"))
    from cachetuner.reports.suite import run_suite

    on = run_suite(suite, tracking_uri=f"sqlite:///{tmp_path}/other.db", redraw_keys=True)  # `evaluate --redraw-keys`
    assert on["redraw_keys"] is True and [c.get("key_draw") for c in on["cells"]] == [None, 2]
    assert [c["tuners"]["mrc"]["cost"] for c in on["cells"]] == [c["tuners"]["mrc"]["cost"] for c in cells]  # = the file's

    wl = {k: v for k, v in spec.items() if k != "name"}
    own, drawn = load_workload(WorkloadSpec(**wl)), load_workload(WorkloadSpec(**wl, key_draw=2))
    assert drawn.meta["key_draw"] == 2 and not np.array_equal(own.keys, drawn.keys)
    np.testing.assert_array_equal(np.sort(np.bincount(own.keys)), np.sort(np.bincount(drawn.keys)))
    np.testing.assert_array_equal(own.sizes, drawn.sizes)
    view = load_workload(WorkloadSpec(**wl, key_draw=2, skip=5000))
    np.testing.assert_array_equal(view.keys, drawn.keys[5000:])


def test_defer_young_runs_the_anchor_while_its_cold_growth_may_act() -> None:
    """``controllers.ppo.defer_young``: besides the cold phase, the policy hands its decisions to the anchor while the
    anchor's cold growth may still act (within its ``cold_growth_intervals`` of the start); after that, its own. Off,
    nothing past the cold phase is handed over; the env's anchor without the extension is never young past cold."""
    from cachetuner.control.settings import ControlSettings
    from cachetuner.env import CacheTuningEnv
    from cachetuner.evaluation.episode import context_from_env

    art = load_policy("default")
    cfg = art.env_config.model_copy(update={"workloads": art.env_config.workloads[:1], "episode_intervals": 30})
    assert cfg.mrc is not None and cfg.mrc.anchor.cold_growth_intervals == 10  # the evaluation anchor's extension

    def run(young: bool, env_cfg: Any = cfg) -> tuple[int, int, int, list[bool]]:
        settings = ControlSettings.model_validate({"ppo": {"defer_cold": True, "defer_young": young,
                                                           "defer_outside": False}})
        ctl = make_controller("ppo", settings, model=art)
        env = CacheTuningEnv(env_cfg)
        obs, info = env.reset(seed=0)
        ctl.reset(context_from_env(env, obs, info))
        flags, done = [], False
        while not done:
            ctx = context_from_env(env, obs, info)
            chosen = ctl.decide(ctx)
            if info["anchor_young"] and young:
                assert chosen == (info["anchor"] if info["anchor"] is not None else ctx.config)
            flags.append(bool(info["anchor_young"]) and not info["anchor_cold"])
            obs, _, term, trunc, info = env.step_config(chosen)
            done = bool(term or trunc)
        return ctl.deferred, ctl.deferred_young, sum(flags), flags

    cold, young, n_young, flags = run(True)
    assert young == n_young > 0 and cold > 0  # past the cold phase, up to the tenth interval
    assert flags.index(True) >= 1 and not any(flags[10:])  # the window ends with the anchor's tenth decision
    assert run(False)[1] == 0
    plain = cfg.model_copy(update={"mrc": cfg.mrc.model_copy(update={
        "anchor": cfg.mrc.anchor.model_copy(update={"cold_growth_intervals": None})})})
    assert run(True, plain)[2] == 0  # without the extension the anchor is young only while cold
    # the shipped artifact turns it on (adopted 2026-12-06 by the rule of audits 33-35 and window audits 27-29), so a
    # controller built with default settings follows it; an explicit setting wins
    assert art.ppo.defer_young is True and make_controller("ppo", ControlSettings(), model=art).defer_young is True
