"""``cachetuner trace info/formats``: one JSON object on stdout; user errors exit 2 with one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

import cachetuner.cli.trace_cmds  # noqa: F401  (registers the commands)
from cachetuner.cli.app import app
from cachetuner.traces import FORMATS, SYNTHETIC_WORKLOADS

runner = CliRunner()


def test_info_json_bundled() -> None:
    res = runner.invoke(app, ["trace", "info", "--trace", "bundled:web07", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)  # exactly one JSON object
    assert data["requests"] == 50_000 and data["unique_keys"] == 16_572
    assert data["read_only"] is True and data["top1pct_share"] == 0.32482
    assert data["working_set_bytes"] == 16_572 * 4096
    assert data["sizes"]["min"] == data["sizes"]["max"] == 4096
    # what simulating it takes: 33 B a request (time, key, size, TTL, op) + 4 B a key name length, and the
    # simulator's state per distinct key; the memory this process may still take (the guards' figure)
    from cachetuner.sim.state import state_bytes_per_key

    mem = data["memory"]
    assert mem["trace_bytes"] == 50_000 * 33 + 16_572 * 4
    assert mem["simulator_state_bytes"] == 16_572 * state_bytes_per_key()
    assert mem["available_bytes"] > 64 << 20
    text = runner.invoke(app, ["trace", "info", "--trace", "bundled:web07"]).stdout
    assert "memory to simulate" in text and "2.4 MiB" in text  # (the table may wrap the line anywhere)


def test_info_json_all_options(shared_traces: Path, tmp_path: Path) -> None:
    params = tmp_path / "p.yaml"
    params.write_text("expand: false\n")
    res = runner.invoke(
        app,
        ["trace", "info", "--trace", str(shared_traces / "arc/P3.lis"), "--format", "arc", "--params", str(params),
         "--size-model", "fixed:100", "--rate", "10", "--seed", "2", "--limit", "1000", "--json"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["requests"] == 1000 and data["duration_s"] == 99.9 and data["sizes"]["mean"] == 100


def test_info_synthetic_table() -> None:
    res = runner.invoke(app, ["trace", "info", "--trace", "synthetic:read-write", "--limit", "5000"])
    assert res.exit_code == 0 and "unique keys" in res.stdout and "ops get/set/delete" in res.stdout


def test_formats_json_lists_registries() -> None:
    res = runner.invoke(app, ["trace", "formats", "--json"])
    data = json.loads(res.stdout)
    assert {f["name"] for f in data["formats"]} == set(FORMATS)
    assert {w["name"] for w in data["synthetic"]} == {f"synthetic:{n}" for n in SYNTHETIC_WORKLOADS}


def test_user_error_exits_2_with_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.trace"
    bad.write_text("1\n2\nnope\n")
    proc = subprocess.run(
        [sys.executable, "-m", "cachetuner.cli.main", "trace", "info", "--trace", str(bad), "--format", "lirs", "--json"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [f"error: {bad}:3: field 'id' is not an integer: 'nope'"]


def test_progress_bar_goes_to_stderr(shared_traces: Path, monkeypatch) -> None:
    import cachetuner.cli.trace_options as opts

    monkeypatch.setattr(opts, "PROGRESS_MIN_BYTES", 0)
    res = runner.invoke(app, ["trace", "info", "--trace", str(shared_traces / "lirs/ps.trace"), "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["format"] == "lirs"


def test_bench_traces_json(shared_traces: Path) -> None:
    res = runner.invoke(app, ["bench", "traces", "--shared", str(shared_traces), "--n-requests", "2000"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    by_file = {f["file"]: f for f in data["files"]}
    assert by_file["cache2k/orm-night.trace.zst"]["requests"] == 5_000_000
    assert by_file["cloudphysics/cloudPhysicsIO.csv"]["unique_keys"] == 48_974
    assert {s["workload"] for s in data["synthetic"]} == set(SYNTHETIC_WORKLOADS)
    assert all(s["requests"] == 2000 for s in data["synthetic"])
