"""LiveRedisBackend against real Redis + redis_exporter + Prometheus."""

from __future__ import annotations

import time

import numpy as np
import pytest
import redis

from cachetuner.backend import CacheBackend
from cachetuner.config import REDIS_PARAM_NAMES, REDIS_PARAMS, RedisConfig
from cachetuner.live import sampling
from cachetuner.live.backend import LiveRedisBackend
from cachetuner.live.replay import ReplayOptions, replay
from cachetuner.live.stack import LocalStack, free_port
from cachetuner.traces import read_trace


@pytest.fixture()
def backend(live_stack: LocalStack):
    be = LiveRedisBackend(live_stack.redis_url, live_stack.prometheus_url, interval_s=2.0)
    before = be.config
    yield be
    be.apply(before)
    be.close()


def test_is_a_cache_backend(backend: LiveRedisBackend) -> None:
    assert isinstance(backend, CacheBackend)
    assert backend.exhausted is False


def test_redis_params_name_every_field() -> None:
    """``REDIS_PARAMS`` is the one field -> parameter map; ``to_redis``/``from_redis`` follow it."""
    assert list(REDIS_PARAMS) == list(RedisConfig.model_fields)
    cfg = RedisConfig(maxmemory=3 << 20, maxmemory_policy="volatile-lfu", maxmemory_samples=7, lfu_log_factor=3,
                      lfu_decay_time=4, timeout=30)  # fmt: skip
    assert tuple(cfg.to_redis()) == REDIS_PARAM_NAMES
    assert RedisConfig.from_redis({**cfg.to_redis(), "unknown-param": "x"}) == cfg


def test_config_set_get_round_trip(backend: LiveRedisBackend, live_stack: LocalStack) -> None:
    cfg = RedisConfig(maxmemory=12_345_678, maxmemory_policy="volatile-lfu", maxmemory_samples=7,
                      lfu_log_factor=20, lfu_decay_time=3, timeout=300)  # fmt: skip
    res = backend.apply(cfg)
    assert res.ok, res.error
    assert res.applied == cfg == backend.config
    r = redis.Redis.from_url(live_stack.redis_url, decode_responses=True)
    assert RedisConfig.from_redis({k: r.config_get(k)[k] for k in cfg.to_redis()}) == cfg
    # exact-lru exists only in the simulator: refused, config unchanged.
    bad = backend.apply(cfg.evolve(maxmemory_policy="exact-lru"))
    assert not bad.ok and "simulator" in (bad.error or "")
    assert backend.config == cfg


def _config_set_calls(r: redis.Redis) -> int:
    return int(r.info("commandstats").get("cmdstat_config|set", {}).get("calls", 0))


def test_apply_is_one_atomic_config_set(backend: LiveRedisBackend, live_stack: LocalStack) -> None:
    """Several changed parameters go out in ONE CONFIG SET; one refused value changes nothing at all."""
    r = redis.Redis.from_url(live_stack.redis_url, decode_responses=True)
    start = RedisConfig(maxmemory=30_000_000, maxmemory_policy="allkeys-lru", maxmemory_samples=5, timeout=0)
    assert backend.apply(start).ok
    calls = _config_set_calls(r)
    good = start.evolve(maxmemory=31_000_000, maxmemory_policy="allkeys-lfu", maxmemory_samples=9, lfu_log_factor=12)
    res = backend.apply(good)
    assert res.ok, res.error
    assert _config_set_calls(r) == calls + 1  # four parameters, one command
    assert res.applied == good
    # Redis refuses timeout > INT_MAX (RedisConfig does too now; built unvalidated here to reach the server): the
    # valid changes that travel in the same CONFIG SET must not be applied either.
    bad = RedisConfig.model_construct(**{**good.model_dump(), "maxmemory": 32_000_000, "maxmemory_policy": "volatile-ttl",
                                         "maxmemory_samples": 3, "timeout": 2**40})
    res = backend.apply(bad)
    assert not res.ok
    assert res.error is not None and res.error.startswith("CONFIG SET ") and "timeout" in res.error, res.error
    assert _config_set_calls(r) == calls + 2
    on_server = RedisConfig.from_redis({k: r.config_get(k)[k] for k in good.to_redis()})
    assert on_server == good == res.applied == backend.config


def test_acl_user_without_config_set_is_refused(live_stack: LocalStack) -> None:
    admin = redis.Redis.from_url(live_stack.redis_url)
    admin.acl_setuser("tuner", enabled=True, passwords=["+s3cret"], keys=["*"], commands=["+@all", "-config|set"])
    port = live_stack.info.redis_port
    be = LiveRedisBackend(f"redis://tuner:s3cret@127.0.0.1:{port}/0", live_stack.prometheus_url, interval_s=2.0)
    try:
        current = be.config
        res = be.apply(current.evolve(maxmemory=current.maxmemory + 1_048_576))
        assert not res.ok
        assert "NOPERM" in (res.error or "")
        assert res.applied == current  # verified with CONFIG GET: nothing changed
    finally:
        be.close()
        admin.acl_deluser("tuner")


def test_snapshot_from_prometheus_matches_info(backend: LiveRedisBackend, live_stack: LocalStack) -> None:
    r = redis.Redis.from_url(live_stack.redis_url)
    r.flushall()
    assert backend.apply(RedisConfig(maxmemory=2_000_000, maxmemory_policy="allkeys-lru")).ok
    trace = read_trace("bundled:web07", size_model="fixed:1000", limit=15_000)
    time.sleep(1.5)  # quiet period: the window start falls between scrapes of an idle Redis
    t0 = time.time() - 0.5
    i0 = r.info("stats")
    res = replay(trace, live_stack.redis_url, ReplayOptions(rate=10_000, stack_dir=str(live_stack.dir), sample_rate=0.5))
    i1, k1 = r.info("stats"), r.dbsize()
    deadline = time.time() + 30  # until Prometheus has scraped the final counters (a loaded machine scrapes late)
    while True:
        time.sleep(0.5)
        snap = backend.read(t0, time.time() - 0.2)
        if (not snap.stale and snap.gets >= res.gets) or time.time() > deadline:
            break
    i2, k2 = r.info("stats"), r.dbsize()
    assert not snap.stale, getattr(backend, "last_stale_reason", "")
    assert snap.hits == i1["keyspace_hits"] - i0["keyspace_hits"] == res.hits
    assert snap.misses == i1["keyspace_misses"] - i0["keyspace_misses"] == res.misses
    # The exporter's own replies (INFO, CONFIG GET *) grow client buffers over a full maxmemory, so
    # Redis may evict a few more keys after the replay: bracket with INFO before and after the read.
    assert 0 < i1["evicted_keys"] - i0["evicted_keys"] <= snap.evictions <= i2["evicted_keys"] - i0["evicted_keys"]
    assert snap.gets == res.gets == 15_000
    assert snap.sets == res.sets
    assert k2 <= snap.keys <= k1  # the same post-replay evictions: keys only fall after the replay
    assert snap.maxmemory == 2_000_000
    assert 0 < snap.used_memory <= snap.peak_used_memory
    assert snap.config.maxmemory_policy == "allkeys-lru"
    assert 0 < snap.latency_p50_ms <= snap.latency_p95_ms <= snap.latency_p99_ms
    assert snap.is_finite()
    # The sampled stream (rate 0.5) holds requests of that window, unless Redis evicted the stream key
    # itself after the replay (allkeys-lru over a full maxmemory, as above; docs/live.md): then the key
    # is gone, not empty, and keys were evicted after the replay.
    sample = backend.recent_requests()
    if len(sample.keys) == 0:
        assert not r.exists(sampling.stream_key("cachetuner:")), "stream present but no entries read"
        assert r.info("stats")["evicted_keys"] > i1["evicted_keys"]
        return
    assert sample.rate == 0.5
    assert 0 < len(sample.keys) <= 15_000
    assert set(np.unique(sample.ops)) <= {0}
    assert np.isin(sample.keys, trace.keys).all()


def test_the_stream_tails_own_reads_are_not_the_applications_hits(backend: LiveRedisBackend,
                                                                    live_stack: LocalStack) -> None:
    """Redis counts each of the tail's XRANGE polls (four a second) as a keyspace hit; the snapshot leaves them out,
    so on a quiet cache the tuner does not read its own polling as traffic that hits."""
    r = redis.Redis.from_url(live_stack.redis_url)
    r.flushall()
    key = sampling.stream_key("cachetuner:")
    r.xadd(key, {"k": 1, "s": 100, "o": 0, "t": time.time(), "r": 1.0})
    backend.recent_requests()  # starts the tail
    time.sleep(1.5)
    t0 = time.time()
    i0 = r.info("stats")
    for _ in range(7):
        assert r.get("absent") is None  # seven application misses, no hits
    time.sleep(3.0)
    t1 = time.time()
    i1 = r.info("stats")
    time.sleep(2.5)  # until Prometheus has scraped past t1
    snap = backend.read(t0, t1)
    assert not snap.stale, getattr(backend, "last_stale_reason", "")
    polls = i1["keyspace_hits"] - i0["keyspace_hits"]
    assert polls >= 6, "the tail did not poll the stream"  # ~12 in 3 s
    assert i1["keyspace_misses"] - i0["keyspace_misses"] == 7
    # the window's counters come from the scrapes before t0 and t1 (up to 1 s early), the tail's reads by their
    # own clock: a poll or two may fall on the other side of a boundary
    assert snap.hits <= 2, f"{snap.hits} of the tail's {polls} polls counted as application hits"
    assert snap.misses == 7


def test_prometheus_down_gives_stale_snapshot(live_stack: LocalStack) -> None:
    be = LiveRedisBackend(live_stack.redis_url, f"http://127.0.0.1:{free_port()}", interval_s=2.0, query_timeout_s=1.0)
    try:
        now = time.time()
        snap = be.read(now - 2, now)
        assert snap.stale
        assert snap.hits == 0
    finally:
        be.close()
    good = LiveRedisBackend(live_stack.redis_url, live_stack.prometheus_url, interval_s=2.0)
    try:
        first = good.reset()
        assert not first.stale
        good._prom.url = f"http://127.0.0.1:{free_port()}"  # Prometheus goes away mid-episode
        later = good.read(time.time() - 2, time.time())
        assert later.stale and later.used_memory == first.used_memory
    finally:
        good.close()


def test_step_waits_for_the_next_boundary(backend: LiveRedisBackend) -> None:
    backend.reset()
    a = backend.step()
    b = backend.step()
    assert a.interval_s == b.interval_s == 2.0
    assert backend._window[1] % 2.0 == 0.0
    assert not b.stale
