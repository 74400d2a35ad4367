"""Paired miniature caches: two :class:`~cachetuner.sim.TieredCacheSim` instances over one hash-sampled
request stream, one running the configuration in force (the *mirror*), one another configuration.

Why paired: both see exactly the same sampled requests with the same seed (common random numbers), so
the *difference* of their hits estimates what the other configuration would have changed with far less
noise than two independent estimates, and the errors they share (which keys were drawn, the missing
second tier, Redis's fixed memory) cancel. The shadow A/B estimates a candidate policy's effect this way
(:mod:`cachetuner.ab.shadow`), and the baseline guard (:mod:`cachetuner.control.guard`) what a static
configuration would have cost on the traffic the tuner served.

Data memory (``maxmemory`` less Redis's fixed part) is scaled by the sampling rate ``R``; clients by ``R``
too, so per-client idle times (the ``timeout`` knob) stay comparable. Sampling error shrinks with the
number of sampled keys (~1/sqrt(R·U)).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cachetuner.backend import RequestSample
from cachetuner.config import RedisConfig
from cachetuner.keysample import LocalIds, grown, hash_sample_mask
from cachetuner.metrics import MetricsSnapshot
from cachetuner.sim.params import SimParams
from cachetuner.traces.trace import Op, Trace


class PairedMinis:
    """Mirror and treatment mini caches over one hash-sampled stream (common random numbers).

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
        self.last_keys = np.zeros(0, dtype=np.int64)  # see update(outcomes=True)
        self.last_hit_diff = np.zeros(0, dtype=np.int64)
        self._build(int(self.rate * n_keys_hint * 1.2) + 1024 if n_keys_hint else 1 << 15)

    # -- configuration ------------------------------------------------------------------------------------
    @property
    def sampled_keys(self) -> int:
        """Distinct sampled keys the minis have seen (since their last rebuild)."""
        return len(self._ids)

    def mini_config(self, config: RedisConfig) -> RedisConfig:
        """The full config with its data memory scaled by the sampling rate."""
        return scaled_config(config, self.rate, self._fixed)

    def set_configs(self, control: RedisConfig, treatment: RedisConfig) -> None:
        if control != self.control_config:
            self.control_config = control
            self.mirror.apply_config(self.mini_config(control))
        if treatment != self.treatment_config:
            self.treatment_config = treatment
            self.treat.apply_config(self.mini_config(treatment))

    # -- estimation ---------------------------------------------------------------------------------------
    def update(
        self, sample: RequestSample, interval_s: float, *, outcomes: bool = False
    ) -> tuple[MetricsSnapshot, MetricsSnapshot]:
        """Feed one interval's (sampled) requests; return the mirror's and the treatment mini's snapshots.

        ``outcomes``: also keep, per sampled request, its global key and mirror hit minus treatment hit
        (GETs; 0 for other ops) in :attr:`last_keys` / :attr:`last_hit_diff`, for a per-key variance."""
        keys = np.asarray(sample.keys, dtype=np.int64)
        if len(keys) and sample.rate < 1.0 and sample.rate < self.rate - 1e-12:
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
        if not outcomes:
            return self.mirror.run(trace, 0, n, interval_s=interval_s), self.treat.run(trace, 0, n, interval_s=interval_s)
        rec_m, rec_t = np.zeros((n, 2)), np.zeros((n, 2))
        m = self.mirror.run(trace, 0, n, interval_s=interval_s, record=rec_m)
        t = self.treat.run(trace, 0, n, interval_s=interval_s, record=rec_t)
        hit_m = (rec_m[:, 0].astype(np.int64) & 1).astype(np.int64)
        hit_t = (rec_t[:, 0].astype(np.int64) & 1).astype(np.int64)
        self.last_keys = keys
        self.last_hit_diff = np.where(trace.ops == Op.GET, hit_m - hit_t, 0)
        return m, t

    # -- internals ----------------------------------------------------------------------------------------
    def _mini_params(self) -> SimParams:
        return scaled_params(self.params, self.rate)

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


def scaled_config(config: RedisConfig, rate: float, fixed: int) -> RedisConfig:
    """``config`` with its data memory (``maxmemory`` less the fixed part) scaled by the sampling rate."""
    data = max(config.maxmemory - fixed, 0)
    return config.evolve(maxmemory=max(1, int(round(data * rate))) if config.maxmemory else 0)


def scaled_params(params: SimParams, rate: float) -> SimParams:
    """The minis' parameters: no fixed memory, clients scaled by ``rate`` (comparable idle times), no L2."""
    clients = max(1, int(round(params.clients.n_clients * rate)))
    return params.model_copy(
        update={
            "memory": params.memory.model_copy(update={"base_used_memory": 0}),
            "clients": params.clients.model_copy(update={"client_buffer_bytes": 0, "n_clients": clients}),
            "l2": params.l2.model_copy(update={"enabled": False}),
        }
    )


__all__ = ["PairedMinis", "scaled_config", "scaled_params"]
