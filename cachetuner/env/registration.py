"""Versioned Gymnasium ids, registered on ``import cachetuner.env``.

``TimeLimit`` is the default episode length; pass ``max_episode_steps=`` to ``gym.make`` when an
``EnvConfig`` with longer (or whole-trace) episodes is given.
"""

from __future__ import annotations

import gymnasium as gym

from cachetuner.env.config import EnvConfig

_DEFAULT_STEPS = EnvConfig().episode_intervals

#: id -> (entry point, kwargs, max_episode_steps)
ENV_IDS: dict[str, tuple[str, dict, int | None]] = {
    "CacheTuner/SimRedis-v0": ("cachetuner.env.cache_env:CacheTuningEnv", {"actions": "multidiscrete"}, _DEFAULT_STEPS),
    "CacheTuner/SimRedisDiscrete-v0": ("cachetuner.env.cache_env:CacheTuningEnv", {"actions": "discrete12"}, _DEFAULT_STEPS),
    "CacheTuner/LiveRedis-v0": ("cachetuner.live.env_factory:make_live_env", {}, None),
}
#: Ids backed by the simulator (the live one needs real Redis + Prometheus).
SIM_ENV_IDS: tuple[str, ...] = ("CacheTuner/SimRedis-v0", "CacheTuner/SimRedisDiscrete-v0")


def register_envs() -> None:
    for env_id, (entry_point, kwargs, steps) in ENV_IDS.items():
        if env_id not in gym.registry:
            gym.register(id=env_id, entry_point=entry_point, kwargs=kwargs, max_episode_steps=steps)
