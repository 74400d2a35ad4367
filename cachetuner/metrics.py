"""The per-interval metrics snapshot every backend emits.

The simulator computes these fields exactly; the live backend reads the same fields from
Prometheus (redis_exporter + the replayer's client-side histograms). Names follow the redis_exporter
metric they correspond to, so that the env, the daemon and the A/B harness never need to know which
backend produced a snapshot.

| field | live source (PromQL, over the interval) |
|---|---|
| hits / misses | ``increase(redis_keyspace_hits_total)`` / ``increase(redis_keyspace_misses_total)`` |
| evictions / expirations | ``increase(redis_evicted_keys_total)`` / ``increase(redis_expired_keys_total)`` |
| used_memory / maxmemory | ``redis_memory_used_bytes`` / ``redis_memory_max_bytes`` |
| commands | ``increase(redis_commands_processed_total)`` |
| connected_clients | ``redis_connected_clients`` |
| latency_p*_ms | ``histogram_quantile`` over ``cachetuner_request_latency_seconds_bucket`` (client side) |
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from cachetuner.config import RedisConfig


class _HitRatios:
    """Ratios shared by a whole interval and a tenant's share of it (one definition of each)."""

    gets: int
    hits: int
    byte_requests: int
    byte_hits: int

    @property
    def hit_ratio(self) -> float:
        return self.hits / self.gets if self.gets else 0.0

    @property
    def byte_hit_ratio(self) -> float:
        return self.byte_hits / self.byte_requests if self.byte_requests else 0.0


@dataclass
class TenantMetrics(_HitRatios):
    """One tenant's share of an interval (multi-tenant workloads; ``MetricsSnapshot.tenants``)."""

    gets: int = 0
    hits: int = 0
    byte_requests: int = 0
    byte_hits: int = 0
    stale_hits: int = 0        # hits on an item written before its group's last source update
    latency_p95_ms: float = 0.0

    @property
    def stale_share(self) -> float:
        return self.stale_hits / self.hits if self.hits else 0.0


@dataclass
class MetricsSnapshot(_HitRatios):
    """What happened during one tuning interval, plus the state at its end."""

    interval_s: float
    requests: int = 0          # client requests (gets + sets + deletes) issued in the interval
    gets: int = 0
    hits: int = 0              # L1 (Redis) hits, = keyspace_hits
    misses: int = 0            # L1 misses, = keyspace_misses
    byte_requests: int = 0     # bytes requested by gets
    byte_hits: int = 0         # bytes served from L1
    sets: int = 0              # explicit sets + read-through fills
    evictions: int = 0
    expirations: int = 0
    rejected_writes: int = 0   # OOM errors under noeviction
    commands: int = 0          # commands processed by Redis (gets + sets + deletes as seen by the server)
    used_memory: int = 0       # bytes at interval end (Redis used_memory: data + overheads + client buffers)
    peak_used_memory: int = 0  # max used_memory within the interval
    maxmemory: int = 0
    keys: int = 0              # keys resident in L1 at interval end
    connected_clients: int = 0
    reconnects: int = 0        # client reconnects caused by idle `timeout`
    l2_hits: int = 0           # L1 misses served by the second tier
    l2_used_bytes: int = 0
    latency_p50_ms: float = 0.0
    latency_p95_ms: float = 0.0
    latency_p99_ms: float = 0.0
    latency_mean_ms: float = 0.0
    miss_cost: float = 0.0     # cost of backend (inference) calls caused by misses, in cost units
    config: RedisConfig = field(default_factory=RedisConfig)
    stale: bool = False        # live path: metrics were missing or NaN; values are the last known
    stale_hits: int = 0        # hits served stale (cachetuner.ttl: written before a source update)
    tenants: dict[str, TenantMetrics] = field(default_factory=dict)  # per tenant, when the workload has them

    @property
    def l2_hit_ratio(self) -> float:
        """Share of L1 misses served by L2."""
        return self.l2_hits / self.misses if self.misses else 0.0

    @property
    def request_rate(self) -> float:
        return self.requests / self.interval_s if self.interval_s > 0 else 0.0

    @property
    def memory_utilisation(self) -> float:
        return self.used_memory / self.maxmemory if self.maxmemory > 0 else 0.0

    def to_dict(self) -> dict:
        d = asdict(self)
        d["config"] = self.config.model_dump()
        d.update(hit_ratio=self.hit_ratio, byte_hit_ratio=self.byte_hit_ratio, l2_hit_ratio=self.l2_hit_ratio)
        return d

    def is_finite(self) -> bool:
        return all(
            math.isfinite(v) for v in (self.latency_p50_ms, self.latency_p95_ms, self.latency_p99_ms, self.miss_cost)
        )


#: Client-side latency histogram buckets (seconds, upper bounds; +Inf implied). Shared by the
#: simulator's latency model and the replayer's prometheus_client Histogram so that simulated and
#: live p95 are computed the same way.
LATENCY_BUCKETS_S: tuple[float, ...] = (
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
    0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 7.5, 10.0, 20.0,
)


def histogram_quantile(
    q: float, bucket_counts: Sequence[float] | np.ndarray, bounds: tuple[float, ...] = LATENCY_BUCKETS_S
) -> float:
    """Prometheus ``histogram_quantile`` semantics on non-cumulative ``bucket_counts``.

    ``bucket_counts`` has ``len(bounds) + 1`` entries (last = +Inf bucket). Linear interpolation
    inside the bucket, lower bound 0 for the first bucket; a quantile in the +Inf bucket returns the
    highest finite bound (as Prometheus does). Returns seconds; NaN when there are no observations.
    """
    counts = np.asarray(bucket_counts, dtype=np.float64)
    total = counts.sum()
    if total <= 0:
        return float("nan")
    cum = np.cumsum(counts)
    rank = q * total
    i = int(np.searchsorted(cum, rank, side="left"))
    if i >= len(bounds):
        return float(bounds[-1])
    lo = 0.0 if i == 0 else bounds[i - 1]
    hi = bounds[i]
    prev = 0.0 if i == 0 else cum[i - 1]
    in_bucket = counts[i]
    if in_bucket <= 0:
        return float(hi)
    return float(lo + (hi - lo) * (rank - prev) / in_bucket)
