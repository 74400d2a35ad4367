"""The ``CacheBackend`` protocol: what the env, the daemon and the A/B harness need from a cache.

Implemented by the simulator adapter (``cachetuner.env.sim_backend.SimBackend``) and the live Redis
backend (``cachetuner.live.backend.LiveRedisBackend``). Both return :class:`MetricsSnapshot`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np

from cachetuner.config import RedisConfig
from cachetuner.metrics import MetricsSnapshot


@dataclass
class ApplyResult:
    """Outcome of a configuration change. ``applied`` is what the cache reports after the change."""

    ok: bool
    requested: RedisConfig
    applied: RedisConfig
    error: str | None = None  # e.g. "NOPERM ..." when an ACL refuses CONFIG SET


@dataclass
class RequestSample:
    """Requests of the last interval, possibly a hash-based key sample (SHARDS-style).

    ``rate`` is the sampling rate (1.0 = every request). Feeds what-if mini-simulations and
    hotness features identically for simulated and live caches.
    """

    keys: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    sizes: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    timestamps: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float64))
    ops: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint8))
    ttls: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float64))
    rate: float = 1.0


@runtime_checkable
class CacheBackend(Protocol):
    """A cache that can be observed per interval and reconfigured between intervals."""

    interval_s: float

    @property
    def config(self) -> RedisConfig: ...

    def reset(self, *, seed: int | None = None) -> MetricsSnapshot:
        """Start an episode (sim: pick a workload window and warm up; live: read current state)."""
        ...

    def apply(self, config: RedisConfig) -> ApplyResult:
        """Change the configuration; takes effect before the next interval."""
        ...

    def step(self) -> MetricsSnapshot:
        """Let one interval of traffic pass and return what happened in it."""
        ...

    def recent_requests(self) -> RequestSample:
        """(Sampled) requests of the last interval."""
        ...

    @property
    def exhausted(self) -> bool:
        """True when the workload has no more intervals (sim) — live backends return False."""
        ...

    def close(self) -> None: ...
