"""Each controller on tiny workloads whose right answer is known, plus the registry contract."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from cachetuner.config import RedisConfig
from cachetuner.control import (
    Controller,
    ControlSettings,
    build_controllers,
    controller_names,
    make_controller,
)
from cachetuner.env import CacheTuningEnv, EnvConfig, WorkloadSpec
from cachetuner.errors import ConfigError
from cachetuner.evaluation import evaluate_controllers, gap_closed, summarise

BASELINES = ["static-default", "best-static", "dp-hindsight", "oracle", "mrc", "hill-climb", "optuna"]


def _env_cfg(workload: WorkloadSpec, bounds: dict, memory_price: float) -> EnvConfig:
    # Every reward field pinned: the expected answers depend on the memory / miss price ratio.
    return EnvConfig(
        workloads=[workload],
        interval_s=10,
        episode_intervals=None,
        warmup_intervals=1,
        bounds=bounds,
        actions={"policies": ["allkeys-lru", "allkeys-lfu"], "timeouts": [0]},
        whatif={"sizes": [0.7, 1.3], "policies": ["allkeys-lru", "allkeys-lfu"]},
        reward={"miss_cost": 0.0002, "memory_cost_per_gb_hour": memory_price, "slo_penalty": 0.0, "switch_cost": 0.0},
    )


@pytest.fixture(scope="module")
def scan_report():
    """Zipf traffic polluted by scans of cold keys as long as the Zipf bursts: LRU lets every scan flush
    the hot set, LFU keeps it, so LFU must win at every size."""
    wl = WorkloadSpec(
        trace="synthetic:scan",
        rate=200,
        params={"n_requests": 24000, "n_keys": 2000, "alpha": 0.9, "scan_every": 2000, "scan_length": 2000,
                "cold_keys": 50000, "sizes": "fixed:4096"},
    )
    cfg = _env_cfg(wl, {"min_bytes": 2_000_000, "max_bytes": 12_000_000, "initial_bytes": 6_000_000}, 5.0)
    settings = ControlSettings(grid={"n_sizes": 3}, oracle={"horizon": 3})
    return evaluate_controllers(cfg, build_controllers(BASELINES, settings, seed=0), seed=0)


@pytest.fixture(scope="module")
def shrink_report(tmp_path_factory):
    """The working set shrinks tenfold after a quarter (3000 keys, then 300) and memory is expensive:
    after the shift, less memory must win."""
    path = Path(tmp_path_factory.mktemp("shrink")) / "shrink.trace"
    rng = np.random.default_rng(0)
    np.savetxt(path, np.concatenate([rng.integers(0, 3000, 15000), rng.integers(0, 300, 45000)]), fmt="%d")
    wl = WorkloadSpec(trace=str(path), format="lirs", size_model="fixed:4096", rate=200)
    cfg = _env_cfg(wl, {"min_fraction": 0.02, "max_fraction": 1.0, "initial_fraction": 0.5}, 1000.0)
    return evaluate_controllers(cfg, build_controllers(BASELINES, ControlSettings(grid={"n_sizes": 6}), seed=0), seed=0)


def _policies(report, name: str) -> Counter:
    return Counter(r.policy for r in report.results[name].records)


def test_scan_best_static_picks_lfu(scan_report) -> None:
    assert set(_policies(scan_report, "best-static")) == {"allkeys-lfu"}
    assert scan_report.results["best-static"].summary["cost"] < scan_report.results["static-default"].summary["cost"]


def test_scan_oracle_and_hill_climb_prefer_lfu(scan_report) -> None:
    for name in ("oracle", "hill-climb"):
        pols = _policies(scan_report, name)
        assert pols["allkeys-lfu"] > pols["allkeys-lru"], (name, pols)
        assert scan_report.results[name].summary["hit_ratio"] > scan_report.results["static-default"].summary["hit_ratio"]


def test_scan_oracle_with_lookahead_beats_best_static(scan_report) -> None:
    s = {k: r.summary for k, r in scan_report.results.items()}
    assert s["oracle"]["cost"] <= s["best-static"]["cost"]


@pytest.mark.parametrize("workload", ["scan", "shrink"])
def test_oracle_to_the_episode_end_never_loses_to_best_static(workload, scan_report, shrink_report) -> None:
    """With ``horizon=None`` best-static's config is always a candidate held to the end, so the oracle's
    episode cost is at most best-static's (same grid, same state, same RNG)."""
    report = scan_report if workload == "scan" else shrink_report
    env_cfg, grid_sizes = report.env_cfg, (3 if workload == "scan" else 6)
    settings = ControlSettings(grid={"n_sizes": grid_sizes}, oracle={"horizon": None, "replan_every": 4})
    rep = evaluate_controllers(env_cfg, build_controllers(["oracle", "best-static"], settings), seed=0)
    assert rep.results["oracle"].summary["cost"] <= rep.results["best-static"].summary["cost"] + 1e-9


def test_static_default_never_changes(scan_report) -> None:
    recs = scan_report.results["static-default"].records
    assert {(r.maxmemory, r.policy) for r in recs} == {(6_000_000, "allkeys-lru")}
    assert scan_report.results["static-default"].summary["config_changes"] == 0


def _before_after(recs: list) -> tuple[float, float]:
    """Mean maxmemory before the shift and over the last third (the curves' window has moved on)."""
    q = len(recs) // 4
    return np.mean([r.maxmemory for r in recs[:q]]), np.mean([r.maxmemory for r in recs[-len(recs) // 3 :]])


def test_shrink_oracle_and_hill_climb_release_memory(shrink_report) -> None:
    for name in ("oracle", "hill-climb"):
        before, after = _before_after(shrink_report.results[name].records)
        assert after < 0.75 * before, (name, before, after)
        assert shrink_report.results[name].summary["cost"] < shrink_report.results["static-default"].summary["cost"]


def test_shrink_oracle_beats_best_static(shrink_report) -> None:
    s = {k: r.summary for k, r in shrink_report.results.items()}
    assert s["oracle"]["cost"] < s["best-static"]["cost"] < s["static-default"]["cost"]


def test_optuna_stays_inside_the_action_space(shrink_report) -> None:
    recs = shrink_report.results["optuna"].records
    assert len({r.maxmemory for r in recs}) > 3  # it explores
    assert {r.policy for r in recs} <= {"allkeys-lru", "allkeys-lfu"}
    assert {r.timeout for r in recs} == {0}


def test_every_tuner_sees_the_same_traffic(shrink_report) -> None:
    gets = {k: [r.gets for r in res.records] for k, res in shrink_report.results.items()}
    first = next(iter(gets.values()))
    assert all(g == first for g in gets.values())


def test_registry_rejects_unknown_names_listing_valid_ones() -> None:
    with pytest.raises(ConfigError) as e:
        make_controller("genetic")
    for name in ("static-default", "best-static", "oracle", "mrc", "hill-climb", "optuna", "ppo"):
        assert name in str(e.value)
    assert set(BASELINES) | {"ppo"} <= set(controller_names())


def test_controllers_implement_the_protocol() -> None:
    for name in BASELINES:
        assert isinstance(make_controller(name), Controller)


def test_ppo_controller_needs_a_model(tmp_path) -> None:
    with pytest.raises(ConfigError, match="--model"):
        make_controller("ppo")
    with pytest.raises(ConfigError, match="not found"):
        make_controller("ppo", model=tmp_path / "missing.zip")


def test_dp_hindsight_never_costlier_than_best_static(scan_report, shrink_report) -> None:
    for rep in (scan_report, shrink_report):
        s = {k: r.summary for k, r in rep.results.items()}
        assert s["dp-hindsight"]["cost"] <= s["best-static"]["cost"] + 1e-9


def test_relative_figures(shrink_report) -> None:
    s = {k: r.summary for k, r in shrink_report.results.items()}
    hind = [k for k, r in shrink_report.results.items() if r.hindsight]
    assert set(hind) == {"best-static", "dp-hindsight", "oracle"}
    best = min(s[k]["cost"] for k in hind)
    for v in s.values():
        assert v["regret"] == pytest.approx(v["cost"] / best - 1)
        assert v["savings_vs_default"] == pytest.approx(1 - v["cost"] / s["static-default"]["cost"])
    assert min(s[k]["regret"] for k in hind) == pytest.approx(0.0)


def test_regret_from_first_decision(shrink_report) -> None:
    """``regret_from_first_decision`` prices the first interval (run on a decision made from the warm-up intervals
    alone) at the best hindsight reference's own first interval (run on the config it chose on the whole trace)."""
    res = shrink_report.results
    s = {k: r.summary for k, r in res.items()}
    first = {k: r.records[0].cost["total"] for k, r in res.items()}
    assert all(s[k]["cost"] == pytest.approx(sum(x.cost["total"] for x in r.records)) for k, r in res.items())
    best = min((k for k, r in res.items() if r.hindsight), key=lambda k: s[k]["cost"])
    for k, v in s.items():
        assert v["first_interval_cost"] == pytest.approx(first[k])
        assert v["regret_from_first_decision"] == pytest.approx(
            (v["cost"] - first[k] + first[best]) / s[best]["cost"] - 1)
    assert s[best]["regret_from_first_decision"] == pytest.approx(0.0)
    # the shrink workload's initial config is too large, so its first interval costs more than the reference's
    assert s["static-default"]["regret_from_first_decision"] < s["static-default"]["regret"]


def test_mrc_releases_memory_after_the_shift(shrink_report) -> None:
    """mrc follows the shift once its curves' window has moved on (half-life in sampled GETs): slower than
    the hindsight references, which is the price of a curve that does not jump on noise."""
    recs = shrink_report.results["mrc"].records
    assert recs[-1].maxmemory < 0.5 * max(r.maxmemory for r in recs)


def test_scan_mrc_switches_to_lfu_and_beats_static_default() -> None:
    """The scan workload again, long enough for mrc's evidence threshold (min_weight sampled GETs)."""
    wl = WorkloadSpec(
        trace="synthetic:scan",
        rate=200,
        params={"n_requests": 100000, "n_keys": 2000, "alpha": 0.9, "scan_every": 2000, "scan_length": 2000,
                "cold_keys": 50000, "sizes": "fixed:4096"},
    )
    cfg = _env_cfg(wl, {"min_bytes": 2_000_000, "max_bytes": 12_000_000, "initial_bytes": 6_000_000}, 5.0)
    rep = evaluate_controllers(cfg, build_controllers(["mrc", "static-default"]), seed=0)
    recs = rep.results["mrc"].records
    assert recs[-1].policy == "allkeys-lfu"
    assert Counter(r.policy for r in recs[len(recs) // 2 :])["allkeys-lfu"] == len(recs) - len(recs) // 2
    assert rep.results["mrc"].summary["cost"] < rep.results["static-default"].summary["cost"]


def test_step_config_clips_baseline_configs_to_the_bounds() -> None:
    cfg = _env_cfg(WorkloadSpec(trace="synthetic:zipf", rate=200, params={"n_requests": 6000, "n_keys": 500}),
                   {"min_bytes": 1_000_000, "max_bytes": 4_000_000, "initial_bytes": 2_000_000}, 10.0)
    env = CacheTuningEnv(cfg)
    env.reset(seed=0, options={"workload": 0, "start": "begin"})
    _, _, _, _, info = env.step_config(RedisConfig(maxmemory=10**12))
    assert info["config"].maxmemory == 4_000_000


def test_gap_closed_definition() -> None:
    s = {"best-static": {"cost": 10.0}, "oracle": {"cost": 6.0}, "ppo": {"cost": 8.0}}
    assert gap_closed(s) == pytest.approx(0.5)
    assert gap_closed({**s, "oracle": {"cost": 10.0}}) is None
    assert gap_closed({**s, "ppo": {"cost": 2.0}}) is None  # beyond the oracle: not a share of the gap
    assert gap_closed({"best-static": {"cost": 1.0}}) is None
    assert np.isnan(summarise([])["cost"])


def test_config_changes_count_the_first_move_away_from_the_initial_config() -> None:
    """A controller that moves once, at its first decision, and holds reports one change (the episode's records
    start after that move, so comparing consecutive records alone reported none); static-default reports none, and
    a controller that moves on and back again counts both moves."""

    class OnAndBack:
        def reset(self, ctx) -> None:
            self.n = 0

        def decide(self, ctx):
            self.n += 1
            return ctx.config.model_copy(update={"maxmemory": 3_000_000 if self.n < 3 else 2_000_000})

    cfg = _env_cfg(WorkloadSpec(trace="synthetic:zipf", rate=200, params={"n_requests": 12000, "n_keys": 500}),
                   {"min_bytes": 1_000_000, "max_bytes": 4_000_000, "initial_bytes": 2_000_000}, 10.0)
    ctls = {
        "static-default": make_controller("static-default"),
        "fixed": make_controller("fixed", config=RedisConfig(maxmemory=3_000_000)),
        "on-and-back": OnAndBack(),
    }
    rep = evaluate_controllers(cfg, ctls)  # type: ignore[arg-type]
    changes = {name: r.summary["config_changes"] for name, r in rep.results.items()}
    assert changes == {"static-default": 0, "fixed": 1, "on-and-back": 2}
    assert rep.results["fixed"].records[0].changed and not any(r.changed for r in rep.results["fixed"].records[1:])
