"""``bench replay``: the replayer's throughput next to redis-benchmark's, one fresh redis-server, side by side.

Both sides use the same pipeline depth against the same server; redis-benchmark runs
``-t get,set -P DEPTH -q`` (its ops/s is the mean of the GET and SET lines). The replayer runs flat
out (no pacing, no metrics server, no sampling), so the ratio measures the replayer's client-side
overhead: per-request Python work, read-through fills and batch cutting on repeated keys.

On a shared machine a single pair of runs mostly measures the load of the moment, so the two sides
alternate for ``rounds`` rounds (``FLUSHALL`` before each replay: every replay starts cold, as on a
fresh server) and the medians are reported; ``ratio`` is median replay / median redis-benchmark, the
per-round ratios are listed too. ``replay_ops_per_cpu_s`` (requests per CPU second of the replaying
process, user + system) is the load-independent figure.
"""

from __future__ import annotations

import re
import statistics
import subprocess
import tempfile
import time

from cachetuner.errors import ConfigError, ServiceError
from cachetuner.live.replay import replay, replay_options
from cachetuner.live.resp import redis_client
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


def bench_replay(trace: Trace, *, pipeline: int = 64, requests: int = 200_000, clients: int = 1, rounds: int = 3) -> dict:
    """Alternate ``rounds`` x (replay ``requests`` of ``trace`` flat out, redis-benchmark) against one server; medians."""
    if rounds < 1:
        raise ServiceError(f"bench replay: rounds={rounds} must be >= 1")
    if clients < 1:  # redis-benchmark would run with its default instead, and the JSON would record the bad value
        raise ConfigError(f"--clients: redis-benchmark connections must be >= 1, got {clients}")
    # checked before the server starts (one line naming the option, not a traceback after the first round)
    opts = replay_options(
        {"max_requests": "--requests"}, pipeline=pipeline, max_requests=requests, loop=True, metrics_port=None, sample_rate=0.0
    )
    value_bytes = int(trace.sizes.mean()) if len(trace) else 64
    rows: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory(prefix="ct-bench-") as d, LocalStack(d, maxmemory=0, redis_only=True) as stack:
        admin = redis_client(stack.redis_url)
        try:
            for _ in range(rounds):
                admin.flushall()
                t0, c0 = time.perf_counter(), time.process_time()
                res = replay(trace, stack.redis_url, opts)
                wall, cpu = time.perf_counter() - t0, time.process_time() - c0
                bench = run_redis_benchmark(stack.info.redis_port, pipeline, requests, clients, value_bytes)
                rb = (bench["GET"] + bench["SET"]) / 2.0
                rows.append({
                    "requests": res.requests, "ops": res.requests_per_s, "cmds": res.commands_per_s, "hr": res.hit_ratio,
                    "wall": wall, "cpu": cpu, "get": bench["GET"], "set": bench["SET"], "rb": rb,
                })  # fmt: skip
        finally:
            admin.close()

    def med(key: str) -> float:
        return float(statistics.median(r[key] for r in rows))

    ops, rb, cpu = med("ops"), med("rb"), med("cpu")
    return {
        "trace": trace.name,
        "pipeline": pipeline,
        "requests": int(rows[-1]["requests"]),
        "rounds": rounds,
        "replay_ops_per_s": ops,
        "replay_commands_per_s": med("cmds"),
        "replay_hit_ratio": rows[-1]["hr"],
        "replay_wall_s": med("wall"),
        # Client-side cost alone (useful on a shared machine, where wall time includes waiting for a CPU).
        "replay_cpu_s": cpu,
        "replay_ops_per_cpu_s": float(statistics.median(r["requests"] / r["cpu"] for r in rows if r["cpu"] > 0)) if cpu > 0 else 0.0,
        "redis_benchmark_get_ops_per_s": med("get"),
        "redis_benchmark_set_ops_per_s": med("set"),
        "redis_benchmark_ops_per_s": rb,
        "redis_benchmark_clients": clients,
        "value_bytes": value_bytes,
        "ratio": ops / rb if rb else 0.0,
        "ratio_per_round": [r["ops"] / r["rb"] for r in rows],
        "replay_ops_per_s_per_round": [r["ops"] for r in rows],
        "redis_benchmark_ops_per_s_per_round": [r["rb"] for r in rows],
    }
