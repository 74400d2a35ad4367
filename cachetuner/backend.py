"""The ``CacheBackend`` protocol: what the env, the daemon and the A/B harness need from a cache.

Implemented by the simulator adapter (``cachetuner.env.sim_backend.SimBackend``) and the live Redis
backend (``cachetuner.live.backend.LiveRedisBackend``). Both return :class:`MetricsSnapshot`.

Two optional extensions, both explicit (the env never probes a backend's attributes):

- :class:`FactsBackend`: ``facts()`` returns :class:`BackendFacts`, what the backend knows about
  the cache and its workload this episode (bounds, working set, key count, sim parameters, ...);
  :func:`backend_facts` gives empty facts for a backend without the method.
- :class:`SimulatedBackend`: a replayable workload, so an episode can be pinned
  (``reset(workload=..., start=..., warmup=False)``) and the whole state copied (``clone()``);
  what evaluation on identical windows and the hindsight controllers need.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from cachetuner.config import RedisConfig
from cachetuner.metrics import MetricsSnapshot

if TYPE_CHECKING:
    from cachetuner.sim.params import SimParams


@dataclass
class ApplyResult:
    """Outcome of a configuration change. ``applied`` is what the cache reports after the change."""

    ok: bool
    requested: RedisConfig
    applied: RedisConfig
    error: str | None = None  # e.g. "NOPERM ..." when an ACL refuses CONFIG SET
    #: The cache did not answer (connection lost, timed out): a failure of the target, not a refusal
    #: of the config. ``applied`` is then the last config known, not one read back.
    unreachable: bool = False


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

    def coarser_than(self, rate: float) -> bool:
        """Whether this sample shows the stream is sampled more coarsely than ``rate`` (an estimator sampling at
        ``rate`` must then rebuild at the stream's rate: nothing can sample finer than its input). Only a sample
        with requests says what the stream's rate is: an empty one (a quiet interval, a window read before the
        stream's first entry) carries the reader's default, and rebuilding on it would throw away every estimate's
        evidence and pin it to that default."""
        return len(self.keys) > 0 and self.rate < 1.0 and self.rate < rate - 1e-12


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


@dataclass(frozen=True)
class BackendFacts:
    """What a backend knows about its cache and workload for the current episode; ``None`` = unknown.

    Attributes:
        bounds: ``(min, max)`` maxmemory in bytes the env may choose (``None``: the env resolves
            ``cfg.bounds`` without a working set).
        working_set_bytes: ``used_memory`` holding every key of the workload (sizes MRC objects).
        n_keys: distinct keys of the workload (sizes what-if, MRC and shadow mini caches).
        key_bytes: key-name lengths by key id.
        read_only: whether GET misses fill the cache (read-through), as the mini caches replay it.
        sim_params: the cache's :class:`~cachetuner.sim.params.SimParams` (``None``: the env's).
        rate_reference: requests/s the observation's rate feature is relative to.
        workload_name: the current episode's workload (``None``: ``"live"``).
    """

    bounds: tuple[int, int] | None = None
    working_set_bytes: int | None = None
    n_keys: int | None = None
    key_bytes: np.ndarray | None = field(default=None, compare=False)  # an array: == would be ambiguous
    read_only: bool = True
    sim_params: SimParams | None = None
    rate_reference: float | None = None
    workload_name: str | None = None


@runtime_checkable
class FactsBackend(Protocol):
    """A backend that describes its cache and workload (optional extension of :class:`CacheBackend`)."""

    def facts(self) -> BackendFacts:
        """Facts for the current episode (call after ``reset``: a simulated backend's workload changes then)."""
        ...


def backend_facts(backend: object) -> BackendFacts:
    """``backend.facts()``, or empty facts for a backend that does not implement :class:`FactsBackend`."""
    return backend.facts() if isinstance(backend, FactsBackend) else BackendFacts()


@runtime_checkable
class SimulatedBackend(CacheBackend, Protocol):
    """A :class:`CacheBackend` over a replayable workload (optional extension).

    ``reset`` can pin the episode: ``workload`` (index or name), ``start`` (``"begin"`` or an interval
    index) and ``warmup=False`` (the caller runs the warm-up intervals itself, as the env does to feed
    its estimators). ``clone`` copies the whole state, cache included, so that a copy can be stepped
    into the future without disturbing the original (hindsight controllers).
    """

    def reset(
        self,
        *,
        seed: int | None = None,
        workload: int | str | None = None,
        start: int | str | None = None,
        warmup: bool = True,
    ) -> MetricsSnapshot: ...

    def clone(self) -> SimulatedBackend:
        """An independent copy in the current state."""
        ...
