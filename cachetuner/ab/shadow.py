"""Shadow estimates: what the treatment's configuration *would* have done on the control's traffic.

In live shadow mode only the control runs on the real Redis; the treatment decides every interval
but nothing is applied. Its effect is estimated SHARDS-style (Waldspurger et al., FAST'15): the
hash-sampled key stream (``splitmix64(key) mod 2^24 < R·2^24``, the sampler the live replayer and
:mod:`cachetuner.env.whatif` share) is fed to two persistent miniature
:class:`~cachetuner.sim.TieredCacheSim` instances whose data memory is scaled by ``R``:

- a *mirror* that runs the control's configuration, and
- a *treatment* mini that runs the treatment's configuration.

Both see the same sampled requests with the same seed (common random numbers). The estimate is a
difference estimator: ``treatment ≈ control (measured) + (mini treatment − mini mirror)`` for hit
ratio, byte hit ratio and p95 latency, so that errors the two minis share (sampling noise in which
keys were drawn, the mini's missing second tier, Redis's fixed memory) cancel. Backend calls,
evictions and memory follow from the estimated hit ratio and the treatment's ``maxmemory``; the
cost is then computed by the env's own cost function from that estimated snapshot.

:class:`ShadowBackend` wraps this as a :class:`~cachetuner.backend.CacheBackend`, so the treatment
runs in an ordinary :class:`~cachetuner.env.CacheTuningEnv` (its observations, what-if features
and cost are computed exactly as for a real cache) and never knows it is a shadow.

Approximations (measured against simulation mode in ``docs/ab.md`` and ``tests/ab``):
sampling error shrinks with the number of sampled keys (~1/sqrt(R·U)); p95 on a 1-5 % sample of an
interval's requests is noisy; the second tier is not simulated in the minis (the control's L2 share
of misses is applied to the treatment); clients are scaled by ``R`` so that per-client idle times
(the ``timeout`` knob) stay comparable.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from cachetuner.backend import (
    ApplyResult,
    BackendFacts,
    CacheBackend,
    RequestSample,
    SimulatedBackend,
    backend_facts,
)
from cachetuner.config import RedisConfig
from cachetuner.errors import BackendError
from cachetuner.keysample import LocalIds, grown, hash_sample_mask
from cachetuner.metrics import MetricsSnapshot
from cachetuner.sim.params import SimParams
from cachetuner.traces.trace import Trace


@dataclass
class Interval:
    """One interval of the control as the shadow sees it."""

    snapshot: MetricsSnapshot
    sample: RequestSample
    config: RedisConfig


class TeeBackend:
    """Passes every call to the control's backend and records each interval for the shadow.

    The control's env holds this instead of the backend itself; the inner backend's
    :meth:`facts` are passed through unchanged. Over a :class:`~cachetuner.backend.SimulatedBackend`
    (the simulator as control, to validate the estimator), ``TeeBackend(inner)`` is a
    :class:`SimulatedTeeBackend`, so the control env can still pin its episodes and fork.
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> TeeBackend:
        inner = args[0] if args else kwargs.get("inner")
        if cls is TeeBackend and isinstance(inner, SimulatedBackend):
            cls = SimulatedTeeBackend
        return super().__new__(cls)

    def __init__(self, inner: CacheBackend) -> None:
        self.inner = inner
        self.interval_s = inner.interval_s
        self.queue: deque[Interval] = deque()

    def facts(self) -> BackendFacts:
        return backend_facts(self.inner)

    @property
    def config(self) -> RedisConfig:
        return self.inner.config

    @property
    def exhausted(self) -> bool:
        return self.inner.exhausted

    def reset(self, *, seed: int | None = None) -> MetricsSnapshot:
        self.queue.clear()
        return self.inner.reset(seed=seed)

    def apply(self, config: RedisConfig) -> ApplyResult:
        return self.inner.apply(config)

    def step(self) -> MetricsSnapshot:
        in_force = self.inner.config
        snap = self.inner.step()
        self.queue.append(Interval(snap, self.inner.recent_requests(), in_force))
        return snap

    def recent_requests(self) -> RequestSample:
        return self.inner.recent_requests()

    def close(self) -> None:
        self.inner.close()


class SimulatedTeeBackend(TeeBackend):
    """A :class:`TeeBackend` over a :class:`~cachetuner.backend.SimulatedBackend` (what
    ``TeeBackend(inner)`` builds then): pinned resets pass through, and :meth:`clone` is a clone of
    the inner backend *without* the tee, so a hindsight fork never records into the shadow's queue."""

    inner: SimulatedBackend

    def reset(
        self,
        *,
        seed: int | None = None,
        workload: int | str | None = None,
        start: int | str | None = None,
        warmup: bool = True,
    ) -> MetricsSnapshot:
        self.queue.clear()
        return self.inner.reset(seed=seed, workload=workload, start=start, warmup=warmup)

    def clone(self) -> SimulatedBackend:
        return self.inner.clone()


class ShadowEstimator:
    """Mirror and treatment mini caches over one hash-sampled stream.

    Args:
        control_config, treatment_config: configurations at the start.
        rate: sampling rate ``R`` (raised to ``min_keys / n_keys_hint`` when a key count is known).
        params: the full cache's :class:`SimParams` (its fixed memory is removed before scaling).
        n_keys_hint: distinct keys of the full stream, when known (sizes the minis).
        key_bytes: key-name lengths by global key id (simulator: ``trace.key_bytes``).
        read_only: whether GET misses fill the cache (read-through).
        seed: seeds both minis identically.
    """

    def __init__(
        self,
        control_config: RedisConfig,
        treatment_config: RedisConfig,
        *,
        rate: float = 0.05,
        min_keys: int = 0,
        modulus: int = 1 << 24,
        params: SimParams | None = None,
        n_keys_hint: int | None = None,
        key_bytes: np.ndarray | None = None,
        read_only: bool = True,
        seed: int = 0,
    ) -> None:
        self.params = params or SimParams()
        if n_keys_hint and min_keys:
            rate = max(rate, min(1.0, min_keys / n_keys_hint))
        self.rate = float(rate)
        self.modulus = int(modulus)
        self._fixed = self.params.fixed_bytes
        self._global_key_bytes = key_bytes
        self._read_only = read_only
        self._seed = int(seed)
        self.control_config = control_config
        self.treatment_config = treatment_config
        self._hint = n_keys_hint
        self._build(int(self.rate * n_keys_hint * 1.2) + 1024 if n_keys_hint else 1 << 15)

    # -- configuration ------------------------------------------------------------------------------------
    @property
    def sampled_keys(self) -> int:
        """Distinct sampled keys the minis have seen (since their last rebuild)."""
        return len(self._ids)

    def mini_config(self, config: RedisConfig) -> RedisConfig:
        """The full config with its data memory scaled by the sampling rate."""
        return mini_config(config, self.rate, self._fixed)

    def set_configs(self, control: RedisConfig, treatment: RedisConfig) -> None:
        if control != self.control_config:
            self.control_config = control
            self.mirror.apply_config(self.mini_config(control))
        if treatment != self.treatment_config:
            self.treatment_config = treatment
            self.treat.apply_config(self.mini_config(treatment))

    # -- estimation ---------------------------------------------------------------------------------------
    def update(self, sample: RequestSample, interval_s: float) -> tuple[MetricsSnapshot, MetricsSnapshot]:
        """Feed one interval's (sampled) requests; return the mirror's and the treatment mini's snapshots."""
        keys = np.asarray(sample.keys, dtype=np.int64)
        if sample.coarser_than(self.rate):
            # Already sampled more coarsely upstream (live stream) by the same hash: take it as is.
            self.rate = float(sample.rate)
            self._build(self._capacity)
        keep = hash_sample_mask(keys, self.rate, self.modulus) if self.rate < sample.rate else None

        def sel(a: Any) -> np.ndarray:
            a = np.asarray(a)
            return a[keep] if keep is not None else a

        keys = sel(keys)
        local = self._local_ids(keys)
        n = len(keys)
        trace = Trace(
            name="shadow",
            timestamps=sel(sample.timestamps).astype(np.float64),
            keys=local,
            sizes=sel(sample.sizes).astype(np.int64),
            ops=sel(sample.ops).astype(np.uint8) if len(sample.ops) else np.zeros(n, np.uint8),
            ttls=sel(sample.ttls).astype(np.float64) if len(sample.ttls) else np.zeros(n),
            n_keys=self._capacity,
            key_bytes=self._key_bytes,
            read_only=self._read_only,
        )
        return self.mirror.run(trace, 0, n, interval_s=interval_s), self.treat.run(trace, 0, n, interval_s=interval_s)

    def estimate(self, control: MetricsSnapshot, mirror: MetricsSnapshot, treat: MetricsSnapshot) -> MetricsSnapshot:
        """The treatment's snapshot for an interval whose control snapshot was measured."""
        return estimate_snapshot(control, mirror, treat, rate=self.rate, fixed=self._fixed,
                                 config=self.treatment_config, params=self.params)  # fmt: skip

    # -- internals ----------------------------------------------------------------------------------------
    def _mini_params(self) -> SimParams:
        return mini_params(self.params, self.rate)

    def _build(self, capacity: int) -> None:
        from cachetuner.sim import TieredCacheSim

        self._capacity = int(capacity)
        self._ids = LocalIds()
        self._key_bytes = np.full(self._capacity, self.params.memory.default_key_bytes, dtype=np.int64)
        params = self._mini_params()
        self.mirror = TieredCacheSim(self._capacity, self.mini_config(self.control_config), params, self._seed,
                                     self._key_bytes)
        self.treat = TieredCacheSim(self._capacity, self.mini_config(self.treatment_config), params, self._seed,
                                    self._key_bytes)

    def _local_ids(self, keys: np.ndarray) -> np.ndarray:
        """Dense local ids for global key ids (the minis only hold the sampled keys)."""
        new = self._ids.unseen(keys)
        need = self._ids.next_id + len(new)
        if need > self._capacity:
            # Rebuild larger (only when no key-count hint was available): warm state is lost once.
            self._build(grown(self._capacity, need))
            return self._local_ids(keys)
        new_ids = self._ids.add(new)
        if self._global_key_bytes is not None:
            inside = new < len(self._global_key_bytes)
            self._key_bytes[new_ids[inside]] = self._global_key_bytes[new[inside]]
        return self._ids.lookup(keys)


def mini_config(config: RedisConfig, rate: float, fixed: int) -> RedisConfig:
    """``config`` with its data memory (``maxmemory`` less the fixed part) scaled by the sampling rate."""
    data = max(config.maxmemory - fixed, 0)
    return config.evolve(maxmemory=max(1, int(round(data * rate))) if config.maxmemory else 0)


def mini_params(params: SimParams, rate: float) -> SimParams:
    """The minis' parameters: no fixed memory, clients scaled by ``rate`` (comparable idle times), no L2."""
    clients = max(1, int(round(params.clients.n_clients * rate)))
    return params.model_copy(
        update={
            "memory": params.memory.model_copy(update={"base_used_memory": 0}),
            "clients": params.clients.model_copy(update={"client_buffer_bytes": 0, "n_clients": clients}),
            "l2": params.l2.model_copy(update={"enabled": False}),
        }
    )


def estimate_snapshot(
    control: MetricsSnapshot, mirror: MetricsSnapshot, treat: MetricsSnapshot, *, rate: float, fixed: int,
    config: RedisConfig, params: SimParams,
) -> MetricsSnapshot:  # fmt: skip
    """The treatment's snapshot of an interval: the measured ``control`` shifted by the difference of
    the two minis (``treat`` - ``mirror``), which saw the same sampled requests at ``rate``."""
    gets = control.gets
    # SHARDS-adj style: the hit-count difference of the minis, scaled by 1/R, over the *measured*
    # number of gets. Dividing by the sampled gets instead would let the luck of drawing (or not)
    # a few very hot keys, which hit in both minis, dilute or inflate the difference.
    hr = _ratio(control.hits, gets) + _ratio(treat.hits - mirror.hits, rate * gets)
    hr = float(np.clip(hr, 0.0, 1.0))
    bhr = control.byte_hit_ratio + _ratio(treat.byte_hits - mirror.byte_hits, rate * control.byte_requests)
    bhr = float(np.clip(bhr, 0.0, 1.0))
    hits = int(round(hr * gets))
    misses = gets - hits
    l2_share = control.l2_hits / control.misses if control.misses else 0.0
    used = int(fixed + treat.used_memory / rate) if rate > 0 else control.used_memory
    if config.maxmemory:
        used = min(used, config.maxmemory)

    def shifted(c: float, t: float, m: float) -> float:
        # never below what the treatment mini itself measured (or the control, if lower)
        return max(float(c) + float(t) - float(m), min(float(t), float(c)), 0.0)

    def quantile(q: float, measured: float, t: float, m: float) -> float:
        return _quantile(q, measured, control, gets, misses, l2_share, params.latency.miss_sigma, shifted(measured, t, m))

    def scaled(x: int) -> int:
        return int(round(x / rate)) if rate > 0 else 0

    misses_delta = misses - control.misses
    return MetricsSnapshot(
        interval_s=control.interval_s,
        requests=control.requests,
        gets=gets,
        hits=hits,
        misses=misses,
        byte_requests=control.byte_requests,
        byte_hits=int(round(bhr * control.byte_requests)),
        sets=max(0, control.sets + misses_delta),
        evictions=scaled(treat.evictions),
        expirations=scaled(treat.expirations),
        rejected_writes=scaled(treat.rejected_writes),
        commands=max(0, control.commands + misses_delta),
        used_memory=used,
        peak_used_memory=used,
        maxmemory=config.maxmemory,
        keys=scaled(treat.keys),
        connected_clients=control.connected_clients,
        reconnects=scaled(treat.reconnects),
        l2_hits=int(round(l2_share * misses)),
        l2_used_bytes=control.l2_used_bytes,
        latency_p50_ms=quantile(0.50, control.latency_p50_ms, treat.latency_p50_ms, mirror.latency_p50_ms),
        latency_p95_ms=quantile(0.95, control.latency_p95_ms, treat.latency_p95_ms, mirror.latency_p95_ms),
        latency_p99_ms=quantile(0.99, control.latency_p99_ms, treat.latency_p99_ms, mirror.latency_p99_ms),
        latency_mean_ms=shifted(control.latency_mean_ms, treat.latency_mean_ms, mirror.latency_mean_ms),
        miss_cost=control.miss_cost * (misses / control.misses) if control.misses else 0.0,
        config=config,
        stale=control.stale,
    )


def _quantile(q: float, measured: float, control: MetricsSnapshot, gets: int, misses: int, l2_share: float,
              sigma: float, fallback: float) -> float:  # fmt: skip
    """Latency quantile ``q`` of the treatment.

    When the quantile lies in the backend-call tail for both arms (slow share ``s > 1 - q`` with a
    margin), latency is a mixture in which only the slow share changes, and the slow path is
    lognormal (sigma ``latency.miss_sigma``): then ``Q_t = Q_c · exp(σ (z_t − z_c))`` with
    ``z = Φ⁻¹(1 − (1 − q) / s)``. Scaling the *measured* control quantile keeps the live
    backend's real latency level. Otherwise (quantile among hits) the minis' difference is used.
    """
    from scipy.stats import norm

    if gets <= 0 or not np.isfinite(measured) or measured <= 0:
        return fallback
    s_c = max(control.misses - control.l2_hits, 0) / gets
    s_t = misses * (1.0 - l2_share) / gets
    tail = 1.0 - q
    if min(s_c, s_t) <= tail * 1.25:
        return fallback
    z_c = norm.ppf(1.0 - tail / s_c)
    z_t = norm.ppf(1.0 - tail / s_t)
    return float(measured * np.exp(sigma * (z_t - z_c)))


def _ratio(a: float, b: float) -> float:
    return a / b if b else 0.0


class ShadowBackend:
    """The treatment's :class:`CacheBackend` in shadow mode: ``apply`` only changes what the minis
    run, ``step`` returns the estimate for the next interval the control has recorded.

    Drive it in lock-step after the control: ``env_control.step_config(...)`` (the interval passes
    on the real cache and the :class:`TeeBackend` records it), then ``env_treatment.step_config(...)``.
    """

    def __init__(
        self, tee: TeeBackend, *, rate: float, min_keys: int = 0, modulus: int = 1 << 24,
        initial_config: RedisConfig | None = None,
    ) -> None:
        self.tee = tee
        self._initial = initial_config
        self.interval_s = tee.interval_s
        self._rate, self._min_keys, self._modulus = rate, min_keys, modulus
        self.estimator: ShadowEstimator | None = None
        self._config = tee.config
        self._last = RequestSample(rate=1.0)
        self.last_measured: MetricsSnapshot | None = None  # the control snapshot of the last estimated interval

    def facts(self) -> BackendFacts:
        """The control's facts (same workload, same bounds), except the working set, which the
        treatment env has never been given (its miss-ratio curves size objects without it)."""
        return replace(backend_facts(self.tee.inner), working_set_bytes=None)

    @property
    def config(self) -> RedisConfig:
        return self._config

    @property
    def exhausted(self) -> bool:
        return self.tee.exhausted and not self.tee.queue

    def reset(self, *, seed: int | None = None) -> MetricsSnapshot:
        """Start from ``initial_config`` (a fixed-config treatment) or else from the control's
        current config (the treatment starts where production is)."""
        facts = backend_facts(self.tee.inner)
        control = self.tee.queue[0].config if self.tee.queue else self.tee.config
        self._config = self._initial if self._initial is not None else control
        self.estimator = ShadowEstimator(
            control,
            self._config,
            rate=self._rate,
            min_keys=self._min_keys,
            modulus=self._modulus,
            params=facts.sim_params,
            n_keys_hint=facts.n_keys,
            key_bytes=facts.key_bytes,
            read_only=facts.read_only,
            seed=0 if seed is None else int(seed),
        )
        return MetricsSnapshot(interval_s=self.interval_s, maxmemory=self._config.maxmemory, config=self._config)

    def apply(self, config: RedisConfig) -> ApplyResult:
        self._config = config
        return ApplyResult(ok=True, requested=config, applied=config)

    def step(self) -> MetricsSnapshot:
        if self.estimator is None:
            raise BackendError("ShadowBackend: call reset() first")
        if not self.tee.queue:
            raise BackendError("ShadowBackend: no control interval recorded; step the control env first")
        iv = self.tee.queue.popleft()
        self.estimator.set_configs(iv.config, self._config)
        mirror, treat = self.estimator.update(iv.sample, iv.snapshot.interval_s)
        self._last = iv.sample
        self.last_measured = iv.snapshot
        return self.estimator.estimate(iv.snapshot, mirror, treat)

    def recent_requests(self) -> RequestSample:
        return self._last

    def close(self) -> None:
        return None
