"""Invariants of the simulator on small generated traces (hypothesis)."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from simtraces import make_trace

from cachetuner.config import REDIS_POLICIES, RedisConfig
from cachetuner.sim import SimParams, TieredCacheSim
from cachetuner.sim.params import ClientParams, MemoryParams
from cachetuner.traces.trace import Op

ALL_POLICIES = (*REDIS_POLICIES, "exact-lru")
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def traces(draw):
    n = draw(st.integers(1, 120))
    n_keys = draw(st.integers(1, 25))
    keys = np.array(draw(st.lists(st.integers(0, n_keys - 1), min_size=n, max_size=n)))
    sizes = np.array(draw(st.lists(st.integers(1, 300), min_size=n, max_size=n)))
    read_only = draw(st.booleans())
    ops = None if read_only else np.array(draw(st.lists(st.sampled_from([0, 0, 1, 1, 2]), min_size=n, max_size=n)))
    ttls = np.array(draw(st.lists(st.sampled_from([0.0, 0.0, 0.5, 2.0, 30.0]), min_size=n, max_size=n)))
    gaps = np.array(draw(st.lists(st.sampled_from([0.0, 0.01, 0.3, 1.0, 5.0]), min_size=n, max_size=n)))
    return make_trace(keys, sizes=sizes, ops=ops, ttls=ttls, timestamps=np.cumsum(gaps), n_keys=n_keys, read_only=read_only)


@st.composite
def configs(draw):
    return RedisConfig(
        maxmemory=draw(st.sampled_from([0, 150, 400, 1000, 3000])),
        maxmemory_policy=draw(st.sampled_from(ALL_POLICIES)),
        maxmemory_samples=draw(st.integers(1, 10)),
        lfu_log_factor=draw(st.sampled_from([0, 1, 10])),
        lfu_decay_time=draw(st.sampled_from([0, 1])),
    )


def _params(redis_formula: bool) -> SimParams:
    """No base memory and no client buffers so that every admitted write must fit maxmemory."""
    mem = MemoryParams(per_key_overhead=None if redis_formula else 0, base_used_memory=0)
    return SimParams(memory=mem, clients=ClientParams(n_clients=3, client_buffer_bytes=0))


@SETTINGS
@given(trace=traces(), config=configs(), formula=st.booleans(), seed=st.integers(0, 3))
def test_whole_run_invariants(trace, config, formula, seed):
    sim = TieredCacheSim(trace.n_keys, config, _params(formula), seed=seed, key_bytes=trace.key_bytes)
    snap = sim.run(trace)
    assert snap.hits + snap.misses == snap.gets
    assert snap.gets == int((trace.ops == Op.GET).sum())
    assert snap.requests == len(trace)
    if config.maxmemory:
        assert snap.peak_used_memory <= config.maxmemory
        assert sim.used_memory <= config.maxmemory
    if config.maxmemory_policy == "noeviction" or not config.maxmemory:
        assert snap.evictions == 0
    if not config.maxmemory:
        assert snap.rejected_writes == 0
    # Same seed, same everything.
    again = TieredCacheSim(trace.n_keys, config, _params(formula), seed=seed, key_bytes=trace.key_bytes).run(trace)
    assert again.to_dict() == snap.to_dict()


@SETTINGS
@given(trace=traces(), config=configs(), seed=st.integers(0, 3))
def test_request_by_request_invariants(trace, config, seed):
    """Volatile policies evict only keys with a TTL; an expired key is never a hit."""
    sim = TieredCacheSim(trace.n_keys, config, _params(False), seed=seed, key_bytes=trace.key_bytes)
    volatile = config.maxmemory_policy.startswith("volatile-")
    for i in range(len(trace)):
        k, t, op = int(trace.keys[i]), float(trace.timestamps[i]), int(trace.ops[i])
        before = {int(x): sim.expire_at(int(x)) for x in sim.resident_keys()}
        expired_now = k in before and before[k] > 0 and t > before[k]
        snap = sim.run(trace, i, i + 1)
        after = set(sim.resident_keys().tolist())
        if op == Op.GET and expired_now:
            assert snap.hits == 0
        if volatile:
            gone = set(before) - after - ({k} if op == Op.DELETE else set())
            assert all(before[g] > 0 for g in gone), (gone, before)
        if config.maxmemory:
            assert sim.used_memory <= config.maxmemory
        if config.maxmemory_policy == "noeviction":
            assert snap.evictions == 0
        if op == Op.SET and snap.rejected_writes == 0:
            assert sim.is_resident(k)
            ttl = float(trace.ttls[i])
            assert sim.expire_at(k) == (t + ttl if ttl > 0 else 0.0)


@SETTINGS
@given(trace=traces(), seed=st.integers(0, 3), frac=st.sampled_from([0.3, 0.6]))
def test_noeviction_rejects_instead_of_evicting(trace, seed, frac):
    cap = max(1, int(trace.sizes.sum() * frac))
    sim = TieredCacheSim(trace.n_keys, RedisConfig(maxmemory=cap, maxmemory_policy="noeviction"), _params(False), seed=seed)
    snap = sim.run(trace)
    assert snap.evictions == 0
    assert snap.peak_used_memory <= cap


def test_clone_continues_identically():
    keys = np.random.default_rng(0).integers(0, 200, 4000)
    tr = make_trace(keys, sizes=np.random.default_rng(1).integers(50, 500, 4000), rate=50.0, ttls=3.0)
    cfg = RedisConfig(maxmemory=20_000, maxmemory_policy="allkeys-lfu")
    sim = TieredCacheSim(tr.n_keys, cfg, SimParams(), seed=5)
    sim.run(tr, 0, 2000)
    twin = sim.clone()
    a = sim.run(tr, 2000, 4000).to_dict()
    b = twin.run(tr, 2000, 4000).to_dict()
    assert a == b
    sim.reset()
    assert sim.n_resident == 0 and sim.used_memory == SimParams().memory.base_used_memory


@SETTINGS
@given(
    trace=traces(),
    configs_seq=st.lists(configs(), min_size=2, max_size=5),
    cuts=st.lists(st.floats(0, 1), min_size=4, max_size=4),
    seed=st.integers(0, 3),
)
def test_reconfiguring_between_intervals_keeps_invariants(trace, configs_seq, cuts, seed):
    """Any sequence of CONFIG SETs (policy switches incl. to/from exact-lru, shrink/grow) is safe."""
    sim = TieredCacheSim(trace.n_keys, configs_seq[0], _params(True), seed=seed, key_bytes=trace.key_bytes)
    bounds = sorted({0, len(trace), *(int(c * len(trace)) for c in cuts)})
    total_gets = total_hits_misses = 0
    for j, (a, b) in enumerate(zip(bounds[:-1], bounds[1:], strict=True)):
        cfg = configs_seq[j % len(configs_seq)]
        sim.apply_config(cfg)
        if cfg.maxmemory and cfg.maxmemory_policy != "noeviction" and not cfg.maxmemory_policy.startswith("volatile"):
            assert sim.used_memory <= cfg.maxmemory
        snap = sim.run(trace, a, b)
        total_gets += snap.gets
        total_hits_misses += snap.hits + snap.misses
        assert snap.keys == sim.n_resident == len(set(sim.resident_keys().tolist()))
        if cfg.maxmemory_policy == "exact-lru":
            # The exact-LRU list links exactly the resident keys.
            s = sim._state
            seen, k = [], int(s.ist[3])
            while k >= 0 and len(seen) <= sim.n_resident:
                seen.append(k)
                k = int(s.kv[k, 6])
            assert sorted(seen) == sorted(sim.resident_keys().tolist())
    assert total_gets == total_hits_misses == int((trace.ops == Op.GET).sum())


def test_pickle_and_deepcopy_round_trip():
    import copy
    import pickle

    tr = make_trace(np.random.default_rng(3).integers(0, 100, 3000), rate=20.0, ttls=2.0)
    sim = TieredCacheSim(tr.n_keys, RedisConfig(maxmemory=5_000), SimParams(), seed=1)
    sim.run(tr, 0, 1500)
    twins = [pickle.loads(pickle.dumps(sim)), copy.deepcopy(sim)]
    ref = sim.run(tr, 1500, 3000).to_dict()
    for twin in twins:
        assert twin.run(tr, 1500, 3000).to_dict() == ref
