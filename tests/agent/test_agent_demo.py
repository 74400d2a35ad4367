"""``cachetuner demo`` end to end with a tiny budget: trains, evaluates every tuner on both held-out
workloads, logs to MLflow and prints one JSON object (what ``make demo`` runs, at full budget)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import mlflow
import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_demo_trains_and_evaluates_every_tuner_on_held_out_traffic(tmp_path: Path, mlflow_store) -> None:
    uri = mlflow_store(tmp_path)
    proc = subprocess.run(
        [sys.executable, "-m", "cachetuner.cli.main", "demo", "--timesteps", "256", "--intervals", "4",
         "--output-dir", str(tmp_path / "runs"), "--tracking-uri", uri, "--json"],
        cwd=REPO, capture_output=True, text=True, timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stdout[-2000:]
    out = json.loads(lines[0])
    model = Path(out["model_path"])
    assert model.is_file() and (tmp_path / "runs" / "quickstart" / "model.zip").is_file()
    assert set(out["evaluations"]) == {"web12", "shifting-heldout"}
    for ev in out["evaluations"].values():
        assert set(ev["tuners"]) == {"ppo", "mrc", "static-default", "best-static", "dp-hindsight", "hill-climb"}
        for summary in ev["tuners"].values():
            assert summary["intervals"] == 4
            assert 0.0 <= summary["hit_ratio"] <= 1.0 and summary["cost"] > 0
    mlflow.set_tracking_uri(uri)
    runs = mlflow.search_runs(search_all_experiments=True)
    ids = set(runs["run_id"])
    assert out["train"]["mlflow_run_id"] in ids
    assert {ev["mlflow_run_id"] for ev in out["evaluations"].values()} <= ids
