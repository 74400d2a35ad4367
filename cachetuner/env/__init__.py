"""The Gymnasium environment that tunes Redis, its simulated backend and the what-if estimator.

Importing this package registers ``CacheTuner/SimRedis-v0``, ``CacheTuner/SimRedisDiscrete-v0`` and
``CacheTuner/LiveRedis-v0``.
"""

from __future__ import annotations

from cachetuner.env.cache_env import CacheTuningEnv
from cachetuner.env.config import (
    ActionConfig,
    EnvConfig,
    MemoryBounds,
    ObservationConfig,
    RewardConfig,
    WhatIfConfig,
    WorkloadSpec,
)
from cachetuner.env.registration import ENV_IDS, SIM_ENV_IDS, register_envs
from cachetuner.env.sim_backend import SimBackend, load_workload, working_set_bytes
from cachetuner.env.whatif import WhatIfEstimator, hash_sample_mask, splitmix64, whatif_label


def make_sim_env(cfg: EnvConfig | dict | None = None, *, actions: str | None = None) -> CacheTuningEnv:
    """A simulated env from a config (no TimeLimit wrapper: the env truncates at its window end)."""
    return CacheTuningEnv(cfg, actions=actions)


register_envs()

__all__ = [
    "ENV_IDS",
    "SIM_ENV_IDS",
    "ActionConfig",
    "CacheTuningEnv",
    "EnvConfig",
    "MemoryBounds",
    "ObservationConfig",
    "RewardConfig",
    "SimBackend",
    "WhatIfConfig",
    "WhatIfEstimator",
    "WorkloadSpec",
    "hash_sample_mask",
    "load_workload",
    "make_sim_env",
    "splitmix64",
    "whatif_label",
    "working_set_bytes",
]
