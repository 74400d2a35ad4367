"""The configuration space a tuner may choose from, read off the env it runs on.

Memory bounds are resolved by the env per workload (fractions of the working set), policies and
timeouts come from the env's action space, so that no baseline can pick a configuration the
learned policy could not reach.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import numpy as np

from cachetuner.baselines.settings import GridSettings
from cachetuner.config import RedisConfig


@dataclass(frozen=True)
class ConfigSpace:
    min_bytes: int
    max_bytes: int
    policies: tuple[str, ...]
    timeouts: tuple[int, ...]

    def sizes(self, n: int) -> list[int]:
        """``n`` sizes, geometric between the bounds (both included)."""
        return [int(round(x)) for x in np.geomspace(self.min_bytes, self.max_bytes, n)]

    def clip(self, maxmemory: float) -> int:
        return int(min(max(int(maxmemory), self.min_bytes), self.max_bytes))


def config_space(env: Any) -> ConfigSpace:
    """Bounds of the env's current workload and the policies / timeouts of its action space."""
    base = env.unwrapped
    lo, hi = base.bounds
    return ConfigSpace(int(lo), int(hi), tuple(base.action_policies), tuple(int(t) for t in base.action_timeouts))


def current_config(env: Any) -> RedisConfig:
    return env.unwrapped.backend.config


def grid(env: Any, settings: GridSettings, template: RedisConfig | None = None) -> list[RedisConfig]:
    """Sizes x policies x timeouts; other fields (samples, LFU knobs) from ``template`` (default: current)."""
    space = config_space(env)
    base = template or current_config(env)
    policies: list[str] = list(settings.policies or space.policies)
    timeouts = settings.timeouts or list(space.timeouts)
    return [
        base.evolve(maxmemory=m, maxmemory_policy=p, timeout=t)
        for m in space.sizes(settings.n_sizes)
        for p in policies
        for t in timeouts
    ]


def fork_env(env: Any) -> Any:
    """An independent copy of the env in its current state (simulator state included): the hindsight
    baselines' window into the future. Only possible on simulated backends.

    The fork shares the immutable traces and drops the what-if estimator: what-if estimates feed
    observations only, never the cost, and cloning a dozen mini caches per fork would dominate the
    oracle's run time.
    """
    base = env.unwrapped
    if not hasattr(base.backend, "clone"):
        from cachetuner.errors import BackendError

        raise BackendError("hindsight tuners (best-static, oracle) need a simulated backend that can be cloned")
    new = copy.copy(base)
    new.backend = base.backend.clone()
    new.whatif = None
    new._obs = copy.deepcopy(base._obs)
    return new
