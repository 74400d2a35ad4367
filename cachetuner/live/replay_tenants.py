"""Per-tenant accounting of the replayer and its Prometheus metrics (a ``tenant`` label).

For a multi-tenant trace (:mod:`cachetuner.tenants`) the replayer sends each key under its name
``t:{tenant}:{biz}:{key}`` and, per batch, attributes every request to its tenant: requests, GETs,
hits, misses, requested and hit bytes, and its latency (a hit waits the batch round trip, a miss the
two round trips plus its simulated backend call, the same draws as the global histogram). Exported as

``cachetuner_tenant_requests_total{tenant}``, ``cachetuner_tenant_gets_total{tenant}``,
``cachetuner_tenant_hits_total{tenant}``, ``cachetuner_tenant_misses_total{tenant}``,
``cachetuner_tenant_requested_bytes_total{tenant}``, ``cachetuner_tenant_hit_bytes_total{tenant}`` and
``cachetuner_tenant_request_latency_seconds{tenant}`` (histogram, the shared buckets).

The live backend reads them back with PromQL into ``MetricsSnapshot.tenants``.
"""

from __future__ import annotations

import threading
from bisect import bisect_left
from itertools import accumulate

import hiredis
from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily

from cachetuner.live.replay_encoding import Column
from cachetuner.metrics import LATENCY_BUCKETS_S
from cachetuner.traces.trace import Op

#: counter attribute -> (metric name without _total, help)
TENANT_COUNTERS = {
    "requests": ("cachetuner_tenant_requests", "Trace requests replayed, per tenant"),
    "gets": ("cachetuner_tenant_gets", "GETs replayed, per tenant"),
    "hits": ("cachetuner_tenant_hits", "GETs answered from Redis, per tenant"),
    "misses": ("cachetuner_tenant_misses", "GETs that missed, per tenant"),
    "req_bytes": ("cachetuner_tenant_requested_bytes", "Bytes requested by GETs, per tenant"),
    "hit_bytes": ("cachetuner_tenant_hit_bytes", "Bytes of GETs served by Redis, per tenant"),
    "stale_hits": ("cachetuner_tenant_stale_hits", "Hits on an item written before its group's last source update"),
}
LATENCY_METRIC = "cachetuner_tenant_request_latency_seconds"


class TenantCounters:
    """Per-tenant counters and latency histograms behind one collector (added to once a batch)."""

    def __init__(self, tenants: list[str], registry: CollectorRegistry) -> None:
        self.tenants = list(tenants)
        n = len(tenants)
        self.counts: dict[str, list[int]] = {k: [0] * n for k in TENANT_COUNTERS}
        self._bounds = [float(b) for b in LATENCY_BUCKETS_S]
        self.hist = [[0] * (len(self._bounds) + 1) for _ in range(n)]
        self.hist_sum = [0.0] * n
        self._lock = threading.Lock()
        registry.register(self)

    def as_dict(self) -> dict[str, dict[str, int]]:
        """The replayer's own per-tenant counts (what an integration test compares Prometheus with)."""
        with self._lock:
            return {t: {k: v[i] for k, v in self.counts.items()} for i, t in enumerate(self.tenants)}

    def collect(self):  # noqa: ANN201 (prometheus_client collector protocol)
        with self._lock:
            counts = {k: list(v) for k, v in self.counts.items()}
            hist = [list(accumulate(h)) for h in self.hist]
            sums = list(self.hist_sum)
        for attr, (name, doc) in TENANT_COUNTERS.items():
            fam = CounterMetricFamily(name, doc, labels=["tenant"])
            for i, t in enumerate(self.tenants):
                fam.add_metric([t], counts[attr][i])
            yield fam
        fam_h = HistogramMetricFamily(LATENCY_METRIC, "Client-side request latency, per tenant", labels=["tenant"])
        for i, t in enumerate(self.tenants):
            buckets = [(repr(b), c) for b, c in zip(self._bounds, hist[i][:-1], strict=True)] + [("+Inf", hist[i][-1])]
            fam_h.add_metric([t], buckets, sums[i])
        yield fam_h

    def describe(self):  # noqa: ANN201
        return []


class TenantAccountant:
    """Attributes a batch's requests to tenants (one Python pass over the batch; tenant traces only).

    Stale hits: the replayer is the only writer, and a request of a key is sent only after the fill of
    that key's previous miss, so the item a hit returns is the one of the key's last write (a SET, or the
    fill of its last miss). The hit is stale when ``last_update[i]``, the last source update of the key's
    group at the request's trace time, lies after that write's trace time (as in the simulator).
    """

    def __init__(
        self, key_tenant: list[int], keys: Column, ops: Column, sizes: Column, counters: TenantCounters,
        timestamps: list[float], last_update: list[float],
    ) -> None:  # fmt: skip
        self.key_tenant, self.keys, self.ops, self.sizes, self.counters = key_tenant, keys, ops, sizes, counters
        self.ts, self.last_update = timestamps, last_update
        self.written: dict[int, float] = {}  # key -> trace time of its last write
        self._bounds = [float(b) for b in LATENCY_BUCKETS_S]

    def account(self, reps: list, batch_idx: list[int], rtt: float, miss_draws: list[float]) -> None:
        kt, keys, ops, sizes, bounds = self.key_tenant, self.keys, self.ops, self.sizes, self._bounds
        get_op, set_op = int(Op.GET), int(Op.SET)
        c = self.counters
        n = len(c.tenants)
        req, gets, hits, misses, breq, bhit, stale = ([0] * n for _ in range(7))
        ts, last_update, written = self.ts, self.last_update, self.written
        lat: list[list[float]] = [[] for _ in range(n)]
        n_rtt = [0] * n
        j = 0
        for pos, idx in enumerate(batch_idx):
            k = keys[idx]
            t = kt[k]
            req[t] += 1
            op = ops[idx]
            if op == get_op:
                gets[t] += 1
                sz = sizes[idx]
                breq[t] += sz
                r = reps[pos]
                if r is None:
                    misses[t] += 1
                    written[k] = ts[idx]  # the fill of this miss (harmless without one: a later hit needs a SET)
                    lat[t].append(2 * rtt + miss_draws[j])
                    j += 1
                    continue
                if r.__class__ is bytes:
                    hits[t] += 1
                    bhit[t] += sz
                    if last_update[idx] > written.get(k, float("-inf")):
                        stale[t] += 1
            elif op == set_op and not isinstance(reps[pos], hiredis.ReplyError):
                written[k] = ts[idx]
            n_rtt[t] += 1
        b_rtt = bisect_left(bounds, rtt)
        with c._lock:
            for attr, vals in (("requests", req), ("gets", gets), ("hits", hits), ("misses", misses),
                               ("req_bytes", breq), ("hit_bytes", bhit), ("stale_hits", stale)):  # fmt: skip
                tot = c.counts[attr]
                for t in range(n):
                    tot[t] += vals[t]
            for t in range(n):
                h = c.hist[t]
                if n_rtt[t]:
                    h[b_rtt] += n_rtt[t]
                    c.hist_sum[t] += rtt * n_rtt[t]
                for v in lat[t]:
                    h[bisect_left(bounds, v)] += 1
                c.hist_sum[t] += sum(lat[t])
