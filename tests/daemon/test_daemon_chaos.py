"""Every chaos fault against the real stack (redis-server, redis_exporter, Prometheus, replayer) with the
daemon as a real subprocess, through the CLI: the JSON report must show survival, zero out-of-bounds
applies and zero lost decisions for each fault. Short intervals (1 s) and faults (4 s)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cachetuner.daemon.chaos import FAULT_NAMES


@pytest.mark.integration
@pytest.mark.slow
def test_chaos_all_faults_survived(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "cachetuner.cli.main", "chaos", "--json", "--duration-per-fault", "4",
         "--no-tracking", "--workdir", str(tmp_path / "chaos")],
        capture_output=True, timeout=900, cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    report = json.loads(proc.stdout)
    faults = report["faults"]
    assert list(faults) == list(FAULT_NAMES)
    for name, r in faults.items():
        assert r["out_of_bounds_applied"] == 0, json.dumps({name: r})
        assert r["decisions_lost"] == 0, json.dumps({name: r})
        assert r["survived"], json.dumps({name: r})
    assert faults["latency_injection"]["rollbacks"] >= 1
    assert faults["latency_injection"]["rollback_intervals"] <= 1
    assert faults["redis_restart"]["checks"]["restart_detected"]
    assert faults["config_refused"]["checks"]["no_hot_loop"]
    assert faults["triton_down"]["checks"]["fallback_answered"]
    assert report["daemon_final_exit_code"] == 0
    # every process the run started is gone: the stack's stack.json was removed by `down`
    assert not (tmp_path / "chaos" / "stack" / "stack.json").exists()
