"""The modelled main dict (hash table) that eviction sampling walks, the LFU minute clock, run_counts.

Why these matter: on CloudPhysics (write-heavy, a few seconds of replay, so LRU/LFU scores are mostly
ties) Redis's victims are decided by *where* dictGetSomeKeys / dictGetRandomKey land in the hash
table, not by the scores; uniform candidate draws put allkeys-lfu 2-3 pp and allkeys-random ~1 pp
off a real redis-server (docs/sim.md, "Eviction sampling").
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from simtraces import make_trace, real_redis

from cachetuner.config import RedisConfig
from cachetuner.sim import SimCounts, SimParams, TieredCacheSim
from cachetuner.sim import kernel as K
from cachetuner.sim.params import ClientParams, MemoryParams
from cachetuner.sim.slots import I_HSIZE, I_NRES, KV_HNEXT


def _chains(sim: TieredCacheSim) -> dict[int, list[int]]:
    s = sim._state
    out = {}
    for b in range(int(s.ist[I_HSIZE])):
        chain, e = [], int(s.hbuckets[b])
        while e >= 0:
            chain.append(e)
            e = int(s.kv[e, KV_HNEXT])
        if chain:
            out[b] = chain
    return out


def _check_dict(sim: TieredCacheSim) -> None:
    s = sim._state
    size = int(s.ist[I_HSIZE])
    resident = sorted(sim.resident_keys().tolist())
    if size == 0:
        assert resident == []
        return
    assert size >= 4 and size & (size - 1) == 0
    seen = []
    for b, chain in _chains(sim).items():
        for k in chain:
            assert int(s.hhash[k]) & (size - 1) == b
        seen.extend(chain)
    assert sorted(seen) == resident  # every resident key exactly once, nothing else
    # The occupancy bitmap the walk skips empty buckets with: bit b <=> bucket b not empty.
    bits = np.unpackbits(s.hbits.view(np.uint8), bitorder="little").astype(bool)
    assert (bits[:size] == (s.hbuckets[:size] >= 0)).all() and not bits[size:].any()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    keys=st.lists(st.integers(0, 300), min_size=1, max_size=600),
    policy=st.sampled_from(["allkeys-lru", "allkeys-lfu", "allkeys-random", "volatile-lru", "noeviction"]),
    frac=st.sampled_from([0.05, 0.3, 1.0]),
    shrink_to=st.sampled_from([None, 0.01]),
    seed=st.integers(0, 3),
)
def test_dict_holds_exactly_the_resident_keys(keys, policy, frac, shrink_to, seed):
    """Adds, evictions, deletes, expansions, cron shrinks and CONFIG SET shrinks keep the table exact."""
    n = len(keys)
    rng = np.random.default_rng(seed)
    ops = rng.choice([0, 1, 2], size=n, p=[0.5, 0.4, 0.1]).astype(np.uint8)
    tr = make_trace(np.asarray(keys), sizes=rng.integers(10, 2000, n), ops=ops, ttls=rng.choice([0.0, 5.0], n),
                    timestamps=np.sort(rng.random(n)) * 30, n_keys=301)  # fmt: skip
    cap = int(300 * 1200 * frac) + 20_000
    params = SimParams(memory=MemoryParams(base_used_memory=20_000), clients=ClientParams(n_clients=1, client_buffer_bytes=0))
    sim = TieredCacheSim(301, RedisConfig(maxmemory=cap, maxmemory_policy=policy), params, seed=seed)
    half = n // 2
    sim.run(tr, 0, half)
    _check_dict(sim)
    if shrink_to is not None:
        sim.apply_config(sim.config.evolve(maxmemory=int(cap * shrink_to)))
        _check_dict(sim)
    sim.run(tr, half, n, until=float(tr.timestamps[-1]) + 10.0)  # crons run: expiry, table shrink
    _check_dict(sim)
    s = sim._state
    if int(s.ist[I_HSIZE]) > 4:  # tryResizeHashTables(): never left below 10 % fill across a cron
        assert int(s.ist[I_NRES]) * 100 // int(s.ist[I_HSIZE]) >= 10 or sim.now - float(tr.timestamps[-1]) < 1.0


def test_dict_expands_at_one_to_one_and_inserts_at_the_head():
    """_dictExpandIfNeeded(): 4 buckets, doubling when a key arrives at used == size; dictAdd puts the
    newest key at the head of its chain."""
    n_keys = 64
    tr = make_trace(np.arange(n_keys), sizes=100, ops=np.ones(n_keys, np.uint8), n_keys=n_keys)
    sim = TieredCacheSim(n_keys, RedisConfig(maxmemory=0), SimParams(), seed=1)
    sizes = []
    for i in range(n_keys):
        sim.run(tr, i, i + 1)
        sizes.append(int(sim._state.ist[I_HSIZE]))
    assert sizes[0] == 4 and sizes[3] == 4 and sizes[4] == 8 and sizes[8] == 16 and sizes[-1] == 64
    # After the last expansion (to 64 at key 32), keys 32..63 were added one by one at chain heads.
    for chain in _chains(sim).values():
        late = [k for k in chain if k >= 32]
        assert late == sorted(late, reverse=True)
        assert chain[: len(late)] == late


def _xorshift(state: int) -> tuple[int, int]:
    """The kernel's xorshift64* step (common.rng_next): (new state, output)."""
    m = (1 << 64) - 1
    x = state
    x ^= x >> 12
    x = (x ^ (x << 25)) & m
    x ^= x >> 27
    return x, (x * 2685821657736338717) & m


def _redis_get_some_keys(s, count: int) -> list[int]:
    """dict.c dictGetSomeKeys() (Redis >= #12276, one table) transcribed line by line on the
    simulator's table and random stream (``randomULong()`` = the kernel's xorshift64*)."""
    state = int(s.rng[0])
    size = int(s.ist[I_HSIZE])
    mask = size - 1
    used = int(s.ist[I_NRES])
    count = min(count, used)
    des: list[int] = [-1] * count

    def rnd() -> int:
        nonlocal state
        state, out = _xorshift(state)
        return out

    maxsteps = count * 10
    stored = 0
    i = (rnd() >> 11) & mask
    emptylen = 0
    while stored < count and maxsteps > 0:
        maxsteps -= 1
        he = int(s.hbuckets[i])
        if he < 0:
            emptylen += 1
            if emptylen >= 5 and emptylen > count:
                i = (rnd() >> 11) & mask
                emptylen = 0
        else:
            emptylen = 0
            while he >= 0:
                if stored < count:
                    des[stored] = he
                else:
                    r = rnd() % (stored + 1)
                    if r < count:
                        des[r] = he
                he = int(s.kv[he, KV_HNEXT])
                stored += 1
            if stored >= count:
                return des
        i = (i + 1) & mask
    return des[:stored]


@pytest.mark.parametrize("count", [2, 5])
def test_get_some_keys_is_redis_dictgetsomekeys(count):
    """dictGetSomeKeys(): consecutive buckets, whole chains newest first, and reservoir sampling
    over the rest of the chain that completes the sample, exactly as dict.c on the same stream."""
    n_keys = 3000
    tr = make_trace(np.arange(n_keys), sizes=100, ops=np.ones(n_keys, np.uint8), n_keys=n_keys)
    sim = TieredCacheSim(n_keys, RedisConfig(maxmemory=0), SimParams(), seed=2)
    sim.run(tr)
    s = sim._state
    chains = _chains(sim)
    position = {k: ch.index(k) for ch in chains.values() for k in ch}
    deep = 0
    for _ in range(1000):
        want = _redis_get_some_keys(s, count)
        got = int(K.dict_get_some_keys(sim._kstate, count))
        keys = s.hsamp[:got].tolist()
        assert keys == want
        assert got == count and len(set(keys)) == got
        deep += sum(position[k] >= count for k in keys)
    # Keys deeper in a chain than ``count`` are reachable only through the reservoir.
    if max(len(ch) for ch in chains.values()) > count:
        assert deep > 0


def _slots_ratio(sim: TieredCacheSim) -> float:
    """Distinct buckets holding the resident keys / what uniform hashing would give."""
    s = sim._state
    size = int(s.ist[I_HSIZE])
    res = sim.resident_keys()
    slots = len(np.unique(s.hhash[res] & (size - 1)))
    return slots / (size * (1 - np.exp(-len(res) / size)))


def _random_eviction_run(sampling: str, seed: int) -> float:
    n_keys, n = 12_000, 24_000
    keys = np.random.default_rng(1).integers(0, n_keys, n)
    tr = make_trace(keys, sizes=1000, ops=np.ones(n, np.uint8), n_keys=n_keys, key_bytes=8)
    params = SimParams(eviction_order="redis", sampling=sampling, clients=ClientParams(n_clients=1, client_buffer_bytes=0))
    sim = TieredCacheSim(n_keys, RedisConfig(maxmemory=params.memory.base_used_memory + 5000 * 1120,
                                             maxmemory_policy="allkeys-random"), params, seed=seed)  # fmt: skip
    sim.run(tr)
    return _slots_ratio(sim)


def test_random_eviction_clusters_survivors_like_dict_get_random_key():
    """dictGetRandomKey() draws a bucket, then a chain entry: lone keys go first, survivors share buckets.

    A real redis-server 7.0 gives 0.886 for this workload (test below); uniform draws give 1.0.
    """
    dict_r = [_random_eviction_run("dict", s) for s in range(2)]
    unif_r = [_random_eviction_run("uniform", s) for s in range(2)]
    assert all(0.84 < r < 0.93 for r in dict_r), dict_r
    assert all(0.97 < r < 1.03 for r in unif_r), unif_r


@pytest.fixture(scope="module")
def debug_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[redis.Redis]:
    with real_redis(tmp_path_factory.mktemp("redis"), **{"enable-debug-command": "yes"}) as client:
        yield client


def _redis_random_eviction_ratio(r: redis.Redis) -> float:
    """One allkeys-random run of the workload on the real server: its survivors' slot ratio (DEBUG HTSTATS)."""
    r.config_set("maxmemory", 0)
    r.flushall()
    base = int(r.info("memory")["used_memory"])
    r.config_set("maxmemory-policy", "allkeys-random")
    r.config_set("maxmemory", base + 5000 * 1120 + 100_000)
    keys = np.random.default_rng(1).integers(0, 12_000, 24_000)
    pipe = r.pipeline(transaction=False)
    for i, k in enumerate(keys.tolist()):
        pipe.set(f"ct:{k}", b"x" * 1000)
        if i % 200 == 199:
            pipe.execute()
    pipe.execute()
    hts = r.execute_command("DEBUG", "HTSTATS", "0").decode()
    size = int(hts.split("table size: ")[1].split()[0])
    elements = int(hts.split("number of elements: ")[1].split()[0])
    slots = int(hts.split("different slots: ")[1].split()[0])
    return float(slots / (size * (1 - np.exp(-elements / size))))


@pytest.mark.integration
def test_random_eviction_clustering_matches_real_redis(debug_redis):
    """DEBUG HTSTATS on a real redis-server after allkeys-random evictions vs the simulator's table.

    Both sides are random (the server seeds its own generator), so each is the mean of three runs. Single runs seen:
    server 0.863-0.883, simulator 0.872-0.900, so two single runs (as before) did not always stay within the 0.03
    bound (CI, 2026-12-06: 0.894 against 0.863); the bound is unchanged."""
    redis_ratio = float(np.mean([_redis_random_eviction_ratio(debug_redis) for _ in range(3)]))
    sim_ratio = float(np.mean([_random_eviction_run("dict", s) for s in range(3)]))
    assert abs(sim_ratio - redis_ratio) < 0.03, (sim_ratio, redis_ratio)
    assert redis_ratio < 0.95  # and uniform draws (1.0) would not match


def test_lfu_minutes_follow_unix_minutes():
    """LFUGetTimeInMinutes() is unixtime/60: a trace stamped with unix times (fidelity) decays on the
    same minute boundaries as the server (the clock epoch is a whole number of minutes)."""
    assert K.CLOCK_EPOCH_S % 60 == 0
    m0 = 1_790_000_000 // 60 * 60  # a unix minute boundary
    cfg = RedisConfig(maxmemory=10 << 20, maxmemory_policy="allkeys-lfu", lfu_decay_time=1)
    tr = make_trace([0, 1, 1], sizes=100, ops=[1, 0, 0], timestamps=[m0 + 30.5, m0 + 50.5, m0 + 60.5], n_keys=2)
    sim = TieredCacheSim(2, cfg, SimParams(), seed=0)
    sim.run(tr, 0, 2)  # SET at :30.5, an unrelated GET at :50.5 moves the clock
    assert sim.lfu_counter(0) == K.LFU_INIT_VAL  # same unix minute: no decay
    sim.run(tr, 2, 3)  # clock at the next minute + 0.5 s
    assert sim.lfu_counter(0) == K.LFU_INIT_VAL - 1


def test_run_counts_matches_run_and_keeps_intervals():
    keys = np.random.default_rng(3).integers(0, 500, 4000)
    tr = make_trace(keys, sizes=300, n_keys=500, rate=100.0)
    cfg = RedisConfig(maxmemory=80_000 + 1_100_000, maxmemory_policy="allkeys-lfu")
    a = TieredCacheSim(500, cfg, SimParams(), seed=4)
    b = TieredCacheSim(500, cfg, SimParams(), seed=4)
    for lo, hi in ((0, 1500), (1500, 3000)):
        snap = a.run(tr, lo, hi)
        c = b.run_counts(tr, lo, hi)
        assert isinstance(c, SimCounts)
        assert (c.requests, c.gets, c.hits, c.byte_requests, c.byte_hits, c.sets, c.evictions) == (
            snap.requests, snap.gets, snap.hits, snap.byte_requests, snap.byte_hits, snap.sets, snap.evictions)  # fmt: skip
        assert c.hit_ratio == pytest.approx(snap.hit_ratio)
    # A full report after run_counts covers only what came after it.
    assert a.run(tr, 3000, 4000).to_dict() == b.run(tr, 3000, 4000).to_dict()


def test_without_latency_model_counts_stay_exact():
    """model_latency=False (what-if mini caches): no latency figures, same request accounting."""
    keys = np.random.default_rng(5).integers(0, 400, 3000)
    tr = make_trace(keys, sizes=500, n_keys=400, rate=50.0)
    cfg = RedisConfig(maxmemory=60_000, maxmemory_policy="allkeys-lru")  # 120 of 400 values
    params = SimParams.exact().model_copy(update={"model_latency": False})
    snap = TieredCacheSim(400, cfg, params, seed=1).run(tr)
    assert snap.latency_p50_ms == 0.0 and snap.latency_mean_ms == 0.0
    assert snap.hits + snap.misses == snap.gets == 3000 and snap.hits > 0 and snap.evictions > 0
    exact = TieredCacheSim(400, RedisConfig(maxmemory=0), params, seed=1).run(tr)
    assert exact.misses == len(np.unique(keys))  # unbounded: only cold misses
