"""The Gymnasium contract: check_env on every registered simulated id, determinism, spaces, episode end."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from env_testlib import small_cfg
from gymnasium.utils.env_checker import check_env

from cachetuner.config import RedisConfig
from cachetuner.env import ENV_IDS, SIM_ENV_IDS, CacheTuningEnv, EnvConfig, SimBackend, make_sim_env
from cachetuner.errors import BackendError
from cachetuner.metrics import MetricsSnapshot


def test_ids_registered_on_import() -> None:
    for env_id in ENV_IDS:
        assert env_id in gym.registry
    assert gym.registry["CacheTuner/LiveRedis-v0"].entry_point == "cachetuner.live.env_factory:make_live_env"
    assert gym.registry["CacheTuner/SimRedis-v0"].max_episode_steps == EnvConfig().episode_intervals


@pytest.mark.parametrize("env_id", SIM_ENV_IDS)
def test_check_env_registered(env_id: str) -> None:
    env = gym.make(env_id, cfg=small_cfg())
    check_env(env.unwrapped, skip_render_check=True)
    expected = gym.spaces.Discrete(12) if "Discrete" in env_id else gym.spaces.MultiDiscrete([5, 8, 3])
    assert env.action_space == expected
    env.close()


@pytest.mark.parametrize("kind", ["cost", "seed"])
@pytest.mark.parametrize("space", ["multidiscrete", "discrete12"])
def test_rollout_obs_in_box_reward_finite(space: str, kind: str) -> None:
    cfg = small_cfg(reward={"kind": kind})
    env = make_sim_env(cfg, actions=space)
    env.action_space.seed(3)
    obs, info = env.reset(seed=3)
    assert env.observation_space.contains(obs)
    assert set(info) >= {"snapshot", "cost", "config", "whatif", "workload"}
    steps = 0
    done = False
    while not done:
        obs, r, term, trunc, info = env.step(env.action_space.sample())
        steps += 1
        assert env.observation_space.contains(obs), dict(zip(env.observation_names, obs, strict=True))
        assert np.isfinite(r) and abs(r) <= cfg.reward.clip
        assert isinstance(info["snapshot"], MetricsSnapshot) and isinstance(info["config"], RedisConfig)
        assert info["cost"]["total"] == pytest.approx(sum(info["cost"][k] for k in ("memory", "miss", "slo", "switch")))
        assert not term
        done = trunc
    assert steps == cfg.episode_intervals
    with pytest.raises(BackendError):
        env.step(env.action_space.sample())


def _rollout(seed: int, n: int = 6) -> tuple[list[np.ndarray], list[float]]:
    env = CacheTuningEnv(small_cfg())
    env.action_space.seed(seed)
    obs, _ = env.reset(seed=seed)
    out, rewards = [obs], []
    for _ in range(n):
        obs, r, *_ = env.step(env.action_space.sample())
        out.append(obs)
        rewards.append(r)
    return out, rewards


def test_deterministic_for_a_seed() -> None:
    o1, r1 = _rollout(11)
    o2, r2 = _rollout(11)
    assert r1 == r2
    for a, b in zip(o1, o2, strict=True):
        np.testing.assert_array_equal(a, b)
    o3, r3 = _rollout(12)
    assert r3 != r1 or any(not np.array_equal(a, b) for a, b in zip(o1, o3, strict=True))


def test_reset_same_seed_same_episode_on_one_env(cfg: EnvConfig) -> None:
    env = CacheTuningEnv(cfg)
    first = [env.reset(seed=5)[0]] + [env.step(np.array([4, 1, 0]))[0] for _ in range(3)]
    again = [env.reset(seed=5)[0]] + [env.step(np.array([4, 1, 0]))[0] for _ in range(3)]
    for a, b in zip(first, again, strict=True):
        np.testing.assert_array_equal(a, b)


def test_pinned_reset_gives_same_traffic(cfg: EnvConfig) -> None:
    env = CacheTuningEnv(cfg)
    snaps = []
    for seed in (1, 2, 3):
        _, info = env.reset(seed=seed, options={"workload": "ttl", "start": "begin"})
        assert info["workload"] == "ttl"
        snaps.append(env.step(np.array([2, 1, 0]))[4]["snapshot"])
    assert len({(s.requests, s.gets) for s in snaps}) == 1
    assert snaps[0].requests > 0


def test_episode_ends_at_window_end(cfg: EnvConfig) -> None:
    whole = cfg.model_copy(update={"episode_intervals": None})
    env = CacheTuningEnv(whole)
    env.reset(seed=0, options={"workload": 0, "start": "begin"})
    backend = env.backend
    assert isinstance(backend, SimBackend)
    total_requests = 0
    steps = 0
    done = False
    while not done:
        *_, done, info = env.step_config(env.backend.config)
        total_requests += info["snapshot"].requests
        steps += 1
    assert steps == backend.n_intervals() - whole.warmup_intervals == backend.episode_length()
    # warm-up intervals + episode steps cover the whole trace, every request exactly once
    assert backend.exhausted and backend._pos == len(backend.trace)


def test_time_limit_of_registered_id() -> None:
    env = gym.make("CacheTuner/SimRedis-v0", cfg=small_cfg(episode_intervals=50, warmup_intervals=1), max_episode_steps=4)
    env.reset(seed=0)
    for i in range(4):
        *_, trunc, _ = env.step(env.action_space.sample())
        assert trunc == (i == 3)


def test_step_and_reset_info_costs_are_consistent(cfg: EnvConfig) -> None:
    env = CacheTuningEnv(cfg)
    env.reset(seed=0)
    cur = env.backend.config
    *_, info = env.step_config(cur)
    assert info["cost"]["switch"] == 0.0
    *_, info = env.step_config(cur.evolve(maxmemory_policy="allkeys-lfu"))
    assert info["cost"]["switch"] == cfg.reward.switch_cost
    assert info["apply"].ok and info["config"].maxmemory_policy == "allkeys-lfu"
    snap = info["snapshot"]
    assert info["cost"]["miss"] == pytest.approx(cfg.reward.miss_cost * (snap.misses - snap.l2_hits))


def test_reward_formulas(cfg: EnvConfig) -> None:
    env = CacheTuningEnv(cfg)
    env.reset(seed=0)
    _, r, *_, info = env.step_config(env.backend.config)
    snap = info["snapshot"]
    assert r == pytest.approx(-info["cost"]["total"] / (cfg.reward.miss_cost * snap.gets))
    assert -1.5 < r < 0
    seed_env = CacheTuningEnv(cfg.model_copy(update={"reward": cfg.reward.model_copy(update={"kind": "seed"})}))
    _, info0 = seed_env.reset(seed=0)
    _, r, *_, info1 = seed_env.step_config(seed_env.backend.config)
    a, b = info0["snapshot"], info1["snapshot"]
    expected = (
        0.6 * (b.hit_ratio - a.hit_ratio)
        + 0.3 * np.log(max(a.latency_p95_ms, 0.01) / max(b.latency_p95_ms, 0.01))
        - 0.1 * (b.memory_utilisation - a.memory_utilisation)
    )
    assert r == pytest.approx(expected)


def test_max_episode_steps_truncates_before_window_end() -> None:
    env = CacheTuningEnv(small_cfg(max_episode_steps=3))
    env.reset(seed=0)
    flags = [env.step(env.action_space.sample())[3] for _ in range(3)]
    assert flags == [False, False, True] and not env.backend.exhausted
