"""The commands end to end: train (with MLflow), evaluate --json, config errors, serve + SIGTERM.

Commands run in-process through typer's runner with only this command module loaded (the full CLI
imports every command group, which costs tens of seconds per process on a loaded machine); serve
runs as a real subprocess because it handles signals.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from click.testing import Result
from typer.testing import CliRunner

from cachetuner.cli.app import app
from cachetuner.errors import ConfigError
from cachetuner.serving.client import TritonPredictor

REPO = Path(__file__).resolve().parents[2]
SERVE = [sys.executable, "-c", "import cachetuner.cli.hotness_cmds; from cachetuner.cli.app import app; app()"]

TINY = {
    "name": "hotness-test",
    "trace": {"path": "synthetic:periodic-rotation"},
    "dataset": {"bucket_s": 60.0, "seq_len": 16, "horizon_buckets": 2, "keys_per_anchor": 64,
                "eval_keys_per_anchor": 200, "eval_anchor_stride": 8},
    "model": {"seq_len": 16, "hidden": 8, "layers": 1},
    "train": {"epochs": 2, "max_train_rows": 2000, "max_seconds": 60},
}


def _run(args: list[str], cwd: Path, monkeypatch: pytest.MonkeyPatch) -> Result:
    import cachetuner.cli.hotness_cmds  # noqa: F401  (registers the commands)

    monkeypatch.chdir(cwd)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    return CliRunner().invoke(app, args)


def test_train_logs_to_mlflow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mlflow_store) -> None:
    mlflow_store(tmp_path)  # the default store, ./mlflow.db in the command's working directory
    cfg = tmp_path / "hotness.yaml"
    cfg.write_text(yaml.safe_dump({**TINY, "output_dir": str(tmp_path / "runs")}))
    r = _run(["hotness", "train", "--config", str(cfg), "--json"], tmp_path, monkeypatch)
    assert r.exit_code == 0, (r.output, r.exception)
    doc = json.loads(r.stdout)  # exactly one JSON object on stdout
    assert set(doc["models"]) == {"lstm", "last_value", "ewma", "sketch"}
    assert Path(doc["model_path"]).is_file()
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
    run = mlflow.get_run(doc["run_id"])
    assert run.data.params["model.hidden"] == "8"
    assert "lstm_spearman" in run.data.metrics and "ewma_spearman" in run.data.metrics
    hist = mlflow.tracking.MlflowClient().get_metric_history(doc["run_id"], "val_loss")
    assert len(hist) == 2  # one point per epoch
    arts = {a.path for a in mlflow.tracking.MlflowClient().list_artifacts(doc["run_id"])}
    assert {"model", "plots", "config.json"} <= arts
    plots = [a.path for a in mlflow.tracking.MlflowClient().list_artifacts(doc["run_id"], "plots")]
    assert any(p.endswith(".png") for p in plots)


def test_evaluate_json_without_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = tmp_path / "hotness.yaml"
    cfg.write_text(yaml.safe_dump({**TINY, "output_dir": str(tmp_path / "runs")}))
    r = _run(["hotness", "evaluate", "--trace", "synthetic:periodic-rotation", "--config", str(cfg),
              "--no-tracking", "--json"], tmp_path, monkeypatch)
    assert r.exit_code == 0, (r.output, r.exception)
    models = json.loads(r.stdout)["models"]
    for name in ("lstm", "ewma", "last_value", "sketch"):
        assert {"spearman", "top1_precision", "top10_precision", "byte_recall"} <= set(models[name])


def test_bad_config_field_is_one_line_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = tmp_path / "bad.yaml"
    cfg.write_text(yaml.safe_dump({**TINY, "model": {"seq_len": 16, "hiden": 8}}))
    r = _run(["hotness", "train", "--config", str(cfg)], tmp_path, monkeypatch)
    assert isinstance(r.exception, ConfigError)  # main() prints it as one line and exits 2
    msg = str(r.exception)
    assert "\n" not in msg and "bad.yaml" in msg and "model.hiden" in msg and "unknown field" in msg


def test_serve_sigterm_mid_run_falls_back(triton_repo: Path, tiny_model_pt: Path, tmp_path: Path) -> None:
    """`serve hotness` answers until SIGTERM stops it cleanly; the tuning-side predictor keeps going
    on the in-process fallback and counts it."""
    import numpy as np
    from prometheus_client import CollectorRegistry

    from cachetuner.hotness_model.predictor import InProcessPredictor
    from cachetuner.serving.client import FallbackPredictor

    proc = subprocess.Popen(SERVE + ["serve", "hotness", "--model-repo", str(triton_repo), "--json"],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # printed once Triton is ready
        assert line, proc.stderr.read() if proc.stderr else ""
        urls = json.loads(line)
        reg = CollectorRegistry()
        local = InProcessPredictor(tiny_model_pt, device="cpu")
        remote = TritonPredictor(urls["grpc"], timeout_s=1.0, retries=0)
        fb = FallbackPredictor(remote, local, retry_after_s=0.2, registry=reg)
        x = np.log1p(np.random.default_rng(2).poisson(2.0, (300, 64))).astype(np.float32)
        expected = local.predict(x)
        np.testing.assert_allclose(fb.predict(x), expected, atol=1e-6)
        assert fb.backend == "triton_grpc"
        assert reg.get_sample_value("cachetuner_hotness_fallback_total") == 0
        assert reg.get_sample_value("cachetuner_hotness_backend", {"backend": "triton_grpc"}) == 1

        proc.send_signal(signal.SIGTERM)  # the server goes away mid-run
        assert proc.wait(timeout=60) == 0
        assert not Path(f"/proc/{urls['pid']}/cmdline").exists() or not Path(f"/proc/{urls['pid']}/cmdline").read_bytes()
        assert not remote.is_ready()

        for _ in range(3):  # predictions continue, from the fallback
            np.testing.assert_allclose(fb.predict(x), expected, atol=1e-6)
        assert fb.backend == "in_process"
        assert reg.get_sample_value("cachetuner_hotness_fallback_total") == 3
        assert reg.get_sample_value("cachetuner_hotness_backend", {"backend": "in_process"}) == 1
        assert reg.get_sample_value("cachetuner_hotness_backend", {"backend": "triton_grpc"}) == 0
        assert fb.circuit_open
        time.sleep(0.3)  # breaker half-opens, probes Triton (still down) and answers in-process again
        assert not fb.circuit_open
        np.testing.assert_allclose(fb.predict(x), expected, atol=1e-6)
        assert reg.get_sample_value("cachetuner_hotness_fallback_total") == 4
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
