"""Golden miss counts on the bundled cache2k web07 excerpt: exact-lru == libCacheSim LRU, and every sampled policy."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from cachetuner.config import RedisConfig
from cachetuner.sim import SimParams, TieredCacheSim
from cachetuner.sim.reference import libcachesim_lru
from cachetuner.traces import read_trace

# Fraction of the working set -> exact-lru misses (50,000 requests, fixed:4096 sizes).
GOLDEN_FIXED = {0.01: 32348, 0.05: 26968, 0.10: 24673, 0.25: 21317}


@pytest.fixture(scope="module")
def web07():
    return read_trace("bundled:web07")


@pytest.fixture(scope="module")
def web07_varsize():
    return read_trace("bundled:web07", size_model="lognormal:2000,1.0", seed=3)


def _exact_misses(trace, maxmemory: int) -> int:
    cfg = RedisConfig(maxmemory=maxmemory, maxmemory_policy="exact-lru")
    sim = TieredCacheSim(trace.n_keys, cfg, SimParams.exact(), key_bytes=trace.key_bytes)
    return sim.run(trace).misses


@pytest.mark.parametrize("frac", sorted(GOLDEN_FIXED))
def test_exact_lru_golden_and_libcachesim(web07, frac):
    mm = int(web07.working_set_bytes() * frac)
    misses = _exact_misses(web07, mm)
    assert misses == GOLDEN_FIXED[frac]
    assert misses == libcachesim_lru(web07, mm).misses


@pytest.mark.parametrize("frac", [0.02, 0.2])
def test_exact_lru_matches_libcachesim_with_variable_sizes(web07_varsize, frac):
    mm = int(web07_varsize.working_set_bytes() * frac)
    assert _exact_misses(web07_varsize, mm) == libcachesim_lru(web07_varsize, mm).misses


def test_sampled_lru_golden_is_deterministic(web07):
    mm = int(web07.working_set_bytes() * 0.1)
    cfg = RedisConfig(maxmemory=mm, maxmemory_policy="allkeys-lru", maxmemory_samples=5)
    runs = [TieredCacheSim(web07.n_keys, cfg, SimParams.exact(), seed=7).run(web07).misses for _ in range(2)]
    assert runs[0] == runs[1]
    # Sampled LRU lands near true LRU on this trace (within 3% of requests).
    assert abs(runs[0] - GOLDEN_FIXED[0.10]) < 0.03 * len(web07)


# Sampled policies (seed 7, exact accounting): misses and evictions, pinned so that kernel speed work
# cannot change a single count. volatile-* on a copy with a 5-23 s TTL on every even key id.
GOLDEN_SAMPLED = {
    (0.02, "allkeys-lru"): (30872, 30541),
    (0.02, "allkeys-lfu"): (29318, 28987),
    (0.02, "allkeys-random"): (31664, 31333),
    (0.02, "volatile-lru"): (43110, 360),
    (0.02, "volatile-lfu"): (43110, 360),
    (0.02, "volatile-ttl"): (43119, 369),
    (0.02, "volatile-random"): (43117, 367),
    (0.1, "allkeys-lru"): (24764, 23107),
    (0.1, "allkeys-lfu"): (24354, 22697),
    (0.1, "allkeys-random"): (26159, 24502),
    (0.1, "volatile-lru"): (38423, 1732),
    (0.1, "volatile-lfu"): (38428, 1737),
    (0.1, "volatile-ttl"): (38434, 1743),
    (0.1, "volatile-random"): (38434, 1743),
}
# Full Redis model (memory formula, 32 clients, latency draws), maxmemory = base + buffers + 10 %:
# misses, evictions and p95 latency (ms) for both eviction orders.
GOLDEN_FULL = {
    ("allkeys-lru", "make-room"): (25670, 24364, 1980.755132),
    ("allkeys-lru", "redis"): (25623, 24317, 1978.356566),
    ("allkeys-lfu", "make-room"): (25284, 23978, 1971.629924),
    ("allkeys-lfu", "redis"): (25156, 23850, 1954.374057),
    ("allkeys-random", "make-room"): (27011, 25705, 1994.462308),
    ("allkeys-random", "redis"): (26987, 25681, 1977.781547),
}


@pytest.mark.parametrize(("frac", "policy"), sorted(GOLDEN_SAMPLED))
def test_sampled_policies_golden(web07, frac, policy):
    tr = web07
    if policy.startswith("volatile"):
        tr = dataclasses.replace(web07, ttls=np.where(web07.keys % 2 == 0, 5.0 + (web07.keys % 7) * 3.0, 0.0))
    cfg = RedisConfig(maxmemory=int(web07.working_set_bytes() * frac), maxmemory_policy=policy)
    snap = TieredCacheSim(tr.n_keys, cfg, SimParams.exact(), seed=7).run(tr)
    assert (snap.misses, snap.evictions) == GOLDEN_SAMPLED[(frac, policy)]


@pytest.mark.parametrize(("policy", "order"), sorted(GOLDEN_FULL))
def test_full_model_golden(web07, policy, order):
    mm = 927_000 + 32 * 36_864 + int(web07.working_set_bytes() * 0.1)
    cfg = RedisConfig(maxmemory=mm, maxmemory_policy=policy)
    snap = TieredCacheSim.for_trace(web07, cfg, SimParams(eviction_order=order), seed=7).run(web07)
    misses, evictions, p95 = GOLDEN_FULL[(policy, order)]
    assert (snap.misses, snap.evictions) == (misses, evictions)
    assert snap.latency_p95_ms == pytest.approx(p95, abs=1e-6)
