"""``bench replay``: the replayer's throughput next to redis-benchmark's, one fresh redis-server, one run.

Both sides use the same pipeline depth against the same server; redis-benchmark runs
``-t get,set -P DEPTH -q`` (its ops/s is the mean of the GET and SET lines). The replayer runs flat
out (no pacing, no metrics server, no sampling), so the ratio measures the replayer's client-side
overhead: per-request Python work, read-through fills and batch cutting on repeated keys.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
import time

from cachetuner.errors import ServiceError
from cachetuner.live.replay import ReplayOptions, replay
from cachetuner.live.stack import LocalStack
from cachetuner.traces.trace import Trace

REDIS_BENCHMARK = "/usr/bin/redis-benchmark"
_LINE = re.compile(r"^(GET|SET):\s*([0-9.]+)\s+requests per second", re.MULTILINE)


def run_redis_benchmark(port: int, pipeline: int, requests: int, clients: int, value_bytes: int) -> dict[str, float]:
    """ops/s per command from ``redis-benchmark -q`` (parses ``GET: 123.45 requests per second``)."""
    argv = [
        REDIS_BENCHMARK, "-h", "127.0.0.1", "-p", str(port), "-t", "get,set", "-P", str(pipeline), "-q",
        "-n", str(requests), "-c", str(clients), "-d", str(value_bytes), "-r", "100000",
    ]  # fmt: skip
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)
    text = proc.stdout.replace("\r", "\n")
    found = {m.group(1): float(m.group(2)) for m in _LINE.finditer(text)}
    if proc.returncode != 0 or set(found) != {"GET", "SET"}:
        raise ServiceError(f"redis-benchmark failed (rc={proc.returncode}): {text[-300:]} {proc.stderr[-300:]}")
    return found


def bench_replay(trace: Trace, *, pipeline: int = 64, requests: int = 200_000, clients: int = 1) -> dict:
    """Replay ``requests`` requests of ``trace`` (looping) flat out, then redis-benchmark; both against one server."""
    with tempfile.TemporaryDirectory(prefix="ct-bench-") as d, LocalStack(d, maxmemory=0, redis_only=True) as stack:
        opts = ReplayOptions(pipeline=pipeline, max_requests=requests, loop=True, metrics_port=None, sample_rate=0.0)
        t0, c0 = time.perf_counter(), time.process_time()
        res = replay(trace, stack.redis_url, opts)
        replay_wall, replay_cpu = time.perf_counter() - t0, time.process_time() - c0
        value_bytes = int(trace.sizes.mean()) if len(trace) else 64
        bench = run_redis_benchmark(stack.info.redis_port, pipeline, requests, clients, value_bytes)
    rb = (bench["GET"] + bench["SET"]) / 2.0
    return {
        "trace": trace.name,
        "pipeline": pipeline,
        "requests": res.requests,
        "replay_ops_per_s": res.requests_per_s,
        "replay_commands_per_s": res.commands_per_s,
        "replay_hit_ratio": res.hit_ratio,
        "replay_wall_s": replay_wall,
        # Client-side cost alone (useful on a shared machine, where wall time includes waiting for a CPU).
        "replay_cpu_s": replay_cpu,
        "replay_ops_per_cpu_s": res.requests / replay_cpu if replay_cpu > 0 else 0.0,
        "redis_benchmark_get_ops_per_s": bench["GET"],
        "redis_benchmark_set_ops_per_s": bench["SET"],
        "redis_benchmark_ops_per_s": rb,
        "redis_benchmark_clients": clients,
        "value_bytes": value_bytes,
        "ratio": res.requests_per_s / rb if rb else 0.0,
    }
