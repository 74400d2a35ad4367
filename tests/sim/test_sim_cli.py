"""``cachetuner simulate`` and ``cachetuner bench sim`` through the real entry point."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from simtraces import make_trace

from cachetuner.errors import ConfigError
from cachetuner.sim.sizing import parse_size

CLI = [sys.executable, "-c", "from cachetuner.cli.main import main; main()"]


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=600)


def test_simulate_json_has_the_report_fields():
    p = _run("simulate", "--trace", "bundled:web07", "--limit", "5000", "--policy", "allkeys-lfu",
             "--maxmemory", "5%", "--l2-capacity", "20mb", "--timeout", "2", "--json")  # fmt: skip
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    for k in ("requests", "gets", "hits", "misses", "hit_ratio", "byte_hit_ratio", "evictions", "expirations",
              "rejected_writes", "peak_used_memory", "p95_latency_ms", "miss_cost", "seconds", "requests_per_second"):  # fmt: skip
        assert k in d, k
    assert d["requests"] == 5000 and d["hits"] + d["misses"] == d["gets"]
    assert d["peak_used_memory"] <= d["maxmemory"] and d["l2_hits"] > 0
    assert d["config"]["maxmemory_policy"] == "allkeys-lfu"


def test_simulate_bad_policy_is_a_one_line_error():
    p = _run("simulate", "--trace", "bundled:web07", "--limit", "100", "--policy", "lru")
    assert p.returncode == 2
    assert "unknown maxmemory_policy 'lru'" in p.stderr and "Traceback" not in p.stderr


def test_bench_sim_exact_lru_equals_libcachesim():
    p = _run("bench", "sim", "--trace", "bundled:web07", "--limit", "20000", "--repeat", "1", "--json")
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    assert d["requests"] == 20000
    assert d["exact_lru_misses"] == d["libcachesim_lru_misses"] > 0
    for k in ("cachetuner_rps", "cachetuner_exact_lru_rps", "libcachesim_lru_rps", "ratio", "cachetuner_miss_ratio"):
        assert d[k] > 0


def test_parse_size():
    assert parse_size("500000") == 500000
    assert parse_size("64mb") == 64 * 1024**2
    assert parse_size("64m") == 64_000_000
    assert parse_size("1.5GiB") == int(1.5 * 1024**3)
    tr = make_trace([0, 1, 2, 3], sizes=1000)
    from cachetuner.sim import SimParams

    assert parse_size("50%", tr, SimParams.exact()) == 2000
    with pytest.raises(ConfigError, match="--maxmemory"):
        parse_size("lots", what="--maxmemory")
