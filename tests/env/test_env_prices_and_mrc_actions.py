"""Prices in dollars (presets, budget regime, domain randomisation), the MRC observation features and
the mrc-offset action space."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from cachetuner.config import RedisConfig
from cachetuner.env import CacheTuningEnv, EnvConfig, WorkloadSpec
from cachetuner.env.actions import make_action_codec
from cachetuner.env.config import ActionConfig
from cachetuner.env.prices import PRESETS, PricesConfig
from cachetuner.errors import ConfigError


def _cfg(**over) -> EnvConfig:
    base = {
        "workloads": [WorkloadSpec(trace="synthetic:zipf", rate=200, params={"n_requests": 30000, "n_keys": 2000})],
        "interval_s": 10, "episode_intervals": 10, "warmup_intervals": 1,
        "actions": {"space": "mrc-offset", "policies": ["allkeys-lru", "allkeys-lfu"], "timeouts": [0]},
        "observation": {"mrc_features": True},
        "mrc": {"n_sizes": 8},
    }
    base.update(over)
    return EnvConfig.model_validate(base)


def test_presets_and_explicit_prices() -> None:
    assert PricesConfig(preset="list").resolve() == PRESETS["list"] == (0.016, 0.002)
    assert PricesConfig(preset="list", gpu_seconds_per_miss=2.0, gpu_per_hour=3.6).resolve() == (0.016, 0.002)
    assert PricesConfig(preset="scaled", per_miss=0.01).resolve()[1] == 0.01
    cfg = EnvConfig(prices={"preset": "cheap-backend"})
    assert (cfg.reward.memory_cost_per_gb_hour, cfg.reward.miss_cost) == PRESETS["cheap-backend"]


def test_budget_regime_caps_memory_and_makes_it_free() -> None:
    cfg = EnvConfig(prices={"preset": "budget", "budget_bytes": 50_000_000})
    assert cfg.reward.memory_cost_per_gb_hour == 0.0
    assert cfg.bounds.max_bytes == 50_000_000
    from cachetuner.yamlconfig import validate

    with pytest.raises(ConfigError, match="budget_bytes or budget_fraction"):
        validate(EnvConfig, {"prices": {"preset": "budget"}}, "x.yaml")


def test_a_budget_can_be_a_share_of_each_workloads_working_set() -> None:
    """``budget_fraction`` caps maxmemory at that share of the trace's working set (one suite entry fits
    traces of any size); the lower bound stays below it and memory is free."""
    plain = CacheTuningEnv(_cfg(bounds={"max_fraction": 1.0}))
    plain.reset(seed=0)
    working_set = plain.bounds[1]
    env = CacheTuningEnv(_cfg(prices={"preset": "budget", "budget_fraction": 0.1}))
    env.reset(seed=0)
    lo, hi = env.bounds
    assert hi == pytest.approx(0.1 * working_set, rel=1e-6) and lo < hi
    assert env.prices.budget_bytes == hi and env.prices.memory_per_gib_hour == 0.0
    assert env.backend.config.maxmemory <= hi  # the operator's size is clipped to the budget
    from cachetuner.yamlconfig import validate

    with pytest.raises(ConfigError, match="set one"):
        validate(EnvConfig, {"prices": {"preset": "budget", "budget_bytes": 10**6, "budget_fraction": 0.1}}, "x.yaml")


def test_randomised_memory_price_changes_per_episode_and_is_seeded() -> None:
    cfg = _cfg(prices={"preset": "scaled", "randomize_memory": [0.2, 5.0]})
    env = CacheTuningEnv(cfg)
    seen = []
    for seed in (0, 1, 2, 0):
        env.reset(seed=seed)
        seen.append(env.prices.memory_per_gib_hour)
    assert len(set(seen[:3])) == 3 and seen[0] == seen[3]
    assert all(0.2 * 1000 <= s <= 5 * 1000 for s in seen)


def test_mrc_env_passes_check_env_and_exposes_the_optimum() -> None:
    env = CacheTuningEnv(_cfg())
    check_env(env, skip_render_check=True)
    obs, info = env.reset(seed=0)
    names = env.observation_names
    assert "mrc:optimum_position" in names and "mrc:cost@7" in names
    for _ in range(6):
        obs, _, _, _, info = env.step(3)  # the optimum itself
    assert info["anchor"] is not None
    i = names.index("mrc:ready")
    assert obs[i] == 1.0
    lo, hi = env.bounds
    assert lo <= info["config"].maxmemory <= hi


def test_mrc_offset_codec() -> None:
    codec = make_action_codec(ActionConfig(space="mrc-offset", mrc_offsets=[-1, 0, 1], offset_factor=2.0))
    cur = RedisConfig(maxmemory=10_000_000, maxmemory_policy="allkeys-lru")
    anchor = cur.evolve(maxmemory=20_000_000, maxmemory_policy="allkeys-lfu")
    bounds = (5_000_000, 30_000_000)
    assert codec.decode(0, cur, bounds, anchor) == cur  # keep
    assert codec.decode(1, cur, bounds, anchor).maxmemory == 10_000_000
    assert codec.decode(2, cur, bounds, anchor) == anchor
    assert codec.decode(3, cur, bounds, anchor).maxmemory == 30_000_000  # 40 MB clipped to the bound
    assert codec.decode(2, cur, bounds, None) == cur  # no optimum yet: keep
    with pytest.raises(ValueError):
        codec.decode(7, cur, bounds, anchor)


def test_mrc_features_need_curves() -> None:
    from cachetuner.yamlconfig import validate

    with pytest.raises(ConfigError, match="mrc.enabled"):
        validate(EnvConfig, {"observation": {"mrc_features": True}, "mrc": {"enabled": False}}, "x.yaml")
    assert np.isfinite(CacheTuningEnv(_cfg()).reset(seed=0)[0]).all()


def test_a_fork_of_an_env_with_mrc_features_steps() -> None:
    """Hindsight controllers fork the env (estimators dropped): its observations must still build."""
    env = CacheTuningEnv(_cfg())
    env.reset(seed=0)
    for _ in range(5):
        env.step(3)
    fork = env.fork()
    obs, _, _, _, info = fork.step_config(info_cfg := env.backend.config)
    assert np.isfinite(obs).all() and info["config"] == info_cfg


def test_following_the_anchor_is_the_mrc_controller_from_the_first_interval() -> None:
    """k = 0 of the mrc-offset actions runs exactly what the ``mrc`` controller runs, warm-up included: the
    anchor decides only from the interval the first observation describes, as the controller does at its
    first decision (deciding during warm-up started its cold phase early, and a policy trained around it
    ran a different rule than the controller it is compared with)."""
    from cachetuner.control.mrc import MRCController
    from cachetuner.control.settings import ControlSettings
    from cachetuner.evaluation import evaluate_controllers

    cfg = _cfg(warmup_intervals=3, episode_intervals=None, prices={"preset": "scaled"},
               workloads=[WorkloadSpec(trace="synthetic:zipf", rate=1000, params={"n_requests": 150000, "n_keys": 20000})])
    rep = evaluate_controllers(cfg, {"mrc": MRCController(ControlSettings())}, seed=0)
    controller = [(r.maxmemory, r.policy) for r in rep.results["mrc"].records]
    env = CacheTuningEnv(cfg)
    env.reset(seed=0, options={"workload": 0, "start": "begin"})  # the traffic evaluate_controllers replays
    follow = env.cfg.actions.mrc_offsets.index(0) + 1  # action 0 is "keep"
    anchored, done = [], False
    while not done:
        _, _, term, trunc, info = env.step(follow)
        anchored.append((info["config"].maxmemory, info["config"].maxmemory_policy))
        done = term or trunc
    assert len(set(controller)) > 2  # the rule moved (cold free growth under the fill cap), so this checks something
    assert anchored == controller


def test_anchor_deviation_costs_reward_only_when_the_action_leaves_the_anchor() -> None:
    """``reward.anchor_deviation``: the same episode with and without it; the rewards differ by exactly the
    penalty in the intervals whose action ran another config than the anchor's, and nowhere else."""
    plain, taxed = CacheTuningEnv(_cfg()), CacheTuningEnv(_cfg(reward={"anchor_deviation": 0.25}))
    plain.reset(seed=0)
    taxed.reset(seed=0)
    seen = set()
    for i in range(9):
        action = 1 if i % 2 else 3  # the anchor's size x 1.25^-2, then the anchor itself
        _, r0, *_ , info0 = plain.step(action)
        _, r1, *_ , info1 = taxed.step(action)
        deviated = bool(info1.get("anchor_deviation"))
        assert r0 - r1 == pytest.approx(0.25 if deviated else 0.0)
        assert "anchor_deviation" not in info0
        seen.add((action, deviated))
    assert (1, True) in seen and (3, True) not in seen
