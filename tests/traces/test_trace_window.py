"""A window of a long trace (``start`` + ``limit``): the same requests as a full read, renumbered as a trace of its own."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import cachetuner.cli.trace_cmds  # noqa: F401  (registers the commands)
from cachetuner.cli.app import app
from cachetuner.env.config import WorkloadSpec
from cachetuner.env.sim_backend import load_workload
from cachetuner.errors import ConfigError, TraceError
from cachetuner.traces import read_trace


def _canon(keys: np.ndarray) -> np.ndarray:
    """Key ids renumbered by first appearance: two reads of the same requests agree whatever their numbering."""
    _, first, inv = np.unique(keys, return_index=True, return_inverse=True)
    return np.argsort(np.argsort(first))[inv]


@pytest.mark.parametrize(
    ("rel", "fmt", "kw"),
    [
        ("cloudphysics/cloudPhysicsIO.csv", "auto", {}),  # own timestamps, sizes and writes
        ("arc/P3.lis", "arc", {"size_model": "fixed:4096"}),  # one request per 512-byte block: the window cuts a line
        ("lirs/multi2.trace", "lirs", {"rate": 50.0}),
        ("cache2k/orm-night.trace.zst", "raw-be-i4", {}),  # zstd stream, binary records
        ("meta_kvcache/kv_traces_1.csv", "auto", {}),  # rows expanded to op_count requests
    ],
)
def test_a_window_is_the_same_requests_as_a_full_read(shared_traces: Path, rel: str, fmt: str, kw: dict) -> None:
    path = shared_traces / rel
    full = read_trace(path, fmt, limit=3_000, **kw)
    start, n = (1_234, 1_500) if len(full) == 3_000 else (20, 40)
    win = read_trace(path, fmt, start=start, limit=n, **kw)
    part = full.slice(start, start + n)
    assert len(win) == n and win.meta["start"] == start
    assert np.array_equal(_canon(win.keys), _canon(part.keys))
    assert win.n_keys == len(np.unique(part.keys))  # the window's own key space, not the source's
    assert np.array_equal(win.ops, part.ops) and np.array_equal(win.ttls, part.ttls)
    if "rate" not in kw and fmt != "arc" and fmt != "raw-be-i4":
        assert np.array_equal(win.timestamps, part.timestamps)  # a trace's own clock is kept, not rebased
        assert np.array_equal(win.sizes, part.sizes)


def test_start_without_limit_reads_to_the_end_and_past_the_end_is_one_line(shared_traces: Path) -> None:
    path = shared_traces / "lirs/cpp.trace"
    full = read_trace(path)
    rest = read_trace(path, start=len(full) - 100)
    assert len(rest) == 100
    assert np.array_equal(_canon(rest.keys), _canon(full.keys[-100:]))
    with pytest.raises(TraceError, match=r"start 9,047 is past the trace's last request \(9,047 requests\)"):
        read_trace(path, start=len(full))
    with pytest.raises(TraceError, match="start must be >= 0"):
        read_trace(path, start=-1)


def test_a_synthetic_window_and_a_workload_spec_window(shared_traces: Path) -> None:
    whole = read_trace("synthetic:zipf", params={"n_requests": 2_000, "n_keys": 300}, seed=4)
    win = read_trace("synthetic:zipf", params={"n_requests": 2_000, "n_keys": 300}, seed=4, start=500, limit=700)
    assert np.array_equal(_canon(win.keys), _canon(whole.keys[500:1200]))
    spec = WorkloadSpec(trace=str(shared_traces / "lirs/cs.trace"), format="lirs", start=1_000, limit=2_000, rate=10)
    tr = load_workload(spec)
    assert len(tr) == 2_000 and tr.meta["start"] == 1_000
    # `skip` keeps the whole read's key space; `start` makes the window a trace of its own
    skipped = load_workload(WorkloadSpec(trace=spec.trace, format="lirs", limit=3_000, skip=1_000, rate=10))
    assert np.array_equal(_canon(skipped.keys), _canon(tr.keys)) and tr.n_keys < skipped.n_keys


def test_cli_start_option(shared_traces: Path) -> None:
    runner = CliRunner()
    path = str(shared_traces / "lirs/multi1.trace")
    res = runner.invoke(app, ["trace", "info", "--trace", path, "--start", "5000", "--limit", "1000", "--json"])
    assert res.exit_code == 0, res.output
    info = json.loads(res.stdout)
    assert info["start"] == 5_000 and info["requests"] == 1_000
    for args, line in (
        (["trace", "info", "--trace", path, "--start", "10000000"],
         "error: multi1.trace: start 10,000,000 is past the trace's last request (15,858 requests)"),
        (["evaluate", "--suite", "experiments/suite.yaml", "--start", "10"],
         "error: --start: with --suite these come from the suite file (its traces, seeds, intervals and config:)"),
    ):
        proc = subprocess.run([sys.executable, "-m", "cachetuner.cli.main", *args], capture_output=True, text=True,
                              timeout=300)
        assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [line]


def test_evaluation_env_takes_start_only_with_a_trace(shared_traces: Path) -> None:
    from cachetuner.agent.config import TrainConfig
    from cachetuner.reports.evaluate import evaluation_env

    cfg = TrainConfig.model_validate({"experiment": "x", "total_timesteps": 1})
    env_cfg, _ = evaluation_env(cfg, trace=str(shared_traces / "lirs/ps.trace"), fmt="lirs", start=100, limit=500)
    assert env_cfg.workloads[0].start == 100 and env_cfg.workloads[0].limit == 500
    with pytest.raises(ConfigError, match="--start: only with --trace"):
        evaluation_env(cfg, start=100)


def test_a_suite_cell_replays_only_its_window(shared_traces: Path) -> None:
    from cachetuner.agent.config import TrainConfig
    from cachetuner.reports.suite import SuiteTrace, suite_cell

    cfg = TrainConfig.model_validate({"experiment": "x", "total_timesteps": 1})
    tr = SuiteTrace(trace=str(shared_traces / "lirs/cs.trace"), format="lirs", rate=2, start=2_000, limit=3_000)
    cell = suite_cell(cfg, ["static-default"], None, tr, "scaled", 0, None)
    assert cell["window"] == {"start": 2_000, "limit": 3_000}
    head = suite_cell(cfg, ["static-default"], None, tr.model_copy(update={"start": 0}), "scaled", 0, None)
    assert "window" not in head
    # as long as the trace's first 3,000 requests (1,500 s at 2 req/s), and other traffic
    assert cell["tuners"]["static-default"]["intervals"] == head["tuners"]["static-default"]["intervals"] > 0
    assert cell["tuners"]["static-default"]["hit_ratio"] != head["tuners"]["static-default"]["hit_ratio"]
