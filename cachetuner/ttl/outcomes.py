"""Per-request outcomes -> freshness and per-tenant figures, exactly, after the replay.

The simulator's ``record`` says, per request, whether it hit L1 and whether a write was admitted, and
its latency. From it:

* the **write time** of the item a hit returned is the time of the last admitted write of that key
  before the hit (a GET hit writes nothing), so a hit is **stale** when its group's last source
  update lies after that write time and at or before the hit (exact; an item promoted from the L2
  tier counts as written when promoted);
* per tenant and interval: gets, hits, bytes, and the p95 of the latency histogram with the same
  buckets and ``histogram_quantile`` as every other p95 in CacheTuner.
"""

from __future__ import annotations

import numpy as np

from cachetuner.metrics import LATENCY_BUCKETS_S, histogram_quantile
from cachetuner.traces.trace import Op, Trace
from cachetuner.ttl.keyspace import QOS_CLASSES, KeySpace


def last_write_time(keys: np.ndarray, ts: np.ndarray, written: np.ndarray) -> np.ndarray:
    """Per request: time of the last admitted write of its key at or before it (``nan`` when none)."""
    n = len(keys)
    order = np.argsort(keys, kind="stable")
    k = keys[order]
    rank = np.zeros(n, dtype=np.int64)
    if n:
        rank[1:] = np.cumsum(k[1:] != k[:-1])
    pos = np.where(written[order], np.arange(n), -1)
    # per key segment, the running max of write positions (rank * (n + 1) keeps segments apart)
    comb = np.maximum.accumulate(rank * (n + 1) + pos + 1) - rank * (n + 1) - 1
    out = np.full(n, np.nan)
    ok = comb >= 0
    out[order[ok]] = ts[order[comb[ok]]]
    return out


def stale_hits(trace: Trace, record: np.ndarray, keyspace: KeySpace) -> np.ndarray:
    """Bool per request: an L1 hit on an item written before its group's last source update."""
    hit = (record[:, 0] % 2.0) == 1.0
    written = record[:, 0] >= 2.0
    keys = trace.keys.astype(np.int64)
    ts = trace.timestamps.astype(np.float64)
    wt = last_write_time(keys, ts, written)
    upd = keyspace.last_update(keyspace.group[keys], ts)
    return hit & (upd > np.nan_to_num(wt, nan=-np.inf))


def interval_ids(ts: np.ndarray, interval_s: float) -> np.ndarray:
    return np.floor((ts - ts[0]) / interval_s).astype(np.int64) if len(ts) else np.zeros(0, np.int64)


def tenant_intervals(
    trace: Trace, record: np.ndarray, keyspace: KeySpace, stale: np.ndarray, interval: np.ndarray, n_int: int
) -> dict[str, dict[str, np.ndarray]]:
    """Per tenant name: per-interval ``hit_ratio``, ``byte_hit_ratio``, ``p95_ms``, ``stale_share``,
    ``gets``, ``p95_ok`` (p95 within the class threshold), over intervals ``0..n_int-1``."""
    keys = trace.keys.astype(np.int64)
    tenant = keyspace.tenant[keys]
    is_get = trace.ops == Op.GET
    hit = (record[:, 0] % 2.0) == 1.0
    sizes = trace.sizes.astype(np.float64)
    lat_s = record[:, 1] / 1000.0
    bucket = np.searchsorted(np.asarray(LATENCY_BUCKETS_S), lat_s, side="left")
    nb = len(LATENCY_BUCKETS_S) + 1
    out: dict[str, dict[str, np.ndarray]] = {}
    for t, name in enumerate(keyspace.tenants):
        m = tenant == t
        iv = interval[m]
        g = is_get[m]

        def per(weights: np.ndarray, iv: np.ndarray = iv) -> np.ndarray:
            return np.bincount(iv, weights=weights, minlength=n_int)[:n_int]

        gets = per(g.astype(np.float64))
        hits = per((g & hit[m]).astype(np.float64))
        breq = per(np.where(g, sizes[m], 0.0))
        bhit = per(np.where(g & hit[m], sizes[m], 0.0))
        st = per((stale[m]).astype(np.float64))
        h = np.bincount(iv * nb + bucket[m], minlength=n_int * nb)[: n_int * nb].reshape(n_int, nb)
        p95 = np.array([histogram_quantile(0.95, row) * 1000.0 if row.sum() else 0.0 for row in h])
        thr = QOS_CLASSES[keyspace.classes[t]][1]
        out[name] = {
            "gets": gets,
            "hits": hits,
            "byte_requests": breq,
            "byte_hits": bhit,
            "stale_hits": st,
            "hit_ratio": np.divide(hits, gets, out=np.zeros(n_int), where=gets > 0),
            "byte_hit_ratio": np.divide(bhit, breq, out=np.zeros(n_int), where=breq > 0),
            "stale_share": np.divide(st, hits, out=np.zeros(n_int), where=hits > 0),
            "p95_ms": p95,
            "p95_ok": (p95 <= thr).astype(np.float64),
        }
    return out
