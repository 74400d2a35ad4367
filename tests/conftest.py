"""Shared pytest fixtures.

Real public traces live in ``../shared/traces`` next to the repository (read-only); override with
``CACHETUNER_SHARED_TRACES``. Tests that need them fail loudly when they are missing — never skip.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_TRACES = Path(os.environ.get("CACHETUNER_SHARED_TRACES", REPO.parent / "shared" / "traces"))


@pytest.fixture(scope="session")
def shared_traces() -> Path:
    assert SHARED_TRACES.is_dir(), f"shared traces not found at {SHARED_TRACES} (set CACHETUNER_SHARED_TRACES)"
    return SHARED_TRACES


@pytest.fixture(autouse=True, scope="session")
def _one_torch_thread() -> None:
    """PPO and LSTM on 2 cores: one thread is 10-60x faster than two here."""
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:
        pass


@pytest.fixture(scope="session")
def mlflow_store(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., str]:
    """``mlflow_store(folder, name="mlflow.db")``: the ``sqlite:///`` URI of an empty MLflow store, ``folder/name``.

    MLflow creates a fresh sqlite store by running all its alembic migrations: 6-8 s on 2 cores, paid
    by every test that opens a new store, in-process or in a CLI subprocess (train, demo, sweep); a
    copy of a migrated store opens in well under a second. The migrations run once per session here;
    each store is a copy of that empty, migrated database (only the ``Default`` experiment, its
    artifact location moved into ``folder`` as a fresh store would have it), so the
    code under test still creates its experiments and runs itself. Creating a store from scratch,
    and doing so from several processes at once, is tested in tests/agent/test_tracking_store.py."""
    import mlflow

    template = tmp_path_factory.mktemp("mlflow-template") / "mlflow.db"
    mlflow.MlflowClient(f"sqlite:///{template}").search_experiments()

    def make(folder: Path, name: str = "mlflow.db") -> str:
        db = Path(folder) / name
        assert not db.exists(), db
        db.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(template, db)
        with contextlib.closing(sqlite3.connect(db)) as con, con:
            con.execute("UPDATE experiments SET artifact_location = ? WHERE experiment_id = 0",
                        (str(Path(folder).resolve() / "mlruns" / "0"),))
        return f"sqlite:///{db}"

    return make
