"""``cachetuner simulate --accounting exact``: libCacheSim's accounting and request semantics (value bytes
only, every request a lookup), so ``exact-lru`` reports exactly libCacheSim's LRU misses — golden
cross-check on two shared traces (one read-only, one with writes) at three sizes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cachetuner.cli.main import _load_commands, app
from cachetuner.sim.reference import libcachesim_lru
from cachetuner.traces import read_trace

TRACES = [("cache2k/web07.trace", "raw-be-i4", "fixed:4096"), ("cloudphysics/cloudPhysicsIO.csv", "auto", None)]


@pytest.mark.parametrize(("rel", "fmt", "size_model"), TRACES)
@pytest.mark.parametrize("maxmemory", ["2mb", "16mb", "64mb"])
def test_exact_accounting_equals_libcachesim_lru(shared_traces: Path, rel: str, fmt: str, size_model: str | None,
                                                 maxmemory: str) -> None:
    _load_commands()
    args = ["simulate", "--trace", str(shared_traces / rel), "--format", fmt, "--policy", "exact-lru",
            "--maxmemory", maxmemory, "--accounting", "exact", "--json"]
    if size_model:
        args += ["--size-model", size_model]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    tr = read_trace(str(shared_traces / rel), format=fmt, size_model=size_model)  # libCacheSim: every request a lookup
    assert out["accounting"] == "exact"
    assert out["misses"] == libcachesim_lru(tr, out["maxmemory"]).misses > 0


def test_exact_accounting_refuses_redis_memory_options() -> None:
    _load_commands()
    res = CliRunner().invoke(app, ["simulate", "--accounting", "exact", "--per-key-overhead", "10", "--json"])
    assert res.exit_code != 0
    assert "--per-key-overhead" in str(res.exception)
