"""Tracking store defaults and small logging helpers.

Default store: ``sqlite:///mlflow.db`` in the current directory with artifacts under ``./mlruns``
(MLflow 3 refuses the plain file store). ``--tracking-uri`` or ``MLFLOW_TRACKING_URI`` switches to
a server.
"""

from __future__ import annotations

import os
import tempfile
import time
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

DEFAULT_DB = "mlflow.db"
DEFAULT_ARTIFACTS = "mlruns"


def default_tracking_uri(root: str | Path | None = None) -> str:
    root = Path(root or os.getcwd()).resolve()
    return f"sqlite:///{root / DEFAULT_DB}"


def sqlite_path(uri: str | None) -> Path | None:
    """The database file of a local ``sqlite:///PATH`` store; ``None`` for any other store."""
    if uri and uri.startswith("sqlite:///"):
        return Path(uri[len("sqlite:///"):])
    return None


def setup_tracking(tracking_uri: str | None = None, experiment: str = "cachetuner", root: str | Path | None = None) -> str:
    """Point MLflow at ``tracking_uri`` (or env / the local default) and select ``experiment``.

    For the local sqlite store the experiment's artifact location is ``<root>/mlruns`` so that
    artifacts sit next to the database instead of MLflow's default ``./mlartifacts`` server path.
    Returns the tracking URI in use.
    """
    import logging

    import mlflow

    logging.getLogger("mlflow").setLevel(logging.WARNING)
    logging.getLogger("alembic").setLevel(logging.WARNING)
    uri = tracking_uri or os.environ.get("MLFLOW_TRACKING_URI") or default_tracking_uri(root)
    mlflow.set_tracking_uri(uri)
    with _store_lock(uri):
        if mlflow.get_experiment_by_name(experiment) is None:
            artifact_location = None
            if uri.startswith("sqlite:"):
                base = Path(root or os.getcwd()).resolve() / DEFAULT_ARTIFACTS
                base.mkdir(parents=True, exist_ok=True)
                artifact_location = base.as_uri()
            mlflow.create_experiment(experiment, artifact_location=artifact_location)
        mlflow.set_experiment(experiment)
    return uri


def _store_lock(uri: str) -> AbstractContextManager[Any]:
    """An inter-process lock next to a local ``sqlite:///PATH`` store, held while the store is first
    touched. Why: MLflow creates and migrates a fresh sqlite database on first use, and two processes
    doing that at once (two seeds trained side by side, parallel suite cells) both run the migrations
    and one dies with alembic's "expected to match one row" traceback; two creating the same
    experiment collide the same way. Other stores (a tracking server) serialise this themselves."""
    db = sqlite_path(uri)
    if db is None:
        return nullcontext()
    from filelock import FileLock

    db.parent.mkdir(parents=True, exist_ok=True)
    return FileLock(str(db) + ".lock", timeout=300)


def run_name(env: str, experiment: str, seed: int | str) -> str:
    """CleanRL-style run name ``{env}__{experiment}__{seed}__{time}``."""
    return f"{env}__{experiment}__{seed}__{int(time.time())}"


def log_figure_png(fig: Any, name: str, artifact_path: str = "plots") -> None:
    """Save a matplotlib figure as PNG and log it to the active MLflow run."""
    import matplotlib.pyplot as plt
    import mlflow

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / (name if name.endswith(".png") else f"{name}.png")
        fig.savefig(p, dpi=110, bbox_inches="tight")
        mlflow.log_artifact(str(p), artifact_path=artifact_path)
    plt.close(fig)
