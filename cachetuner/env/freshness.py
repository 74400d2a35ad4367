"""Stale hits and per-tenant figures of one simulated interval, carried across intervals.

:func:`cachetuner.ttl.run.simulate_ttl` computes freshness after a whole replay; the env needs it per
interval, so :class:`IntervalFreshness` keeps the one piece of state that crosses interval boundaries,
the time of each key's last admitted write, and applies the same definitions
(:mod:`cachetuner.ttl.outcomes`): a hit is stale when its group's last source update lies after the
write of the item it returned. Multi-tenant traces also get ``MetricsSnapshot.tenants`` (so
``reward.tenant_slo`` works on the simulator too).
"""

from __future__ import annotations

import copy

import numpy as np

from cachetuner.metrics import MetricsSnapshot, TenantMetrics
from cachetuner.traces.trace import Trace
from cachetuner.ttl.keyspace import KeySpace
from cachetuner.ttl.outcomes import last_write_time, tenant_intervals


class IntervalFreshness:
    """Per-episode freshness bookkeeping of one workload's trace.

    Args:
        keyspace: the trace's groups, tenants and source updates (:func:`cachetuner.ttl.keyspace_for`).
        n_keys: the trace's key count.
        tenants: also fill ``MetricsSnapshot.tenants``.
    """

    def __init__(self, keyspace: KeySpace, n_keys: int, *, tenants: bool) -> None:
        self.keyspace = keyspace
        self.tenants = tenants
        self._last_write = np.full(n_keys, -np.inf)

    def reset(self) -> None:
        """An empty cache: no key has been written."""
        self._last_write.fill(-np.inf)

    def clone(self) -> IntervalFreshness:
        new = copy.copy(self)
        new._last_write = self._last_write.copy()
        return new

    def update(self, part: Trace, record: np.ndarray, snap: MetricsSnapshot) -> None:
        """Account the interval ``part`` (its requests, the simulator's per-request ``record``) into ``snap``."""
        if len(part) == 0:
            return
        keys = part.keys.astype(np.int64)
        ts = part.timestamps.astype(np.float64)
        written = record[:, 0] >= 2.0
        hit = (record[:, 0] % 2.0) == 1.0
        wt = last_write_time(keys, ts, written)
        wt = np.where(np.isnan(wt), self._last_write[keys], wt)
        stale = hit & (self.keyspace.last_update(self.keyspace.group[keys], ts) > wt)
        np.maximum.at(self._last_write, keys[written], ts[written])
        snap.stale_hits = int(stale.sum())
        if self.tenants:
            per = tenant_intervals(part, record, self.keyspace, stale, np.zeros(len(part), np.int64), 1)
            snap.tenants = {
                name: TenantMetrics(
                    gets=int(t["gets"][0]), hits=int(t["hits"][0]), byte_requests=int(t["byte_requests"][0]),
                    byte_hits=int(t["byte_hits"][0]), stale_hits=int(t["stale_hits"][0]),
                    latency_p95_ms=float(t["p95_ms"][0]),
                )
                for name, t in per.items()
            }  # fmt: skip
