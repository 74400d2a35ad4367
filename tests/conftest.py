"""Shared pytest fixtures.

Real public traces live in ``../shared/traces`` next to the repository (read-only); override with
``CACHETUNER_SHARED_TRACES``. Tests that need them fail loudly when they are missing — never skip.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_TRACES = Path(os.environ.get("CACHETUNER_SHARED_TRACES", REPO.parent / "shared" / "traces"))


#: test files that share one xdist work unit (one worker, one after another): the Ray tests, so that no two
#: Ray instances (the two-node cluster, a local one) start at once on one machine
XDIST_GROUPS = {
    "tests/sweep/test_sweep_cluster.py": "ray",
    "tests/sweep/test_sweep_interrupt.py": "ray",
    "tests/sweep/test_suite_and_config.py": "ray",
}


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook appends each test's group to its node id
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """How the suite spreads over the workers of ``-n 2 --dist loadgroup`` (pyproject addopts).

    Each test file is one work unit (an ``xdist_group`` named after it, or after its entry in
    :data:`XDIST_GROUPS`): its tests run on one worker, in file order, and its module-scoped fixtures are
    built once. Units are queued by how many tests marked ``slow`` they hold, most first (xdist hands
    out units in collection order with ``--no-loadscope-reorder``), so the long tests start at once and
    the short ones fill in around them instead of one long test running alone at the end."""
    units: dict[str, list[pytest.Item]] = {}
    for item in items:
        path = item.nodeid.split("::", 1)[0]
        group = next((m.args[0] for m in item.iter_markers("xdist_group") if m.args), None)
        if group is None:
            group = XDIST_GROUPS.get(path, path)
            item.add_marker(pytest.mark.xdist_group(group))
        units.setdefault(group, []).append(item)
    ordered = sorted(units.values(), key=lambda unit: -sum(i.get_closest_marker("slow") is not None for i in unit))
    items[:] = [item for unit in ordered for item in unit]


#: a few steps of a small env: compiles every numba kernel the suite uses into the cache (``cache=True``,
#: ``__pycache__`` next to the sources), or loads them from it when it is warm (3-4 s)
_NUMBA_WARMUP = """
from cachetuner.env import CacheTuningEnv, EnvConfig
small = {"n_keys": 5000, "n_requests": 120_000, "rate": 100.0, "sizes": "llm"}
env = CacheTuningEnv(EnvConfig.model_validate({"workloads": [
    {"trace": "synthetic:zipf", "params": small, "weight": 2.0},
    {"trace": "synthetic:mixed-ttl", "params": small, "name": "ttl"}], "episode_intervals": 8, "warmup_intervals": 2}))
env.reset(seed=0)
env.action_space.seed(0)
for _ in range(4):
    env.step(env.action_space.sample())
"""
_warmup: dict[str, object] = {}


def pytest_configure(config: pytest.Config) -> None:
    """On the xdist controller: start filling the numba cache while the workers start and collect.

    On a fresh checkout the cache is empty, and every process that runs the simulator first compiles
    its kernels (~1 min of one core): both workers, and each CLI, daemon and Ray worker subprocess
    started before one of them has written the cache. Compiled once here instead, before any test
    runs (see :func:`pytest_xdist_node_collection_finished`); a warm cache costs nothing (it loads
    while the workers collect)."""
    if hasattr(config, "workerinput") or not config.getoption("numprocesses", None) or config.option.collectonly:
        return
    log = tempfile.TemporaryFile()  # noqa: SIM115 (read and closed by the hook below)
    _warmup["proc"] = subprocess.Popen([sys.executable, "-c", _NUMBA_WARMUP], cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
    _warmup["log"] = log
    _warmup["t0"] = time.monotonic()
    _warmup["config"] = config


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: object, ids: object) -> None:
    """The controller hands out tests once the workers have collected them: first wait for the numba
    warm-up started in :func:`pytest_configure` (a failed warm-up is reported and the tests compile
    what they need themselves)."""
    proc = _warmup.pop("proc", None)
    if not isinstance(proc, subprocess.Popen):
        return
    try:
        proc.wait(timeout=600)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    took = time.monotonic() - float(_warmup["t0"])  # type: ignore[arg-type]
    with _warmup["log"] as log:  # type: ignore[attr-defined]
        log.seek(0)
        out = log.read()
    config = _warmup["config"]
    reporter = config.pluginmanager.get_plugin("terminalreporter")  # type: ignore[attr-defined]
    if reporter is not None:
        ok = proc.returncode == 0
        reporter.write_line(f"numba kernels {'ready' if ok else 'warm-up FAILED'} after {took:.0f} s (tests/conftest.py)"
                            + ("" if ok else f": {out.decode(errors='replace')[-1500:]}"))


@pytest.fixture(scope="session")
def shared_traces() -> Path:
    assert SHARED_TRACES.is_dir(), f"shared traces not found at {SHARED_TRACES} (set CACHETUNER_SHARED_TRACES)"
    return SHARED_TRACES


@pytest.fixture(autouse=True, scope="session")
def _sb3_logs_in_tmp(tmp_path_factory: pytest.TempPathFactory) -> None:
    """A test that calls ``PPO.learn`` without a logger of its own gets SB3's default one, which makes an empty
    ``SB3-<time>`` folder in the system's temp dir per call; ``SB3_LOGDIR`` puts them in pytest's (cleaned) tmp."""
    os.environ.setdefault("SB3_LOGDIR", str(tmp_path_factory.mktemp("sb3-logs")))


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
