"""The TTL replay on the simulator: same figures as a plain simulation, exact staleness, per tenant."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from cachetuner.config import RedisConfig
from cachetuner.sim.simulator import TieredCacheSim
from cachetuner.traces.trace import Trace
from cachetuner.ttl import FreshnessConfig, apply_ttl_policy, keyspace_for, simulate_ttl
from cachetuner.ttl.outcomes import last_write_time


def test_record_matches_counters_and_plain_run(web07: Trace) -> None:
    cfg = RedisConfig(maxmemory=3_000_000, maxmemory_policy="allkeys-lru")
    run = simulate_ttl(web07, "fixed:120", cfg, interval_s=50.0)
    plain = TieredCacheSim.for_trace(web07, cfg)
    snap = plain.run(replace(web07, ttls=np.full(len(web07), 120.0)))
    tot = run.totals()
    hits = sum(s.hits for s in run.snapshots)
    assert hits == snap.hits == int(((run.record[:, 0] % 2) == 1).sum())
    assert sum(s.sets for s in run.snapshots) == snap.sets == int((run.record[:, 0] >= 2).sum())
    assert tot["mean_ttl_s"] == 120.0 and tot["expirations"] > 0
    assert len(run.series["hit_ratio"]) == len(run.snapshots) == 20
    # one tenant: its per-interval figures are the snapshot's
    t = run.tenants["default"]
    assert np.allclose(t["hit_ratio"], run.series["hit_ratio"])
    assert np.allclose(t["byte_hit_ratio"], run.series["byte_hit_ratio"])
    assert np.allclose(t["p95_ms"], run.series["p95_ms"])


def test_stale_share_is_exact(web07: Trace) -> None:
    """Brute force: walk the requests, keep each key's write time, look up its group's updates."""
    tr = web07.slice(0, 6000)
    ks = keyspace_for(tr, FreshnessConfig(n_groups=8, volatile_share=0.5, update_every_s=30.0))
    run = simulate_ttl(tr, "fixed:600", RedisConfig(maxmemory=4_000_000), interval_s=30.0, keyspace=ks)
    rec = run.record
    written_at: dict[int, float] = {}
    stale = 0
    for i in range(len(tr)):
        k, t = int(tr.keys[i]), float(tr.timestamps[i])
        if rec[i, 0] % 2 == 1:
            g = int(ks.group[k])
            ups = ks.update_t[ks.update_ptr[g] : ks.update_ptr[g + 1]]
            stale += bool(np.any((ups > written_at[k]) & (ups <= t)))
        if rec[i, 0] >= 2:
            written_at[k] = t
    assert stale > 0
    assert run.series["stale_hits"].sum() == stale
    assert run.totals()["stale_share"] == stale / sum(s.hits for s in run.snapshots)


def test_last_write_time() -> None:
    keys = np.array([0, 1, 0, 0, 1])
    ts = np.array([1.0, 2, 3, 4, 5])
    w = np.array([True, False, False, True, True])
    out = last_write_time(keys, ts, w)
    assert np.isnan(out[1]) and out.tolist()[2:4] == [1.0, 4.0] and out[0] == 1.0 and out[4] == 5.0


def test_policies_change_only_ttls(web07: Trace) -> None:
    a = apply_ttl_policy(web07, "rules")
    assert np.array_equal(a.keys, web07.keys) and np.array_equal(a.sizes, web07.sizes)
    assert a.meta["ttl_policy"] == "rules" and set(np.unique(a.ttls)) <= {3600.0, 300.0, 276.0, 180.0, 135.0}
