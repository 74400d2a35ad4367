"""Suite cells as Ray tasks give the serial run's results; sweep configs fail with one line naming
the file and field; ``--ray-address`` is checked before anything starts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from sweeptest_support import sweep_yaml

from cachetuner.errors import ConfigError

BIN = Path(sys.executable).parent

TINY_ENV = {
    "workloads": [{"trace": "synthetic:zipf", "rate": 200, "params": {"n_requests": 12000, "n_keys": 1500}}],
    "interval_s": 10, "episode_intervals": None, "warmup_intervals": 1,
    "bounds": {"min_bytes": 1_500_000, "max_bytes": 9_000_000, "initial_bytes": 4_000_000},
    "actions": {"policies": ["allkeys-lru", "allkeys-lfu"], "timeouts": [0]},
}


def test_suite_cells_on_ray_equal_the_serial_run(tmp_path: Path, mlflow_store) -> None:
    from cachetuner.reports.suite import run_suite
    from cachetuner.sweep.bench import comparable

    exp = tmp_path / "exp.yaml"
    exp.write_text(yaml.safe_dump({"experiment": "suite-ray", "total_timesteps": 1, "env": TINY_ENV,
                                   "controllers": {"grid": {"n_sizes": 3, "timeouts": [0]}}}))
    suite = tmp_path / "suite.yaml"
    suite.write_text(yaml.safe_dump({
        "name": "tiny", "model": None, "config": str(exp), "controllers": ["mrc", "static-default", "best-static"],
        "traces": [{"trace": "synthetic:zipf", "name": "zipf", "size_model": None, "rate": 200, "limit": 16000}],
        "prices": ["scaled", "list"], "seeds": [0, 1],
    }))
    uri = mlflow_store(tmp_path)
    serial = run_suite(suite, tracking_uri=uri)
    on_ray = run_suite(suite, tracking_uri=uri, ray_address="local", num_cpus=2)
    assert len(on_ray["cells"]) == 4
    assert comparable(on_ray["cells"]) == comparable(serial["cells"])
    assert on_ray["summary"] == serial["summary"]
    import mlflow

    runs = mlflow.MlflowClient(uri).search_runs(
        [mlflow.get_experiment_by_name("cachetuner-suite").experiment_id],
        f"tags.mlflow.parentRunId = '{on_ray['mlflow_run_id']}'")
    assert len(runs) == 4  # one child run per cell, logged by the driver


def test_a_user_error_in_a_ray_cell_is_one_line(tmp_path: Path, mlflow_store) -> None:
    """A cell's ConfigError (here a trace file with a malformed line: a missing file is refused before any cell)
    comes back from the Ray worker as itself, so the CLI prints its one line, not the worker's traceback wrapped in
    a RayTaskError."""
    from cachetuner.reports.suite import run_suite

    exp = tmp_path / "exp.yaml"
    exp.write_text(yaml.safe_dump({"experiment": "suite-ray", "total_timesteps": 1, "env": TINY_ENV}))
    suite = tmp_path / "suite.yaml"
    missing = tmp_path / "bad.trace"
    missing.write_text("1\n2\nxyz\n")
    suite.write_text(yaml.safe_dump({
        "name": "tiny", "model": None, "config": str(exp), "controllers": ["static-default"],
        "traces": [{"trace": str(missing), "name": "gone", "format": "lirs", "size_model": "fixed:4096", "rate": 200}],
        "prices": ["scaled"], "seeds": [0],
    }))
    with pytest.raises(ConfigError) as e:
        run_suite(suite, tracking_uri=mlflow_store(tmp_path), ray_address="local", num_cpus=1)
    assert type(e.value) is ConfigError and "\n" not in str(e.value)
    assert str(e.value) == f"env.workloads.0.trace: {missing}:3: field 'id' is not an integer: 'xyz'"


def _sweep(tmp_path: Path, **over: object) -> Path:
    return sweep_yaml(tmp_path, TINY_ENV, **over)


@pytest.mark.parametrize(
    ("over", "match"),
    [
        ({"search": {"ppo.learnig_rate": {"uniform": [0.1, 0.2]}}}, r"field 'search\.ppo\.learnig_rate': not a field"),
        ({"search": {"ppo.n_epochs": {"randint": [0, 3]}}}, r"train\(with search values\)\.ppo\.n_epochs"),
        ({"search": {"seed": {"uniform": [2, 1]}}}, r"field 'search\.seed\.uniform'.*low must be below high|search\.seed"),
        ({"num_trials": 0}, r"field 'num_trials'"),
        ({"train": {"total_timesteps": 100, "env": TINY_ENV, "eval": {"eval_freq": 512}}},
         r"field 'train\.eval\.eval_freq'"),
        ({"train": "nowhere.yaml"}, r"field 'train': nowhere\.yaml: experiment YAML not found"),
        ({"points_to_evaluate": [{"ppo.lr": 1}]}, r"points_to_evaluate\.0\.ppo\.lr"),
    ],
)
def test_sweep_config_errors_name_the_file_and_field(tmp_path: Path, over: dict, match: str) -> None:
    from cachetuner.sweep import load_sweep

    p = _sweep(tmp_path, **over)
    with pytest.raises(ConfigError, match=match) as e:
        load_sweep(p)
    assert str(p) in str(e.value) and "\n" not in str(e.value)


def _cli_in_process(args: list[str], capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> tuple[int, str, str]:
    """``cachetuner ARGS`` through the CLI's own entry point in this process: (exit code, stdout, stderr)."""
    from cachetuner.cli.main import main

    monkeypatch.setattr(sys, "argv", ["cachetuner", *args])
    capfd.readouterr()
    with pytest.raises(SystemExit) as e:
        main()
    out, err = capfd.readouterr()
    return int(e.value.code or 0), out, err


def test_cli_errors_are_one_line(tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    bad = _sweep(tmp_path, search={"ppo.nope": {"choice": [1]}})
    # one real subprocess (the installed entry point, its exit code and streams) ...
    r = subprocess.run([str(BIN / "cachetuner"), "sweep", str(bad), "--json"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip().splitlines() == [f"error: {bad}: field 'search.ppo.nope': not a field of the training config"]
    # ... the other errors through the same entry point (main) in this process: no interpreter start each
    monkeypatch.chdir(tmp_path)
    code, out, err = _cli_in_process(["sweep", str(_sweep(tmp_path)), "--ray-address", "not an address"], capfd, monkeypatch)
    assert code == 2 and out == "" and err.strip().splitlines()[-1].startswith("error: --ray-address 'not an address'")
    import socket

    with socket.socket() as s:  # a port nobody listens on: fails in seconds, not after Ray's retries
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code, out, err = _cli_in_process(["sweep", str(_sweep(tmp_path)), "--ray-address", f"127.0.0.1:{port}"], capfd,
                                     monkeypatch)
    assert code == 2 and out == "" and err.strip().splitlines() == [
        f"error: --ray-address 127.0.0.1:{port}: nothing answers there (Connection refused); start a head with "
        "`ray start --head --port PORT`, or omit --ray-address to run locally"]


def test_importing_cachetuner_does_not_import_ray() -> None:
    code = ("import sys, cachetuner, cachetuner.sweep, cachetuner.cluster, cachetuner.reports.suite, "
            "cachetuner.cli.main; cachetuner.cli.main._load_commands(); print('ray' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"
