"""``SimBackend``: the :class:`~cachetuner.backend.CacheBackend` protocol over the simulator.

Holds every workload's trace (each read once with :func:`cachetuner.traces.read_trace`), picks an
episode window on :meth:`reset`, warms the cache up, then lets one interval of trace time pass per
:meth:`step` through :class:`~cachetuner.sim.TieredCacheSim`. The env never asks whether it holds
this or the live backend: what it needs beyond :class:`~cachetuner.backend.CacheBackend` comes
from the two explicit extensions implemented here, :meth:`SimBackend.facts`
(:class:`~cachetuner.backend.BackendFacts`: bounds, working set, keys, sim parameters) and
:class:`~cachetuner.backend.SimulatedBackend` (pinned resets and :meth:`SimBackend.clone`, what
evaluation on identical windows and the hindsight controllers use), and
:class:`~cachetuner.ttl.knobs.ClientTTLBackend`: client-side TTL multipliers per QoS class, applied to
the TTLs of the next intervals' writes (SETs and read-through fills) as the application would.

With client TTL multipliers in use, a positive ``reward.stale_cost``, a workload with a ``ttl`` policy or
a multi-tenant workload, each snapshot also carries ``stale_hits`` (and, multi-tenant, per-tenant
``tenants``), from the simulator's per-request record (:class:`~cachetuner.env.freshness.IntervalFreshness`;
about 20 % more time per step, so it is not on for every workload).
"""

from __future__ import annotations

import copy
import math
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from cachetuner.backend import ApplyResult, BackendFacts, RequestSample
from cachetuner.config import RedisConfig
from cachetuner.env.config import EnvConfig, WorkloadSpec
from cachetuner.env.freshness import IntervalFreshness
from cachetuner.errors import BackendError, CacheTunerError, ConfigError
from cachetuner.metrics import MetricsSnapshot
from cachetuner.registry import Registry
from cachetuner.resources import memory_available
from cachetuner.sim.params import SimParams
from cachetuner.tenants.workload import load_tenant_workload
from cachetuner.traces.trace import Trace
from cachetuner.ttl.base import apply_ttl_policy
from cachetuner.ttl.keyspace import keyspace_for
from cachetuner.ttl.knobs import ClientTTL, key_class_index

_TRACE_CACHE: OrderedDict[str, Trace] = OrderedDict()
_TRACE_CACHE_SIZE = 16
#: Share of the memory (what is available plus what the cache holds) that cached traces may keep: a suite's cells
#: run trace by trace, and sixteen large traces kept for nothing would leave the next read too little (its guard
#: would then ask for --limit although the trace alone fits). The newest trace is always kept.
TRACE_CACHE_MEMORY_SHARE = 0.25


def load_workload(spec: WorkloadSpec) -> Trace:
    """``read_trace`` with the spec's arguments (``format: tenants``: a tenant workload YAML), then the
    spec's TTL policy; identical specs share one (immutable) Trace per process, so that several envs
    (training, evaluation, vectorised copies) do not each regenerate it."""
    from cachetuner.traces import read_trace

    key = spec.model_dump_json(exclude={"name", "weight"})
    if key in _TRACE_CACHE:
        _TRACE_CACHE.move_to_end(key)
        return _TRACE_CACHE[key]
    if spec.skip:  # a view of the whole trace, which is read (and cached) once for every skip
        whole = load_workload(spec.model_copy(update={"skip": 0}))
        if spec.skip >= len(whole):
            raise ConfigError(f"skip {spec.skip:,} leaves nothing of its {len(whole):,} requests")
        trace = whole.slice(spec.skip, len(whole))
    elif spec.format == "tenants":
        trace = load_tenant_workload(spec.trace)
    else:
        kwargs: dict = {"seed": spec.seed, "params": dict(spec.params), "start": spec.start}
        for name in ("size_model", "rate", "rate_profile", "limit"):
            if getattr(spec, name) is not None:
                kwargs[name] = getattr(spec, name)
        trace = read_trace(spec.trace, spec.format, **kwargs)
    if spec.ttl is not None and not spec.skip:  # a skipped view has its whole trace's TTLs already
        trace = apply_ttl_policy(trace, spec.ttl)
    if spec.key_draw and not spec.skip:  # after the TTL policy, which groups keys by id; a view's whole is relabelled
        trace = trace.relabelled(spec.key_draw)
    if len(trace) == 0:
        raise ConfigError(f"env.workloads: {spec.trace} has no requests")
    _TRACE_CACHE[key] = trace
    _trim_trace_cache()
    return trace


def _trim_trace_cache() -> None:
    """Drop the least recently used traces while the cache holds more than ``_TRACE_CACHE_SIZE`` of them or more
    bytes than ``TRACE_CACHE_MEMORY_SHARE`` allows, keeping the newest; with them go their memoised working sets,
    which would otherwise keep a dropped trace alive."""
    held = sum(t.nbytes for t in _TRACE_CACHE.values())
    avail = memory_available()
    budget = None if avail is None else TRACE_CACHE_MEMORY_SHARE * (avail + held)
    while len(_TRACE_CACHE) > 1 and (len(_TRACE_CACHE) > _TRACE_CACHE_SIZE or (budget is not None and held > budget)):
        _, old = _TRACE_CACHE.popitem(last=False)
        held -= old.nbytes
        for k in [k for k, (t, _) in _WS_CACHE.items() if t is old]:
            del _WS_CACHE[k]


def preload(cfg: EnvConfig, i: int = 0) -> Trace:
    """Workload ``i`` of ``cfg`` read now (and cached for the envs that follow), a bad one failing as their
    construction would: a command reads its trace before it starts showing progress, not inside it."""
    return _load(i, cfg.workloads[i])


def _load(i: int, spec: WorkloadSpec) -> Trace:
    try:
        return load_workload(spec)
    except CacheTunerError as e:
        said = str(e).startswith(f"{spec.trace}:")  # the reader's message names the file already
        raise ConfigError(f"env.workloads.{i}.trace{'' if said else f' ({spec.trace})'}: {e}") from None


_WS_CACHE: OrderedDict[tuple[int, str], tuple[Trace, int]] = OrderedDict()


def working_set_bytes(trace: Trace, params: SimParams) -> int:
    """``used_memory`` the simulator would reach holding every key of ``trace`` at its last size
    (the simulator's own per-key charge, :func:`cachetuner.sim.sizing.working_set_charge`) plus
    Redis's fixed memory (empty instance + client buffers). Memoised per (trace, params)."""
    from cachetuner.sim.sizing import full_size

    key = (id(trace), params.model_dump_json())
    hit = _WS_CACHE.get(key)
    if hit is not None and hit[0] is trace:
        return hit[1]
    value = full_size(trace, params)
    _WS_CACHE[key] = (trace, value)
    while len(_WS_CACHE) > _TRACE_CACHE_SIZE:
        _WS_CACHE.popitem(last=False)
    return value


def sim_params_for(cfg: EnvConfig) -> SimParams:
    """The env's SimParams with the cost section taken from ``cfg.reward`` (one source of truth)."""
    cost = cfg.sim.cost.model_copy(
        update={"miss_cost": cfg.reward.miss_cost, "memory_cost_per_gb_hour": cfg.reward.memory_cost_per_gb_hour}
    )
    return cfg.sim.model_copy(update={"cost": cost})


class SimBackend:
    """Simulated Redis over a set of workloads; a :class:`~cachetuner.backend.SimulatedBackend` with
    :meth:`facts`.

    Args:
        cfg: the env config (workloads, interval, window, bounds, initial config, sim params).
        traces: already loaded traces, one per ``cfg.workloads`` entry (default: read them).
        freshness: count stale hits per interval; ``None`` = when the config needs them (see the module doc).

    Attributes:
        traces, working_sets: per workload; ``working_sets`` are in bytes (see :func:`working_set_bytes`).
        workload_index: the workload of the current episode.
        bounds: ``(min, max)`` maxmemory in bytes for the current workload.
        client_ttl: the client-side TTL multipliers the next intervals' writes carry (``cfg.client_ttl``
            at reset; :meth:`set_client_ttl` changes them).
    """

    def __init__(self, cfg: EnvConfig, traces: Sequence[Trace] | None = None, *, freshness: bool | None = None) -> None:
        self.cfg = cfg
        self.interval_s = float(cfg.interval_s)
        self.params = sim_params_for(cfg)
        self.traces = list(traces) if traces is not None else [_load(i, w) for i, w in enumerate(cfg.workloads)]
        if len(self.traces) != len(cfg.workloads):
            raise ConfigError(f"env.workloads: {len(cfg.workloads)} specs but {len(self.traces)} traces given")
        self.names = [w.label for w in cfg.workloads]
        #: label -> index of its first workload (``reset(workload=LABEL)``).
        self._by_name: Registry[int] = Registry("workload")
        for i, name in enumerate(self.names):
            if name not in self._by_name:
                self._by_name.add(name, i)
        self.working_sets = [working_set_bytes(t, self.params) for t in self.traces]
        w = np.array([s.weight for s in cfg.workloads], dtype=np.float64)
        self._weights = w / w.sum()
        self._sims: dict[int, object] = {}
        self._rng = np.random.default_rng()
        self.workload_index = 0
        #: the episode's request-rate factor (``cfg.rate_factor``; 1 without it)
        self.speed = 1.0
        self.bounds = cfg.bounds.resolve(self.working_sets[0])
        self._pos = self._stop = 0
        self._t = self._t_end = 0.0
        self._last = (0, 0)
        self._started = False
        self.client_ttl: ClientTTL = cfg.client_ttl
        self._last_ttls: np.ndarray | None = None  # the last interval's TTLs when multiplied
        #: per workload: QoS class index per key (client TTL) and the freshness bookkeeping
        self._key_class: dict[int, np.ndarray] = {}
        self._freshness: dict[int, IntervalFreshness | None] = {}
        self._track_all = cfg.client_ttl_used or cfg.reward.stale_cost > 0 or any(w.ttl for w in cfg.workloads)
        self._track_pref = freshness

    # -- episode ------------------------------------------------------------------------------------------
    @property
    def trace(self) -> Trace:
        return self.traces[self.workload_index]

    @property
    def workload_name(self) -> str:
        return self.names[self.workload_index]

    def skipped_requests(self) -> Trace | None:
        """The requests the current workload's spec skips (``WorkloadSpec.skip``: the past before the replayed
        part), or None when it skips none; what ``mrc.warm_from_skipped`` feeds the curve estimator."""
        spec = self.cfg.workloads[self.workload_index]
        if not spec.skip:
            return None
        return load_workload(spec.model_copy(update={"skip": 0})).slice(0, spec.skip)

    @property
    def working_set(self) -> int:
        return self.working_sets[self.workload_index]

    @property
    def rate_reference(self) -> float:
        """The workload's mean request rate (requests/s) in this episode (its own times the episode's
        ``rate_factor``), the observation's rate reference."""
        t = self.trace
        own = len(t) / t.duration if t.duration > 0 else float(len(t)) / self.interval_s
        return own * self.speed

    @property
    def _span(self) -> float:
        """Trace seconds one interval replays: ``interval_s`` times the episode's rate factor."""
        return self.interval_s * self.speed

    def facts(self) -> BackendFacts:
        """The current workload's facts (:class:`~cachetuner.backend.FactsBackend`)."""
        t = self.trace
        return BackendFacts(
            bounds=self.bounds,
            working_set_bytes=self.working_set,
            n_keys=t.n_keys,
            key_bytes=t.key_bytes,
            read_only=t.read_only,
            sim_params=self.params,
            rate_reference=self.rate_reference,
            workload_name=self.workload_name,
        )

    def n_intervals(self, workload: int | None = None) -> int:
        """Whole intervals in a workload's trace (at least 1)."""
        t = self.traces[self.workload_index if workload is None else workload]
        return max(1, int(math.ceil(t.duration / self._span - 1e-9)))

    def episode_length(self, workload: int | None = None) -> int:
        """Steps of an episode on that workload (excluding warm-up)."""
        total = self.n_intervals(workload)
        k = self.cfg.episode_intervals
        return max(1, total - self.cfg.warmup_intervals) if k is None else max(1, min(k, total - self.cfg.warmup_intervals))

    def _draw_speed(self, rng: np.random.Generator) -> float:
        """The episode's request-rate factor: log-uniform in ``cfg.rate_factor`` (1 when unset, drawing nothing,
        so episodes without it replay exactly as before). An interval then replays ``factor x interval_s`` trace
        seconds: the same requests, ``factor`` times as many per interval. Trace-time quantities (TTLs, idle
        timeouts) are not rescaled: under a factor of 10 a 600 s TTL lasts 60 s of intervals (an
        approximation, stated in docs/env.md)."""
        rf = self.cfg.rate_factor
        if rf is None:
            return 1.0
        lo, hi = rf
        return float(np.exp(rng.uniform(np.log(lo), np.log(hi))))

    def _resolve_workload(self, workload: int | str | None, rng: np.random.Generator) -> int:
        if workload is None:
            return int(rng.choice(len(self.traces), p=self._weights))
        if isinstance(workload, str):
            return self._by_name.get(workload)
        if not 0 <= int(workload) < len(self.traces):
            raise ConfigError(f"workload index {workload} out of range 0..{len(self.traces) - 1}")
        return int(workload)

    def reset(
        self,
        *,
        seed: int | None = None,
        workload: int | str | None = None,
        start: int | str | None = None,
        warmup: bool = True,
    ) -> MetricsSnapshot:
        """Pick a workload (by weight, or ``workload``) and a window (random, ``"begin"`` or an interval
        index), reset the cache to the initial config and run the warm-up intervals (``warmup=False``
        leaves them to the caller, as the env does to feed its what-if estimator).

        Returns the last warm-up snapshot (an empty one without warm-up)."""
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        rng = self._rng
        self.workload_index = self._resolve_workload(workload, rng)
        self.speed = self._draw_speed(rng)
        trace = self.trace
        total = self.n_intervals()
        warm = self.cfg.warmup_intervals
        k = self.cfg.episode_intervals
        need = total if k is None else min(total, warm + k)
        if start is None:
            start_i = int(rng.integers(0, total - need + 1)) if k is not None else 0
        elif start == "begin":
            start_i = 0
        elif isinstance(start, int | np.integer):
            start_i = int(min(max(int(start), 0), total - need))
        else:
            raise ConfigError(f"reset option start={start!r}: use 'begin', an interval index or None")
        t_first = float(trace.timestamps[0])
        self._t = t_first + start_i * self._span
        self._t_end = self._t + need * self._span
        self._pos = trace.index_at(self._t)
        self._stop = len(trace) if start_i + need >= total else trace.index_at(self._t_end)
        self.bounds = self.cfg.bounds.resolve(self.working_set)
        lo, hi = self.bounds
        initial = self.cfg.initial_config.evolve(maxmemory=self.cfg.bounds.initial(self.working_set, lo, hi))
        sim = self._sims.get(self.workload_index)
        if sim is None:
            from cachetuner.sim import TieredCacheSim

            sim = TieredCacheSim(
                n_keys=trace.n_keys,
                config=initial,
                params=self.params,
                seed=int(rng.integers(2**31)),
                key_bytes=trace.key_bytes,
            )
            self._sims[self.workload_index] = sim
        else:
            sim.seed = int(rng.integers(2**31))  # type: ignore[attr-defined]  # reset() restarts from .seed
            sim.reset()  # type: ignore[attr-defined]
            sim.apply_config(initial)  # type: ignore[attr-defined]
        self._sim = sim
        self.client_ttl = self.cfg.client_ttl
        self._last_ttls = None
        fresh = self._freshness_of(self.workload_index)
        if fresh is not None:
            fresh.reset()
        self._started = True
        self._last = (self._pos, self._pos)
        snap = MetricsSnapshot(interval_s=self.interval_s, maxmemory=initial.maxmemory, config=initial)
        for _ in range(min(warm, need - 1) if warmup else 0):
            snap = self.step()
        return snap

    # -- CacheBackend -------------------------------------------------------------------------------------
    @property
    def config(self) -> RedisConfig:
        if not self._started:
            return self.cfg.initial_config
        return self._sim.config  # type: ignore[attr-defined]

    def apply(self, config: RedisConfig) -> ApplyResult:
        self._require_started()
        try:
            self._sim.apply_config(config)  # type: ignore[attr-defined]
        except (ValueError, ConfigError) as e:
            return ApplyResult(ok=False, requested=config, applied=self.config, error=str(e))
        return ApplyResult(ok=True, requested=config, applied=self.config)

    def step(self) -> MetricsSnapshot:
        self._require_started()
        if self.exhausted:
            raise BackendError("SimBackend: the episode window is exhausted; call reset()")
        self._t += self._span
        i0 = self._pos
        i1 = self._stop if self._t >= self._t_end - 1e-9 else min(self.trace.index_at(self._t), self._stop)
        part = self.trace.slice(i0, i1)
        self._last_ttls = None
        if not self.client_ttl.identity:
            self._last_ttls = self.client_ttl.scale(part.ttls, self._key_classes()[part.keys])
            part = replace(part, ttls=self._last_ttls)
        fresh = self._freshness_of(self.workload_index)
        record = np.zeros((len(part), 2), dtype=np.float64) if fresh is not None else None
        # ``until``: idle-client timeouts and active expiry keep running to the end of the interval.
        snap = self._sim.run(part, 0, len(part), interval_s=self.interval_s, until=self._t, record=record)  # type: ignore[attr-defined]
        if fresh is not None and record is not None:
            fresh.update(part, record, snap)
        self._pos = i1
        self._last = (i0, i1)
        return snap

    # -- ClientTTLBackend ---------------------------------------------------------------------------------
    def set_client_ttl(self, ttl: ClientTTL) -> None:
        """Multiply the TTLs of the next intervals' writes by ``ttl``'s factor for each key's QoS class
        (a trace without tenants is one ``silver`` tenant)."""
        if not isinstance(ttl, ClientTTL):
            raise ConfigError(f"client_ttl: expected a ClientTTL, got {type(ttl).__name__}")
        self.client_ttl = ttl

    def _key_classes(self) -> np.ndarray:
        i = self.workload_index
        if i not in self._key_class:
            self._key_class[i] = key_class_index(keyspace_for(self.trace))
        return self._key_class[i]

    def _freshness_of(self, i: int) -> IntervalFreshness | None:
        """The workload's freshness bookkeeping, or ``None`` when its snapshots need none."""
        if i not in self._freshness:
            t = self.traces[i]
            multi = "key_tenant" in t.meta
            track = self._track_pref if self._track_pref is not None else (self._track_all or multi)
            self._freshness[i] = IntervalFreshness(keyspace_for(t), t.n_keys, tenants=multi) if track else None
        return self._freshness[i]

    def recent_requests(self) -> RequestSample:
        """Every request of the last interval (rate 1.0; the what-if estimator samples them itself)."""
        i0, i1 = self._last
        t = self.trace
        ttls = t.ttls[i0:i1] if self._last_ttls is None else self._last_ttls
        return RequestSample(
            keys=t.keys[i0:i1], sizes=t.sizes[i0:i1], timestamps=t.timestamps[i0:i1],
            ops=t.ops[i0:i1], ttls=ttls, rate=1.0,
        )

    @property
    def exhausted(self) -> bool:
        return self._started and self._t >= self._t_end - 1e-9

    def close(self) -> None:
        self._sims.clear()
        self._started = False

    def clone(self) -> SimBackend:
        """Deep copy of the episode state and the simulator (traces are shared: they are immutable)."""
        new = copy.copy(self)
        new._rng = copy.deepcopy(self._rng)
        new._sims = {}
        new._key_class = dict(self._key_class)
        new._freshness = {}
        if self._started:  # only the current workload's simulator (and freshness) has state worth copying
            new._sim = self._sim.clone()  # type: ignore[attr-defined]
            new._sims[self.workload_index] = new._sim
            fresh = self._freshness.get(self.workload_index)
            new._freshness[self.workload_index] = fresh.clone() if fresh is not None else None
        return new

    def _require_started(self) -> None:
        if not self._started:
            raise BackendError("SimBackend: call reset() before step()/apply()")
