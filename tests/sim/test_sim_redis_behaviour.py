"""Sanity of the Redis approximations: sampling, LFU, policy switches, maxmemory, L2, clients, expiry."""

from __future__ import annotations

import numpy as np
import pytest
from simtraces import make_trace, zipf_keys

from cachetuner.config import RedisConfig
from cachetuner.errors import ConfigError
from cachetuner.sim import SimParams, TieredCacheSim, simulate
from cachetuner.sim.params import ClientParams, L2Params, MemoryParams
from cachetuner.sim.policies import get_policy

EXACT = SimParams.exact()


def _misses(trace, policy: str, maxmemory: int, samples: int = 5, seed: int = 0, params: SimParams = EXACT) -> int:
    cfg = RedisConfig(maxmemory=maxmemory, maxmemory_policy=policy, maxmemory_samples=samples)  # type: ignore[arg-type]
    return TieredCacheSim(trace.n_keys, cfg, params, seed=seed).run(trace).misses


def test_more_samples_is_closer_to_exact_lru():
    # 1 request/s so that the 1-second LRU clock resolves every access, as on a quiet server.
    tr = make_trace(zipf_keys(30_000, 3_000, alpha=0.8, seed=1), rate=1.0)
    cap = 300 * 100
    exact = _misses(tr, "exact-lru", cap)
    gap = {s: np.mean([abs(_misses(tr, "allkeys-lru", cap, s, seed) - exact) for seed in range(3)]) for s in (2, 10)}
    assert gap[10] < gap[2]


def test_lfu_beats_lru_on_scan_polluted_zipf():
    rng = np.random.default_rng(2)
    n = 40_000
    hot = zipf_keys(n, 2_000, alpha=0.9, seed=3)
    scan = 2_000 + np.arange(n)  # one-off keys, never requested again
    keys = np.where(rng.random(n) < 0.5, hot, scan)
    tr = make_trace(keys, rate=10.0, n_keys=2_000 + n)
    cap = 200 * 100
    hits = {p: tr.__len__() - _misses(tr, p, cap) for p in ("allkeys-lru", "allkeys-lfu")}
    assert hits["allkeys-lfu"] > 1.1 * hits["allkeys-lru"]


def test_switch_to_lfu_makes_existing_keys_look_cold():
    keys = np.concatenate([zipf_keys(4_000, 300, seed=4), 300 + np.arange(50)])  # then 50 new keys
    tr = make_trace(keys, rate=5.0)
    sim = TieredCacheSim(tr.n_keys, RedisConfig(maxmemory=0, maxmemory_policy="allkeys-lru"), EXACT)
    sim.run(tr, 0, 4_000)
    old = sim.resident_keys()
    sim.apply_config(sim.config.evolve(maxmemory_policy="allkeys-lfu"))
    # The 24-bit field still holds the LRU clock; read as (minutes, counter) it has decayed to ~0.
    assert np.mean([sim.lfu_counter(int(k)) for k in old]) < 2.0
    sim.run(tr, 4_000, len(tr))
    # Keys created after the switch start at LFU_INIT_VAL (5): hotter than the old hot set.
    assert np.mean([sim.lfu_counter(300 + i) for i in range(50)]) >= 4.5
    assert np.mean([sim.lfu_counter(int(k)) for k in old]) < 2.0


def test_shrinking_maxmemory_evicts_immediately():
    tr = make_trace(zipf_keys(3_000, 500, seed=5), rate=10.0)
    sim = TieredCacheSim(tr.n_keys, RedisConfig(maxmemory=40_000, maxmemory_policy="allkeys-lru"), EXACT)
    first = sim.run(tr, 0, 2_000)
    assert first.used_memory > 20_000
    sim.apply_config(sim.config.evolve(maxmemory=20_000))
    assert sim.used_memory <= 20_000  # before any further request
    nxt = sim.run(tr, 2_000, 2_000)  # an empty interval reports the evictions the shrink caused
    assert nxt.evictions > 0 and nxt.requests == 0 and nxt.maxmemory == 20_000


def test_volatile_policy_without_ttl_keys_is_oom():
    tr = make_trace(np.arange(100), sizes=100)  # read-through fills without TTL
    snap = TieredCacheSim(tr.n_keys, RedisConfig(maxmemory=1_000, maxmemory_policy="volatile-lru"), EXACT).run(tr)
    assert snap.evictions == 0 and snap.rejected_writes == 90 and snap.keys == 10


def test_lazy_and_active_expiry():
    keys = np.arange(200)
    tr = make_trace(np.concatenate([keys, keys]), ttls=1.0, timestamps=np.concatenate([np.zeros(200), np.full(200, 50.0)]))
    snap = TieredCacheSim(tr.n_keys, RedisConfig(maxmemory=0), EXACT).run(tr, 0, 200, until=30.0)
    # 30 s later the active expire cycle has removed (nearly) every key without any access.
    assert snap.expirations >= 190
    sim = TieredCacheSim(tr.n_keys, RedisConfig(maxmemory=0), EXACT.model_copy(update={"active_expire": EXACT.active_expire.model_copy(update={"enabled": False})}))
    sim.run(tr, 0, 200)
    again = sim.run(tr, 200, 400)
    assert again.hits == 0 and again.expirations == 200  # lazy expiry on access, never a hit


def test_l2_serves_misses_when_l1_is_small():
    tr = make_trace(zipf_keys(20_000, 2_000, seed=6), rate=100.0)
    cfg = RedisConfig(maxmemory=100 * 100, maxmemory_policy="allkeys-lru")
    l2 = EXACT.model_copy(update={"l2": L2Params(enabled=True, capacity_bytes=1_000 * 100)})
    with_l2 = simulate(tr, cfg, l2, interval_s=30)
    without = simulate(tr, cfg, EXACT, interval_s=30)
    assert with_l2.totals["l2_hits"] > 0.2 * with_l2.totals["misses"]
    assert without.totals["l2_hits"] == 0
    assert with_l2.totals["mean_latency_ms"] < without.totals["mean_latency_ms"]
    assert with_l2.totals["miss_cost"] < without.totals["miss_cost"]
    assert 0 < with_l2.intervals[-1].l2_used_bytes <= 1_000 * 100


def test_idle_timeout_causes_reconnects_latency_and_frees_client_memory():
    tr = make_trace(zipf_keys(5_000, 200, seed=7), rate=2.0)
    params = SimParams(clients=ClientParams(n_clients=50, activity_skew=1.2), memory=MemoryParams(base_used_memory=0))
    cfg = RedisConfig(maxmemory=0)
    never = simulate(tr, cfg, params, interval_s=60)
    short = simulate(tr, cfg.evolve(timeout=5), params, interval_s=60)
    assert never.totals["reconnects"] == 0 and short.totals["reconnects"] > 50
    assert short.totals["mean_latency_ms"] > never.totals["mean_latency_ms"]
    assert short.intervals[-1].connected_clients < never.intervals[-1].connected_clients == 50
    assert short.intervals[-1].used_memory < never.intervals[-1].used_memory


def test_latency_quantiles_come_from_the_shared_histogram():
    tr = make_trace(zipf_keys(5_000, 1_000, seed=8), rate=50.0)
    snap = TieredCacheSim(tr.n_keys, RedisConfig(maxmemory=10_000), SimParams()).run(tr)
    assert 0 < snap.latency_p50_ms <= snap.latency_p95_ms <= snap.latency_p99_ms
    assert snap.misses > 0.05 * snap.gets
    assert snap.latency_p99_ms > 300  # inference calls dominate the tail
    assert snap.miss_cost == pytest.approx(snap.misses * SimParams().cost.miss_cost)


def test_unknown_policy_lists_valid_names():
    with pytest.raises(ConfigError, match="allkeys-lru.*exact-lru"):
        get_policy("allkeys-mru")


def test_redis_eviction_order_lets_one_write_overshoot():
    tr = make_trace([0, 1, 2, 3], sizes=400)
    cfg = RedisConfig(maxmemory=1_000, maxmemory_policy="exact-lru")
    redis_order = TieredCacheSim(tr.n_keys, cfg, EXACT.model_copy(update={"eviction_order": "redis"}))
    s = redis_order.run(tr)
    # k2 is admitted at 1200 B > maxmemory; the next command evicts k0 first, then k3 overshoots again.
    assert (s.evictions, s.keys, s.used_memory, s.peak_used_memory) == (1, 3, 1_200, 1_200)
    make_room = TieredCacheSim(tr.n_keys, cfg, EXACT).run(tr)
    assert (make_room.evictions, make_room.keys, make_room.peak_used_memory) == (2, 2, 800)


def test_volatile_ttl_evicts_the_soonest_expiring_key():
    # SET k0 (ttl 100 s), k1 (10 s), k2 (50 s), k3 (no TTL); the cache holds four. SET k4 evicts k1.
    tr = make_trace([0, 1, 2, 3, 4], sizes=100, ops=np.ones(5), ttls=[100.0, 10.0, 50.0, 0.0, 200.0])
    sim = TieredCacheSim(tr.n_keys, RedisConfig(maxmemory=400, maxmemory_policy="volatile-ttl"), EXACT)
    snap = sim.run(tr)
    assert snap.evictions == 1 and sorted(sim.resident_keys().tolist()) == [0, 2, 3, 4]


def test_allkeys_lru_evicts_the_idlest_key_when_all_are_sampled():
    # Accesses 1 s apart (LRU clock resolution); with <= samples keys Redis sees them all.
    tr = make_trace([0, 1, 2, 0, 3], sizes=100, rate=1.0)
    sim = TieredCacheSim(tr.n_keys, RedisConfig(maxmemory=300, maxmemory_policy="allkeys-lru"), EXACT)
    sim.run(tr)
    assert sorted(sim.resident_keys().tolist()) == [0, 2, 3]
