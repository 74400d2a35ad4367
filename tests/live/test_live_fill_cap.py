"""The fill cap on a real redis-server: the headroom it leaves (two intervals of inserts) is room Redis
really has (no eviction), and when inserts outrun it Redis evicts and the cap lifts."""

from __future__ import annotations

import redis

from cachetuner.config import RedisConfig
from cachetuner.live.stack import LocalStack
from cachetuner.metrics import MetricsSnapshot
from cachetuner.mrc.fill import FillCap
from cachetuner.space import ConfigSpace

MiB = 1 << 20
VALUE = b"v" * 4096
PER_INTERVAL = 1000  # misses (= read-through inserts) an interval


def _insert(r: redis.Redis, start: int, n: int) -> None:
    pipe = r.pipeline(transaction=False)
    for i in range(start, start + n):
        pipe.set(f"k:{i}", VALUE)
    pipe.execute()


def _snap(r: redis.Redis, maxmemory: int) -> MetricsSnapshot:
    mem, stats = r.info("memory"), r.info("stats")
    return MetricsSnapshot(interval_s=10, gets=PER_INTERVAL, misses=PER_INTERVAL, sets=PER_INTERVAL,
                           used_memory=int(mem["used_memory"]), maxmemory=maxmemory, keys=int(r.dbsize()),
                           evictions=int(stats["evicted_keys"]))


def test_the_caps_headroom_is_real_room_on_redis_and_the_cap_lifts_when_outrun(redis_only: LocalStack) -> None:
    r = redis.Redis.from_url(redis_only.redis_url)
    intended = RedisConfig(maxmemory=256 * MiB, maxmemory_policy="allkeys-lru")
    space = ConfigSpace(min_bytes=4 * MiB, max_bytes=512 * MiB, policies=("allkeys-lru",), timeouts=(0,))
    r.config_set("maxmemory-policy", "allkeys-lru")
    r.config_set("maxmemory", intended.maxmemory)
    _insert(r, 0, 5000)  # a cache filling from cold: 5,000 keys of 4 KiB, far below 256 MiB

    fill = FillCap(headroom_intervals=2.0)
    capped = fill.apply(intended, _snap(r, intended.maxmemory), space)
    assert capped.maxmemory < intended.maxmemory // 4
    r.config_set("maxmemory", capped.maxmemory)

    _insert(r, 5000, 2 * PER_INTERVAL)  # the two intervals of inserts the headroom is sized for
    assert r.info("stats")["evicted_keys"] == 0
    assert r.dbsize() == 5000 + 2 * PER_INTERVAL

    _insert(r, 7000, 3 * PER_INTERVAL)  # inserts outrun the headroom: Redis evicts ...
    snap = _snap(r, capped.maxmemory)
    assert snap.evictions > 0
    assert fill.apply(intended, snap, space).maxmemory == intended.maxmemory  # ... and the cap lifts
