"""The simulator against a real redis-server 7 (started on a free loopback port)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import numpy as np
import pytest
import redis
from simtraces import make_trace, real_redis, zipf_keys

from cachetuner.config import RedisConfig
from cachetuner.sim import SimParams, TieredCacheSim
from cachetuner.sim.memory import redis7_key_bytes
from cachetuner.sim.params import ClientParams, MemoryParams

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def redis_client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[redis.Redis]:
    with real_redis(tmp_path_factory.mktemp("redis")) as client:
        yield client


def _used(r: redis.Redis) -> int:
    return int(r.info("memory")["used_memory"])


@pytest.mark.parametrize(("klen", "vlen", "ttl"), [(20, 10, False), (20, 100, False), (20, 4096, False), (48, 500, True)])
def test_per_key_memory_formula_matches_redis(redis_client, klen, vlen, ttl):
    r = redis_client
    r.config_set("maxmemory", 0)
    r.flushall()
    n = 5000
    before = _used(r)
    pipe = r.pipeline(transaction=False)
    for i in range(n):
        pipe.set(f"k{i:0{klen - 1}d}", b"x" * vlen, ex=100_000 if ttl else None)
    pipe.execute()
    measured = (_used(r) - before) / n
    assert measured == pytest.approx(redis7_key_bytes(klen, vlen, ttl), abs=16)


@pytest.mark.parametrize("policy", ["allkeys-lru", "allkeys-lfu"])
def test_hits_and_evictions_track_real_redis(redis_client, policy):
    """Read-through replay of a Zipf trace: simulated hits within 3% of requests of Redis's own."""
    r = redis_client
    n, u = 8000, 2000
    keys = zipf_keys(n, u, alpha=0.9, seed=1)
    sizes = np.random.default_rng(2).integers(200, 2000, u)
    r.config_set("maxmemory", 0)
    r.flushall()
    base = _used(r)
    maxmemory = base + 400_000
    r.config_set("maxmemory", maxmemory)
    r.config_set("maxmemory-policy", policy)
    s0 = r.info("stats")
    t0 = time.time()
    for k in keys:
        name = f"k{k:019d}"
        if r.get(name) is None:
            r.set(name, b"x" * int(sizes[k]))
    dt = time.time() - t0
    s1 = r.info("stats")
    redis_hits = s1["keyspace_hits"] - s0["keyspace_hits"]
    redis_evicted = s1["evicted_keys"] - s0["evicted_keys"]
    r.config_set("maxmemory", 0)

    params = SimParams(
        memory=MemoryParams(base_used_memory=base),  # includes this test's own connection
        clients=ClientParams(n_clients=1, client_buffer_bytes=0),
    )
    trace = make_trace(keys, sizes=sizes[keys], timestamps=np.linspace(0.0, dt, n), key_bytes=20)
    cfg = RedisConfig(maxmemory=maxmemory, maxmemory_policy=policy)  # type: ignore[arg-type]
    snap = TieredCacheSim(trace.n_keys, cfg, params).run(trace)
    assert redis_evicted > 1000
    assert abs(snap.hits - redis_hits) < 0.03 * n
    assert abs(snap.evictions - redis_evicted) < 0.1 * redis_evicted
