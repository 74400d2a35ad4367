"""The local MLflow store under concurrent first use: several processes (two seeds trained side by side,
parallel suite cells) pointed at one fresh ``sqlite:///`` store must all come up. Without the lock in
``cachetuner.tracking.setup_tracking`` this failed in most tries with alembic's "Online migration
expected to match one row" traceback (measured 2026-12-01: 3 of 3 tries lost at least one process)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

_SCRIPT = """
import sys
import mlflow
from cachetuner.tracking.mlflow_utils import setup_tracking
uri = setup_tracking(f"sqlite:///{sys.argv[1]}/mlflow.db", experiment="race", root=sys.argv[1])
with mlflow.start_run():
    mlflow.log_param("proc", sys.argv[2])
print("ok")
"""


def test_processes_initialising_one_fresh_store_at_once_all_succeed(tmp_path: Path) -> None:
    script = tmp_path / "race.py"
    script.write_text(_SCRIPT)
    store = tmp_path / "store"
    store.mkdir()
    procs = [subprocess.Popen([sys.executable, str(script), str(store), str(i)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for i in range(3)]
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (out, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0 and out.strip() == "ok", err[-2000:]

    import mlflow

    client = mlflow.tracking.MlflowClient(tracking_uri=f"sqlite:///{store}/mlflow.db")
    exp = client.get_experiment_by_name("race")
    assert exp is not None
    runs = client.search_runs([exp.experiment_id])
    assert sorted(r.data.params["proc"] for r in runs) == ["0", "1", "2"]  # one experiment, every run in it
