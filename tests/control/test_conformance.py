"""Conformance suite over every registered controller (a new one is picked up without editing this file).

Each controller must: build from the registry with default settings (plus the one parameter its kind
needs), reset and decide from a :class:`DecisionContext` alone, return a valid :class:`RedisConfig`,
be deterministic for a seed, never need ``ctx.fork`` unless it declares ``hindsight``, and — when it
declares it — refuse to run without one. Run through the evaluation loop, every interval it chose is
inside the episode's bounds (the env clips, the loop records what ran).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cachetuner.config import RedisConfig
from cachetuner.control import ControlSettings, controller_names, is_hindsight, make_controller
from cachetuner.env import CacheTuningEnv, EnvConfig, WorkloadSpec
from cachetuner.errors import BackendError
from cachetuner.evaluation import context_from_env, run_episode
from cachetuner.evaluation.episode import wants_sample

SETTINGS = ControlSettings(grid={"n_sizes": 3, "timeouts": [0]}, oracle={"horizon": 2}, mrc={"min_weight": 10})


def _env_cfg() -> EnvConfig:
    return EnvConfig(
        workloads=[WorkloadSpec(trace="synthetic:zipf", rate=200, params={"n_requests": 16000, "n_keys": 1500})],
        interval_s=10, episode_intervals=None, warmup_intervals=1,
        bounds={"min_bytes": 1_500_000, "max_bytes": 9_000_000, "initial_bytes": 4_000_000},
        actions={"policies": ["allkeys-lru", "allkeys-lfu"], "timeouts": [0]},
        reward={"miss_cost": 0.0002, "memory_cost_per_gb_hour": 50.0, "slo_penalty": 0.0, "switch_cost": 0.0002},
    )


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory, mlflow_store) -> Path:
    """A real (barely trained) PPO policy with its training config, for the ``ppo`` controller."""
    from cachetuner.agent.config import TrainConfig
    from cachetuner.agent.train import train

    out = tmp_path_factory.mktemp("ppo")
    cfg = TrainConfig(experiment="conformance", total_timesteps=64, n_envs=1, env=_env_cfg(),
                      ppo={"n_steps": 32, "batch_size": 32, "n_epochs": 1}, eval={"enabled": False},
                      output_dir=out)
    return train(cfg, tracking_uri=mlflow_store(out)).model_path


def _build(name: str, seed: int, model: Path):
    fixed = {"config": {"maxmemory": 3_000_000, "maxmemory_policy": "allkeys-lfu"}}
    params = {"ppo": {"model": model}, "fixed": fixed, "recommended": fixed, "mrc-history": fixed}
    return make_controller(name, SETTINGS, seed, **params.get(name, {}))


NAMES = controller_names()


def test_every_builtin_is_registered() -> None:
    assert {"mrc", "static-default", "best-static", "dp-hindsight", "oracle", "hill-climb", "optuna", "ppo",
            "fixed", "current", "hold", "random", "recommended", "sized-once", "mrc-history"} <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_controller_runs_an_episode_inside_the_bounds(name: str, tiny_model: Path) -> None:
    env = CacheTuningEnv(_env_cfg())
    recs = run_episode(env, _build(name, 0, tiny_model), seed=0, options={"workload": 0, "start": "begin"})
    assert len(recs) == 7
    lo, hi = env.bounds
    assert all(lo <= r.maxmemory <= hi for r in recs)


@pytest.mark.parametrize("name", NAMES)
def test_controller_decides_from_the_context_alone(name: str, tiny_model: Path) -> None:
    env = CacheTuningEnv(_env_cfg())
    obs, info = env.reset(seed=0, options={"workload": 0, "start": "begin"})
    ctl = _build(name, 0, tiny_model)
    if is_hindsight(name):
        with pytest.raises(BackendError, match="simulated"):
            ctl.reset(context_from_env(env, obs, info, hindsight=False))
            ctl.decide(context_from_env(env, obs, info, hindsight=False))
        return
    wants = wants_sample(ctl)  # the interval's requests, for the controllers that declare they read them
    ctl.reset(context_from_env(env, obs, info, sample=wants))
    for _ in range(3):
        cfg = ctl.decide(context_from_env(env, obs, info, sample=wants))
        assert isinstance(cfg, RedisConfig)
        obs, _, _, _, info = env.step_config(cfg)


@pytest.mark.parametrize("name", NAMES)
def test_controller_is_deterministic_for_a_seed(name: str, tiny_model: Path) -> None:
    runs = []
    for _ in range(2):
        env = CacheTuningEnv(_env_cfg())
        recs = run_episode(env, _build(name, 3, tiny_model), seed=3, options={"workload": 0, "start": "begin"})
        runs.append([(r.maxmemory, r.policy, r.timeout) for r in recs])
    assert runs[0] == runs[1]
