"""The commands end to end: train (with MLflow), evaluate --json, config errors, serve + SIGTERM."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

from cachetuner.serving.client import TritonPredictor

REPO = Path(__file__).resolve().parents[2]
CLI = [str(Path(sys.executable).with_name("cachetuner"))]

TINY = {
    "name": "hotness-test",
    "trace": {"path": "synthetic:periodic-rotation"},
    "dataset": {"bucket_s": 60.0, "seq_len": 16, "horizon_buckets": 2, "keys_per_anchor": 64,
                "eval_keys_per_anchor": 200, "eval_anchor_stride": 8},
    "model": {"seq_len": 16, "hidden": 8, "layers": 1},
    "train": {"epochs": 2, "max_train_rows": 2000, "max_seconds": 60},
}


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(CLI + args, cwd=cwd, capture_output=True, text=True, timeout=300)


def test_train_logs_to_mlflow(tmp_path: Path) -> None:
    cfg = tmp_path / "hotness.yaml"
    cfg.write_text(yaml.safe_dump({**TINY, "output_dir": str(tmp_path / "runs")}))
    r = _run(["hotness", "train", "--config", str(cfg), "--json"], tmp_path)
    assert r.returncode == 0, r.stderr
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


def test_evaluate_json_without_model(tmp_path: Path) -> None:
    cfg = tmp_path / "hotness.yaml"
    cfg.write_text(yaml.safe_dump({**TINY, "output_dir": str(tmp_path / "runs")}))
    r = _run(["hotness", "evaluate", "--trace", "synthetic:periodic-rotation", "--config", str(cfg),
              "--no-tracking", "--json"], tmp_path)
    assert r.returncode == 0, r.stderr
    models = json.loads(r.stdout)["models"]
    for name in ("lstm", "ewma", "last_value", "sketch"):
        assert {"spearman", "top1_precision", "top10_precision", "byte_recall"} <= set(models[name])


def test_bad_config_field_is_one_line_error(tmp_path: Path) -> None:
    cfg = tmp_path / "bad.yaml"
    cfg.write_text(yaml.safe_dump({**TINY, "model": {"seq_len": 16, "hiden": 8}}))
    r = _run(["hotness", "train", "--config", str(cfg)], tmp_path)
    assert r.returncode == 2
    assert r.stderr.strip().count("\n") == 0
    assert "bad.yaml" in r.stderr and "model.hiden" in r.stderr


def test_serve_hotness_until_sigterm(triton_repo: Path, tmp_path: Path) -> None:
    proc = subprocess.Popen(CLI + ["serve", "hotness", "--model-repo", str(triton_repo), "--json"],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # printed once Triton is ready
        assert line, proc.stderr.read() if proc.stderr else ""
        urls = json.loads(line)
        client = TritonPredictor(urls["grpc"], timeout_s=10)
        assert client.is_ready()
        triton_pid = urls["pid"]
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
        time.sleep(0.2)
        assert not Path(f"/proc/{triton_pid}").exists() or "zombie" in Path(f"/proc/{triton_pid}/status").read_text()
        assert not client.is_ready()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
