"""Replay a trace through the simulator under a TTL policy, interval by interval, and report it.

The policy sets the trace's TTL column (:func:`~cachetuner.ttl.base.apply_ttl_policy`); the simulator
replays it with a per-request record (hit, write admitted, latency), from which freshness and the
per-tenant figures are computed exactly (:mod:`cachetuner.ttl.outcomes`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import get_args

import numpy as np

from cachetuner.config import Policy, RedisConfig
from cachetuner.errors import ConfigError, UnknownNameError
from cachetuner.metrics import MetricsSnapshot, TenantMetrics
from cachetuner.sim.params import SimParams
from cachetuner.sim.simulator import TieredCacheSim
from cachetuner.traces.trace import Trace
from cachetuner.ttl.base import TTLPolicy, apply_ttl_policy, make_ttl_policy
from cachetuner.ttl.keyspace import KeySpace, keyspace_for
from cachetuner.ttl.outcomes import interval_ids, stale_hits, tenant_intervals

#: Called after each interval with (intervals done, intervals in all).
ProgressFn = Callable[[int, int], None]


def check_interval(interval_s: float, name: str = "interval_s") -> float:
    """``interval_s`` if it is a finite number of seconds > 0; a one-line :class:`ConfigError` naming ``name``."""
    if not (math.isfinite(interval_s) and interval_s > 0):
        raise ConfigError(f"{name}: seconds per interval must be a finite number > 0, got {interval_s!r}")
    return interval_s


def n_intervals(trace: Trace, interval_s: float) -> int:
    """How many intervals of ``interval_s`` seconds ``trace`` spans (what :func:`simulate_ttl` replays)."""
    iv = interval_ids(trace.timestamps, check_interval(interval_s))
    return int(iv[-1]) + 1 if len(iv) else 0


def check_warmup(warmup: int, trace: Trace, interval_s: float, name: str = "warmup") -> int:
    """``warmup`` if it is >= 0 and leaves at least one of ``trace``'s intervals to report on; a one-line
    :class:`ConfigError` naming ``name`` otherwise (a warmup as long as the run reports only zeros)."""
    if warmup < 0:
        raise ConfigError(f"{name}: cold-start intervals must be >= 0, got {warmup}")
    n = n_intervals(trace, interval_s)
    if warmup >= n:
        raise ConfigError(f"{name}: {warmup} warmup intervals leave none of the {n} intervals of {interval_s:g} s in "
                          f"{trace.name} to report on; give fewer than {n}")  # fmt: skip
    return warmup


#: Largest ``maxmemory`` share of the working set a TTL run takes (1 already holds every key's value).
MAX_MEMORY_SHARE = 100.0


def check_share(share: float, name: str = "memory_share") -> float:
    """``share`` if it is a finite number in (0, :data:`MAX_MEMORY_SHARE`]; a one-line :class:`ConfigError` naming ``name``."""
    if not (math.isfinite(share) and 0 < share <= MAX_MEMORY_SHARE):
        raise ConfigError(f"{name}: a share of the working set must be a finite number in (0, {MAX_MEMORY_SHARE:g}], "
                          f"got {share!r}")  # fmt: skip
    return share


def maxmemory_for(trace: Trace, share: float, name: str = "memory_share") -> int:
    """``maxmemory`` in bytes as ``share`` of ``trace``'s working set. A share outside :func:`check_share`'s range, or
    one that rounds to 0 B (which Redis reads as *unlimited*), is a one-line :class:`ConfigError` naming ``name``."""
    check_share(share, name)
    ws = trace.working_set_bytes()
    maxmem = int(ws * share)
    if maxmem < 1:
        raise ConfigError(f"{name}: {share:g} x the working set of {trace.name} ({ws:,} B) is 0 B, which Redis reads "
                          "as unlimited; give a larger share")  # fmt: skip
    return maxmem


def ttl_redis_config(maxmemory: int, maxmemory_policy: str, name: str = "maxmemory_policy") -> RedisConfig:
    """The :class:`RedisConfig` of a TTL run; an unknown policy is a one-line error listing the valid ones."""
    valid = get_args(Policy)
    if maxmemory_policy not in valid:
        raise UnknownNameError(f"{name} {maxmemory_policy!r}: unknown maxmemory-policy; valid: {', '.join(valid)}")
    return RedisConfig(maxmemory=maxmemory, maxmemory_policy=maxmemory_policy)  # type: ignore[arg-type]


@dataclass
class TTLRun:
    """One replay: the policy's trace, the per-request record, the snapshots and per-interval series."""

    policy: str
    trace: Trace
    record: np.ndarray
    snapshots: list[MetricsSnapshot]
    series: dict[str, np.ndarray]
    tenants: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)

    def totals(self) -> dict[str, float]:
        """Whole-run figures (ratios over all gets, p95 as the mean of interval p95s)."""
        s = self.snapshots
        gets = sum(x.gets for x in s)
        hits = sum(x.hits for x in s)
        breq = sum(x.byte_requests for x in s)
        bhit = sum(x.byte_hits for x in s)
        written = self.record[:, 0] >= 2.0
        return {
            "hit_ratio": hits / gets if gets else 0.0,
            "byte_hit_ratio": bhit / breq if breq else 0.0,
            "stale_share": float(self.series["stale_hits"].sum() / hits) if hits else 0.0,
            "p95_ms": float(np.mean([x.latency_p95_ms for x in s])) if s else 0.0,
            "mean_ttl_s": float(self.trace.ttls[written].mean()) if written.any() else 0.0,
            "evictions": float(sum(x.evictions for x in s)),
            "expirations": float(sum(x.expirations for x in s)),
            "intervals": float(len(s)),
        }


def simulate_ttl(
    trace: Trace,
    policy: str | TTLPolicy,
    config: RedisConfig,
    *,
    interval_s: float = 60.0,
    params: SimParams | None = None,
    keyspace: KeySpace | None = None,
    seed: int = 0,
    max_intervals: int | None = None,
    progress: ProgressFn | None = None,
    no_ttl_classes: tuple[str, ...] = (),
) -> TTLRun:
    """Replay ``trace`` (its TTLs set by ``policy``) through a simulator holding ``config``;
    ``no_ttl_classes``: tenants of these QoS classes write without TTL (see ``apply_ttl_policy``)."""
    check_interval(interval_s)
    ks = keyspace if keyspace is not None else keyspace_for(trace)
    pol = make_ttl_policy(policy)
    tr = apply_ttl_policy(trace, pol, ks, no_ttl_classes=no_ttl_classes)
    iv = interval_ids(tr.timestamps, interval_s)
    n_int = int(iv[-1]) + 1 if len(iv) else 0
    if max_intervals is not None:
        n_int = min(n_int, max_intervals)
    bounds = np.searchsorted(iv, np.arange(n_int + 1), side="left")
    tr = tr.slice(0, int(bounds[-1]))
    iv = iv[: len(tr)]
    sim = TieredCacheSim.for_trace(tr, config, params, seed=seed)
    record = np.zeros((len(tr), 2), dtype=np.float64)
    snaps: list[MetricsSnapshot] = []
    t0 = float(tr.timestamps[0]) if len(tr) else 0.0
    for j in range(n_int):
        a, b = int(bounds[j]), int(bounds[j + 1])
        snaps.append(sim.run(tr, a, b, interval_s, until=t0 + (j + 1) * interval_s, record=record[a:b]))
        if progress is not None:
            progress(j + 1, n_int)
    stale = stale_hits(tr, record, ks)
    written = record[:, 0] >= 2.0
    n_w = np.bincount(iv, weights=written.astype(np.float64), minlength=n_int)[:n_int]
    ttl_w = np.bincount(iv, weights=np.where(written, tr.ttls, 0.0), minlength=n_int)[:n_int]
    hits = np.array([s.hits for s in snaps], dtype=np.float64)
    st = np.bincount(iv, weights=stale.astype(np.float64), minlength=n_int)[:n_int]
    series = {
        "hit_ratio": np.array([s.hit_ratio for s in snaps]),
        "byte_hit_ratio": np.array([s.byte_hit_ratio for s in snaps]),
        "p95_ms": np.array([s.latency_p95_ms for s in snaps]),
        "stale_hits": st,
        "stale_share": np.divide(st, hits, out=np.zeros(n_int), where=hits > 0),
        "mean_ttl_s": np.divide(ttl_w, n_w, out=np.zeros(n_int), where=n_w > 0),
        "writes": n_w,
    }
    tenants = tenant_intervals(tr, record, ks, stale, iv, n_int)
    for j, snap in enumerate(snaps):
        snap.stale_hits = int(st[j])
        snap.tenants = {
            name: TenantMetrics(
                gets=int(t["gets"][j]), hits=int(t["hits"][j]), byte_requests=int(t["byte_requests"][j]),
                byte_hits=int(t["byte_hits"][j]), stale_hits=int(t["stale_hits"][j]), latency_p95_ms=float(t["p95_ms"][j]),
            )
            for name, t in tenants.items()
        }  # fmt: skip
    return TTLRun(pol.name, tr, record, snaps, series, tenants)
