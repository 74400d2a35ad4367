"""The replayer applies a client-side TTL policy: every fill carries the policy's TTL (real Redis)."""

from __future__ import annotations

import redis

from cachetuner.live.replay import ReplayOptions, replay
from cachetuner.live.stack import LocalStack
from cachetuner.traces import read_trace
from cachetuner.ttl import apply_ttl_policy


def test_replay_sets_policy_ttls(redis_only: LocalStack) -> None:
    r = redis.Redis.from_url(redis_only.redis_url)
    trace = read_trace("bundled:web07", size_model="fixed:500", rate=20.0, limit=3000)
    res = replay(trace, redis_only.redis_url, ReplayOptions(sample_rate=0.0, metrics_port=None, ttl_policy="fixed:30"))
    assert res.fills == res.misses > 0
    pttls = [r.pttl(k) for k in r.scan_iter("ct:*", count=1000)]
    assert len(pttls) == r.dbsize() > 0 and all(0 < p <= 30_000 for p in pttls)
    # rules: each resident key holds the TTL the policy gave its last fill (minus the time since)
    r.flushall()
    res = replay(trace, redis_only.redis_url, ReplayOptions(sample_rate=0.0, metrics_port=None, ttl_policy="rules"))
    want = apply_ttl_policy(trace, "rules")
    last_fill: dict[int, float] = {}
    for i in range(len(trace)):
        last_fill.setdefault(int(trace.keys[i]), float(want.ttls[i]))  # a key's first request is its fill (no eviction)
    for k, ttl in list(last_fill.items())[:200]:
        p = r.pttl(f"ct:{k}")
        assert 0 < p <= ttl * 1000 and p > ttl * 1000 - 60_000
