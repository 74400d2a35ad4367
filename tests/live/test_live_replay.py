"""The trace replayer against a real redis-server: read-through accounting, explicit ops, metrics, bench."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import redis
from prometheus_client import generate_latest

from cachetuner.live.replay import ReplayMetrics, ReplayOptions, replay
from cachetuner.live.stack import LocalStack
from cachetuner.metrics import LATENCY_BUCKETS_S
from cachetuner.traces import numeric_key_bytes, read_trace
from cachetuner.traces.trace import Op, Trace


def _server(r: redis.Redis) -> dict:
    s = r.info("stats")
    return {k: int(s[k]) for k in ("keyspace_hits", "keyspace_misses", "evicted_keys")}


def test_hits_plus_misses_equal_gets_sent(redis_only: LocalStack) -> None:
    r = redis.Redis.from_url(redis_only.redis_url)
    r.config_set("maxmemory", 3_000_000)
    r.config_set("maxmemory-policy", "allkeys-lru")
    trace = read_trace("bundled:web07", size_model="fixed:1000", limit=20_000)
    metrics = ReplayMetrics()
    before = _server(r)
    res = replay(trace, redis_only.redis_url, ReplayOptions(pipeline=64, sample_rate=0.0, metrics_port=None), metrics=metrics)
    after = _server(r)
    assert res.gets == 20_000 == res.requests
    assert res.hits + res.misses == res.gets
    assert after["keyspace_hits"] - before["keyspace_hits"] == res.hits
    assert after["keyspace_misses"] - before["keyspace_misses"] == res.misses
    assert res.fills == res.misses  # read-through: every miss is filled
    assert after["evicted_keys"] > before["evicted_keys"]
    assert res.stopped_by == "end_of_trace" and res.next_index == 20_000
    # Exposition: the shared buckets, counters equal to the result.
    text = generate_latest(metrics.registry).decode()
    les = [line.split('le="')[1].split('"')[0] for line in text.splitlines() if line.startswith("cachetuner_request_latency_seconds_bucket")]
    assert [float(x) for x in les[:-1]] == list(LATENCY_BUCKETS_S) and les[-1] == "+Inf"
    assert f"cachetuner_request_latency_seconds_count {float(res.requests)}" in text
    assert f"cachetuner_hits_total {float(res.hits)}" in text
    assert f"cachetuner_misses_total {float(res.misses)}" in text


def test_explicit_set_delete_ttl_and_oom(redis_only: LocalStack) -> None:
    """A read-write trace: SET with TTL, GET hits, DELETE, GET misses without fill; OOM counted under noeviction."""
    keys = np.array([0, 0, 1, 0, 0, 1, 2, 2], dtype=np.int64)
    ops = np.array([Op.SET, Op.GET, Op.GET, Op.DELETE, Op.GET, Op.SET, Op.SET, Op.GET], dtype=np.uint8)
    trace = Trace(
        name="handmade", timestamps=np.arange(8, dtype=np.float64), keys=keys,
        sizes=np.array([100, 100, 50, 100, 100, 50, 70, 70], dtype=np.int64), ops=ops,
        ttls=np.array([0, 0, 0, 0, 0, 60.0, 0, 0]), n_keys=3, key_bytes=numeric_key_bytes(3), read_only=False,
    )  # fmt: skip
    r = redis.Redis.from_url(redis_only.redis_url)
    res = replay(trace, redis_only.redis_url, ReplayOptions(pipeline=4, sample_rate=0.0, metrics_port=None))
    assert (res.gets, res.hits, res.misses, res.fills, res.deletes) == (4, 2, 2, 0, 1)
    assert res.sets == 3
    assert r.exists("ct:0") == 0
    assert r.strlen("ct:1") == 50 and 0 < r.pttl("ct:1") <= 60_000
    assert r.strlen("ct:2") == 70 and r.ttl("ct:2") == -1
    # noeviction with no room: every SET is refused with OOM and counted, never raised.
    r.flushall()
    r.config_set("maxmemory-policy", "noeviction")
    r.config_set("maxmemory", 1)
    res = replay(trace, redis_only.redis_url, ReplayOptions(pipeline=4, sample_rate=0.0, metrics_port=None))
    assert res.rejected_writes == 3 and res.errors == 0
    assert r.dbsize() == 0


def test_pacing_and_bounds(redis_only: LocalStack) -> None:
    trace = read_trace("bundled:web07", size_model="fixed:10", limit=5_000)
    res = replay(trace, redis_only.redis_url,
                 ReplayOptions(rate=2_000, max_requests=1_000, sample_rate=0.0, metrics_port=None, record_send_times=True))  # fmt: skip
    assert res.requests == 1_000 and res.stopped_by == "max_requests"
    sent = res.send_times[~np.isnan(res.send_times)]
    assert len(sent) == 1_000
    assert sent.max() - sent.min() >= 0.45  # 1000 requests at 2000/s span ~0.5 s of wall clock
    looped = replay(trace, redis_only.redis_url, ReplayOptions(loop=True, max_requests=12_000, sample_rate=0.0, metrics_port=None))
    assert looped.requests == 12_000
    timed = replay(trace, redis_only.redis_url, ReplayOptions(rate=500, duration_s=1.0, sample_rate=0.0, metrics_port=None))
    assert timed.stopped_by == "duration" and 0 < timed.requests < 5_000


def test_replay_cli_json(live_stack: LocalStack, cli_env: dict[str, str]) -> None:
    def replay_cli(*args: str) -> dict:
        out = subprocess.run(
            [sys.executable, "-m", "cachetuner.cli.main", "replay", "--trace", "bundled:web07", "--stack-dir",
             str(live_stack.dir), "--size-model", "fixed:100", "--sample-rate", "0", "--json", *args],
            capture_output=True, text=True, timeout=120, env=cli_env, check=False,
        )  # fmt: skip
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    d = replay_cli("--max-requests", "3000")
    assert d["requests"] == 3000 and d["hits"] + d["misses"] == 3000
    assert d["metrics_port"] > 0
    # --start: a window of the trace, replayed to its end (its last 1,000 requests here)
    assert replay_cli("--start", "49000")["requests"] == 1000


def test_bench_replay_json(cli_env: dict[str, str]) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "cachetuner.cli.main", "bench", "replay", "--requests", "30000", "--json"],
        capture_output=True, text=True, timeout=300, env=cli_env, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    d = json.loads(out.stdout)
    assert d["requests"] == 30000
    assert d["replay_ops_per_s"] > 0 and d["redis_benchmark_ops_per_s"] > 0
    assert abs(d["ratio"] - d["replay_ops_per_s"] / d["redis_benchmark_ops_per_s"]) < 1e-9


def test_overlap_and_exact_order_keep_read_through_outcomes(redis_only: LocalStack) -> None:
    """Building the next batch while one is on the wire (overlap), or not, or in exact order: on an
    unbounded Redis every GET's outcome is fixed by the earlier requests of its key, so the counts agree."""
    r = redis.Redis.from_url(redis_only.redis_url)
    trace = read_trace("bundled:web07", size_model="fixed:100", limit=20_000)
    outcomes = []
    for kw in ({"overlap": True}, {"overlap": False}, {"overlap": True, "exact_order": True}, {"overlap": True, "pipeline": 7}):
        r.flushall()
        before = _server(r)
        res = replay(trace, redis_only.redis_url, ReplayOptions(**{"pipeline": 64, "sample_rate": 0.0, "metrics_port": None, **kw}))
        after = _server(r)
        assert res.hits + res.misses == res.gets == 20_000
        assert after["keyspace_hits"] - before["keyspace_hits"] == res.hits
        assert after["keyspace_misses"] - before["keyspace_misses"] == res.misses
        assert r.dbsize() == res.misses  # every miss filled, nothing evicted
        outcomes.append((res.hits, res.misses, res.fills, res.commands))
    assert len(set(outcomes)) == 1, outcomes
    assert outcomes[0][1] == len(np.unique(trace.keys))  # exactly the first request of each key misses


def test_replay_follows_a_rate_profile(redis_only: LocalStack, cli_env: dict[str, str]) -> None:
    """``replay --rate R --rate-profile bursts:...``: R is the profile's mean and the replay follows the re-timed
    timestamps, so the lull between two bursts is a pause on the wire (a fixed pace at R would flatten it)."""
    from cachetuner.live.replay import replay_pacing

    assert replay_pacing(400.0, None, None) == (400.0, None)
    assert replay_pacing(400.0, None, "bursts:2,0.5") == (None, 1.0)
    assert replay_pacing(400.0, 2.0, "bursts:2,0.5") == (None, 2.0)
    # 1,200 requests at a mean of 400/s in 2-s periods: 800 in the first second, a silent second, 400 in half a second
    trace = read_trace("bundled:web07", size_model="fixed:10", limit=1_200, rate=400, rate_profile="bursts:2,0.5")
    rate, speedup = replay_pacing(400.0, None, "bursts:2,0.5")
    res = replay(trace, redis_only.redis_url, ReplayOptions(rate=rate, speedup=speedup, sample_rate=0.0, metrics_port=None,
                                                            record_send_times=True))  # fmt: skip
    assert res.requests == 1_200
    sent = np.sort(res.send_times[~np.isnan(res.send_times)])
    assert np.diff(sent).max() >= 0.9  # the lull: nothing is sent for about a second
    out = subprocess.run(
        [sys.executable, "-m", "cachetuner.cli.main", "replay", "--trace", "bundled:web07", "--redis", redis_only.redis_url,
         "--limit", "1200", "--size-model", "fixed:10", "--rate", "400", "--rate-profile", "bursts:2,0.5",
         "--sample-rate", "0", "--metrics-port", "-1", "--json"],
        capture_output=True, text=True, timeout=120, env=cli_env, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    d = json.loads(out.stdout)
    assert d["requests"] == 1_200 and d["elapsed_s"] >= 2.0  # the last request is due 2.5 s in
    bad = subprocess.run(
        [sys.executable, "-m", "cachetuner.cli.main", "replay", "--trace", "bundled:web07", "--redis", redis_only.redis_url,
         "--rate", "400", "--rate-profile", "bursts:2,1.5"],
        capture_output=True, text=True, timeout=120, env=cli_env, check=False,
    )  # fmt: skip
    assert bad.returncode == 2 and bad.stderr.strip().count("\n") == 0 and "--rate-profile" in bad.stderr, bad.stderr
