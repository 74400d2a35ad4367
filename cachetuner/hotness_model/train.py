"""Train the LSTM, score it against the baselines on the same time split, track it in MLflow.

Reads top to bottom like a CleanRL script: load trace -> build windows -> fit -> evaluate every
model on the identical test windows -> save TorchScript + metadata -> log everything.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from cachetuner.hotness_model.baselines import BASELINES, BaselineConfig, make_baseline
from cachetuner.hotness_model.config import HotnessExperiment, TraceSource, TrainConfig
from cachetuner.hotness_model.dataset import HotnessDataset, Windows, build_dataset
from cachetuner.hotness_model.metrics import ranking_metrics
from cachetuner.hotness_model.model import HotnessLSTM, LSTMConfig, load_hotness_script
from cachetuner.traces.trace import Trace

#: Synthetic workloads this module builds itself (others go through cachetuner.traces.read_trace).
LOCAL_SYNTHETIC = {"synthetic:periodic-rotation"}

EpochCallback = Callable[[dict[str, float]], None]


def load_trace(src: TraceSource) -> Trace:
    """The trace named by ``src`` (the built-in periodic workload or anything ``read_trace`` reads)."""
    if src.path in LOCAL_SYNTHETIC:
        from cachetuner.hotness_model.synthetic import periodic_rotation_trace

        return periodic_rotation_trace(seed=src.seed)
    from cachetuner.traces import read_trace

    kwargs: dict[str, Any] = {"seed": src.seed}
    if src.size_model is not None:
        kwargs["size_model"] = src.size_model
    if src.rate is not None:
        kwargs["rate"] = src.rate
    if src.limit is not None:
        kwargs["limit"] = src.limit
    if src.params:
        kwargs["params"] = dict(src.params)
    return read_trace(src.path, src.format, **kwargs)


@dataclass
class TrainResult:
    model: HotnessLSTM
    history: list[dict[str, float]] = field(default_factory=list)
    seconds: float = 0.0


def _loss(model: torch.nn.Module, x: np.ndarray, y: np.ndarray, batch: int = 4096) -> float:
    if len(y) == 0:
        return float("nan")
    pred = predict(model, x, batch)
    return float(np.mean((pred - y) ** 2))


def train_lstm(
    train: Windows,
    val: Windows,
    model_cfg: LSTMConfig,
    cfg: TrainConfig,
    on_epoch: EpochCallback | None = None,
) -> TrainResult:
    """Fit :class:`HotnessLSTM` with Adam on MSE of log1p counts (one torch thread)."""
    torch.set_num_threads(1)
    torch.manual_seed(cfg.seed)
    rng = np.random.default_rng(cfg.seed)
    rows = np.arange(len(train))
    if len(rows) > cfg.max_train_rows:
        rows = np.sort(rng.choice(rows, cfg.max_train_rows, replace=False))
    x = torch.from_numpy(train.x[rows])
    y = torch.from_numpy(train.y[rows]).unsqueeze(1)
    model = HotnessLSTM(model_cfg)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=cfg.epochs)
    result = TrainResult(model=model)
    start = time.perf_counter()
    for epoch in range(cfg.epochs):
        model.train()
        perm = torch.from_numpy(rng.permutation(len(y)))
        total, n = 0.0, 0
        for i in range(0, len(perm), cfg.batch_size):
            idx = perm[i : i + cfg.batch_size]
            loss = torch.nn.functional.mse_loss(model(x[idx]), y[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            total += float(loss.detach()) * len(idx)
            n += len(idx)
        sched.step()
        rec = {
            "epoch": epoch,
            "train_loss": total / max(n, 1),
            "val_loss": _loss(model, val.x, val.y),
            "seconds": time.perf_counter() - start,
        }
        result.history.append(rec)
        if on_epoch is not None:
            on_epoch(rec)
        if cfg.max_seconds is not None and rec["seconds"] > cfg.max_seconds:
            break
    result.seconds = time.perf_counter() - start
    model.eval()
    return result


@torch.no_grad()
def predict(model: torch.nn.Module, x: np.ndarray, batch: int = 4096) -> np.ndarray:
    """Model output (log1p next-horizon count) for ``x`` (log1p history), in batches."""
    model.eval()
    if len(x) == 0:
        return np.zeros(0, np.float32)
    outs = [model(torch.from_numpy(np.ascontiguousarray(x[i : i + batch]))) for i in range(0, len(x), batch)]
    return torch.cat(outs).reshape(-1).numpy()


def evaluate_models(
    ds: HotnessDataset, model: torch.nn.Module | None, baseline_cfg: BaselineConfig
) -> tuple[dict[str, dict[str, float]], dict[str, np.ndarray]]:
    """Metrics (and raw predictions) of the LSTM and every baseline on the test windows."""
    preds: dict[str, np.ndarray] = {}
    if model is not None:
        preds["lstm"] = predict(model, ds.test.x)
    for name in BASELINES:
        preds[name] = make_baseline(name, baseline_cfg).predict(ds.test, ds.counts, ds.cfg.horizon_buckets)
    metrics = {name: ranking_metrics(p, ds.test) for name, p in preds.items()}
    for name, p in preds.items():
        metrics[name]["mse_log1p"] = float(np.mean((p - ds.test.y) ** 2))
    return metrics, preds


def save_model(model: HotnessLSTM, out_dir: str | Path, meta: dict[str, Any]) -> Path:
    """Write ``model.pt`` (TorchScript, the artifact serving uses) and ``hotness.json`` next to it."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    scripted = torch.jit.script(model.eval())
    path = out / "model.pt"
    scripted.save(str(path))
    (out / "hotness.json").write_text(json.dumps(meta, indent=2, default=str))
    return path


def load_scripted(path: str | Path) -> torch.jit.ScriptModule:
    """Load a saved ``model.pt`` on CPU (one-line :class:`ConfigError` when it is not a hotness model)."""
    return load_hotness_script(path, map_location="cpu")


def plot_run(history: list[dict[str, float]], ds: HotnessDataset, preds: dict[str, np.ndarray]) -> Any:
    """Loss curves and predicted-vs-actual scatter (LSTM and EWMA) on a test subsample."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    ep = [h["epoch"] for h in history]
    axes[0].plot(ep, [h["train_loss"] for h in history], label="train")
    axes[0].plot(ep, [h["val_loss"] for h in history], label="val")
    axes[0].set(xlabel="epoch", ylabel="MSE (log1p counts)", title="loss")
    axes[0].legend()
    rng = np.random.default_rng(0)
    sub = rng.choice(len(ds.test), size=min(5000, len(ds.test)), replace=False)
    for ax, name in zip(axes[1:], ("lstm", "ewma"), strict=True):
        if name in preds:
            ax.scatter(ds.test.y[sub], preds[name][sub], s=3, alpha=0.3)
            hi = float(max(ds.test.y[sub].max(), preds[name][sub].max()))
            ax.plot([0, hi], [0, hi], "k--", lw=0.8)
        ax.set(xlabel="actual log1p(next-horizon count)", ylabel="predicted", title=name)
    fig.tight_layout()
    return fig


def run_experiment(
    cfg: HotnessExperiment,
    trace: Trace | None = None,
    *,
    on_epoch: EpochCallback | None = None,
    log: Callable[[str], None] = lambda s: None,
) -> dict[str, Any]:
    """The whole pipeline; returns ``{"models": metrics, "model_path", "run_id", ...}``."""
    trace = trace if trace is not None else load_trace(cfg.trace)
    log(f"trace {trace.name}: {len(trace):,} requests, {trace.n_keys:,} keys")
    ds = build_dataset(trace, cfg.dataset)
    log(
        f"dataset: {ds.counts.n_buckets} buckets of {ds.counts.bucket_s:.3g}s, split at {ds.split.split_bucket}; "
        f"train {len(ds.train):,} / val {len(ds.val):,} / test {len(ds.test):,} windows"
    )
    run_id = None
    mlflow = None
    if cfg.tracking.enabled:
        import mlflow as _mlflow

        from cachetuner.tracking import run_name, setup_tracking

        mlflow = _mlflow
        setup_tracking(cfg.tracking.tracking_uri, cfg.tracking.experiment)
        run = mlflow.start_run(run_name=run_name(trace.name.replace("/", "_"), cfg.name, cfg.train.seed))
        run_id = run.info.run_id
        mlflow.log_dict(cfg.model_dump(mode="json"), "config.json")
        mlflow.log_params(_flat_params(cfg))
        mlflow.log_params(
            {
                "trace_requests": len(trace),
                "trace_keys": trace.n_keys,
                "bucket_s_resolved": ds.counts.bucket_s,
                "n_buckets": ds.counts.n_buckets,
                "train_windows": len(ds.train),
                "test_windows": len(ds.test),
            }
        )

    def _epoch(rec: dict[str, float]) -> None:
        if mlflow is not None:
            mlflow.log_metrics({k: v for k, v in rec.items() if k != "epoch" and np.isfinite(v)}, step=int(rec["epoch"]))
        if on_epoch is not None:
            on_epoch(rec)

    try:
        result = train_lstm(ds.train, ds.val, cfg.model, cfg.train, _epoch)
        metrics, preds = evaluate_models(ds, result.model, cfg.baselines)
        out_dir = Path(cfg.output_dir) / (run_id or f"{cfg.name}-{int(time.time())}")
        meta = {
            "seq_len": cfg.dataset.seq_len,
            "horizon_buckets": cfg.dataset.horizon_buckets,
            "bucket_s": ds.counts.bucket_s,
            "trace": trace.name,
            "model": cfg.model.model_dump(),
            "metrics": metrics,
        }
        model_path = save_model(result.model, out_dir, meta)
        if mlflow is not None:
            for name, m in metrics.items():
                mlflow.log_metrics({f"{name}_{k}": v for k, v in m.items() if np.isfinite(v)})
            mlflow.log_metric("train_seconds", result.seconds)
            mlflow.log_artifacts(str(out_dir), artifact_path="model")
            from cachetuner.tracking import log_figure_png

            log_figure_png(plot_run(result.history, ds, preds), "hotness_eval")
    finally:
        if mlflow is not None:
            mlflow.end_run()
    return {
        "trace": trace.name,
        "models": metrics,
        "model_path": str(model_path),
        "run_id": run_id,
        "train_seconds": result.seconds,
        "epochs": len(result.history),
        "windows": {"train": len(ds.train), "val": len(ds.val), "test": len(ds.test)},
        "bucket_s": ds.counts.bucket_s,
    }


def _flat_params(cfg: HotnessExperiment) -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for section, values in cfg.model_dump(mode="json").items():
        if isinstance(values, dict):
            for k, v in values.items():
                flat[f"{section}.{k}"] = v
        else:
            flat[section] = values
    return flat
