"""Multi-tenant replay on the real stack: t:{tenant}:{biz}:{key} names, per-tenant counters (stale hits
included) in Prometheus (``tenant`` label) equal to the replayer's own counts, read back with PromQL."""

from __future__ import annotations

import time

import redis
from prometheus_api_client import PrometheusConnect

from cachetuner.config import RedisConfig
from cachetuner.live.backend import LiveRedisBackend
from cachetuner.live.replay import ReplayOptions, replay
from cachetuner.live.stack import LocalStack
from cachetuner.tenants import TenantWorkload, build_tenant_trace
from cachetuner.ttl import simulate_ttl

WORKLOAD = {
    "name": "live3",
    "freshness": {"volatile_share": 0.5, "update_every_s": 2.0},  # source updates every ~2 trace seconds
    "tenants": [
        {"name": "gold", "qos": "gold", "trace": "synthetic:zipf", "rate": 400, "seed": 1, "n_biz": 4,
         "params": {"n_requests": 6000, "n_keys": 500, "alpha": 1.2, "sizes": "fixed:800"}},
        {"name": "silver", "qos": "silver", "trace": "synthetic:zipf", "rate": 300, "seed": 2,
         "params": {"n_requests": 4500, "n_keys": 4000, "sizes": "fixed:800"}},
        {"name": "bronze", "qos": "bronze", "trace": "bundled:web07", "rate": 300, "limit": 4500,
         "size_model": "fixed:800"},
    ],
}  # fmt: skip


def _scraped_gets(prom: PrometheusConnect, earlier: set[str | None]) -> int:
    """GETs of this replay's tenant series that Prometheus holds (other instances' series left out)."""
    rows = prom.custom_query("last_over_time(cachetuner_tenant_gets_total[5m])")
    return sum(int(float(row["value"][1])) for row in rows if row["metric"].get("instance") not in earlier)


def test_per_tenant_counters_in_prometheus_equal_the_replayers(live_stack: LocalStack) -> None:
    trace = build_tenant_trace(TenantWorkload.model_validate(WORKLOAD))
    r = redis.Redis.from_url(live_stack.redis_url)
    r.flushall()
    backend = LiveRedisBackend(live_stack.redis_url, live_stack.prometheus_url, interval_s=2.0)
    assert backend.apply(RedisConfig(maxmemory=4_000_000, maxmemory_policy="allkeys-lru")).ok
    time.sleep(1.5)
    prom = PrometheusConnect(url=live_stack.prometheus_url, disable_ssl=True)
    # the stack is shared: earlier replays' tenant series (other instances) are still within the lookback
    earlier = {row["metric"].get("instance") for row in prom.custom_query("last_over_time(cachetuner_tenant_gets_total[10m])")}
    t0 = time.time() - 0.5
    res = replay(trace, live_stack.redis_url, ReplayOptions(
        rate=3000, stack_dir=str(live_stack.dir), sample_rate=0.0, ttl_policy="fixed:600"))  # fmt: skip
    deadline = time.time() + 30  # until Prometheus has scraped the final counters (a loaded machine scrapes late)
    while time.time() < deadline and _scraped_gets(prom, earlier) < res.gets:
        time.sleep(0.5)
    own = res.tenants
    assert own is not None and set(own) == {"gold", "silver", "bronze"}
    assert sum(t["gets"] for t in own.values()) == res.gets == len(trace)
    assert sum(t["hits"] for t in own.values()) == res.hits and sum(t["misses"] for t in own.values()) == res.misses
    # the names Redis holds, and the class TTL factor (gold x1.5 = 900 s)
    names = [k.decode() for k in r.scan_iter("t:gold:*", count=1000)]
    assert names and all(n.count(":") == 3 for n in names) and 600_000 < r.pttl(names[0]) <= 900_000
    # PromQL: the counters' last values equal the replayer's own counts, per tenant
    assert sum(t["stale_hits"] for t in own.values()) > 0
    for metric, key in (("hits", "hits"), ("misses", "misses"), ("gets", "gets"), ("requested_bytes", "req_bytes"),
                        ("stale_hits", "stale_hits")):  # fmt: skip
        rows = prom.custom_query(f"last_over_time(cachetuner_tenant_{metric}_total[5m])")
        got_prom: dict[str, int] = {}
        for row in rows:
            if row["metric"].get("instance") not in earlier:
                tenant = row["metric"]["tenant"]
                got_prom[tenant] = got_prom.get(tenant, 0) + int(float(row["value"][1]))
        assert got_prom == {t: c[key] for t, c in own.items()}, metric
    # and the live backend's snapshot carries them as MetricsSnapshot.tenants
    snap = backend.read(t0, time.time() - 0.2)
    assert not snap.stale, getattr(backend, "last_stale_reason", "")
    got = {t: (m.gets, m.hits, m.stale_hits) for t, m in snap.tenants.items()}
    assert got == {t: (c["gets"], c["hits"], c["stale_hits"]) for t, c in own.items()}
    assert all(m.latency_p95_ms > 0 for m in snap.tenants.values())
    assert snap.tenants["gold"].hit_ratio > snap.tenants["bronze"].hit_ratio


def test_live_stale_hits_equal_the_simulators_without_eviction(redis_only: LocalStack) -> None:
    """No memory limit and no TTL: Redis and the simulator have the same outcomes, so the same stale hits."""
    w = {**WORKLOAD, "freshness": {"volatile_share": 0.5, "update_every_s": 1.0}}
    trace = build_tenant_trace(TenantWorkload.model_validate(w))
    res = replay(trace, redis_only.redis_url, ReplayOptions(sample_rate=0.0, metrics_port=None))
    run = simulate_ttl(trace, "trace", RedisConfig(maxmemory=0), interval_s=5.0)
    assert res.tenants is not None
    for name, t in run.tenants.items():
        assert res.tenants[name]["hits"] == int(t["hits"].sum())
        assert res.tenants[name]["stale_hits"] == int(t["stale_hits"].sum()) > 0
