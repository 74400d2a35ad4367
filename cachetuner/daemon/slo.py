"""Judge one metrics snapshot against a target's SLO.

Only fresh snapshots are judged: a stale snapshot (Prometheus down, NaN) carries the last known
values, so judging it would trigger rollbacks on data that says nothing about the current config.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cachetuner.daemon.config import SLO
from cachetuner.metrics import MetricsSnapshot


@dataclass
class SLOReport:
    judged: bool                      # False for stale / missing snapshots
    breaches: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.judged and not self.breaches

    @property
    def breached(self) -> bool:
        return self.judged and bool(self.breaches)


def evaluate_slo(slo: SLO, snap: MetricsSnapshot | None) -> SLOReport:
    """Which SLO terms ``snap`` breaks (human-readable, one string per term)."""
    if snap is None or snap.stale or not snap.is_finite():
        return SLOReport(judged=False)
    breaches: list[str] = []
    if slo.p95_latency_ms is not None and snap.latency_p95_ms > slo.p95_latency_ms:
        breaches.append(f"p95 {snap.latency_p95_ms:.2f} ms > {slo.p95_latency_ms:g} ms")
    if slo.min_hit_ratio is not None and snap.gets >= slo.min_gets and snap.hit_ratio < slo.min_hit_ratio:
        breaches.append(f"hit ratio {snap.hit_ratio:.3f} < {slo.min_hit_ratio:g}")
    for name, target in slo.tenants.items():
        t = snap.tenants.get(name)
        if t is not None and target.breached(t.gets, t.latency_p95_ms):
            breaches.append(f"tenant {name} p95 {t.latency_p95_ms:.2f} ms > {target.p95_ms:g} ms")
    if slo.max_evictions_per_s is not None and snap.interval_s > 0:
        rate = snap.evictions / snap.interval_s
        if rate > slo.max_evictions_per_s:
            breaches.append(f"evictions {rate:.1f}/s > {slo.max_evictions_per_s:g}/s")
    return SLOReport(judged=True, breaches=breaches)


def state_summary(snap: MetricsSnapshot | None) -> dict[str, object] | None:
    """The few figures the audit log keeps per decision."""
    if snap is None:
        return None
    return {
        "stale": bool(snap.stale),
        "interval_s": snap.interval_s,
        "requests": snap.requests,
        "gets": snap.gets,
        "hit_ratio": round(snap.hit_ratio, 5),
        "evictions": snap.evictions,
        "used_memory": snap.used_memory,
        "maxmemory": snap.maxmemory,
        "p95_ms": round(snap.latency_p95_ms, 4) if snap.is_finite() else None,
        "p99_ms": round(snap.latency_p99_ms, 4) if snap.is_finite() else None,
    }
