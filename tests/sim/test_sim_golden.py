"""Golden miss counts on the bundled cache2k web07 excerpt, and exact-lru == libCacheSim LRU."""

from __future__ import annotations

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
