"""``cachetuner hotness train|evaluate|export``, ``cachetuner serve hotness``, ``cachetuner bench hotness``."""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from typing import Annotated, Any

import typer

from cachetuner.cli.app import app, bench_app, console, emit_json, out
from cachetuner.errors import ConfigError

hotness_app = typer.Typer(help="Key-hotness predictor: train, evaluate against baselines, export for Triton.", no_args_is_help=True)
serve_app = typer.Typer(help="Serve models with a local Triton Inference Server.", no_args_is_help=True)
app.add_typer(hotness_app, name="hotness")
app.add_typer(serve_app, name="serve")

JsonOpt = Annotated[bool, typer.Option("--json", help="Print exactly one JSON object on stdout.")]


def _print_models(models: dict[str, dict[str, float]], title: str) -> None:
    from rich.table import Table

    table = Table(title=title)
    cols = ["spearman", "top1_precision", "top10_precision", "byte_recall"]
    table.add_column("model")
    for c in cols:
        table.add_column(c, justify="right")
    for name, m in models.items():
        table.add_row(name, *(f"{m.get(c, float('nan')):.3f}" for c in cols))
    out.print(table)


def _epoch_logger(rec: dict[str, float]) -> None:
    console.log(
        f"epoch {int(rec['epoch'])}: train {rec['train_loss']:.4f} val {rec['val_loss']:.4f} ({rec['seconds']:.0f}s)"
    )


@hotness_app.command("train")
def train_cmd(
    config: Annotated[Path, typer.Option("--config", help="Experiment YAML, e.g. experiments/hotness.yaml.")],
    tracking_uri: Annotated[str | None, typer.Option("--tracking-uri", help="MLflow URI (default: ./mlflow.db).")] = None,
    no_tracking: Annotated[bool, typer.Option("--no-tracking", help="Skip MLflow.")] = False,
    json_out: JsonOpt = False,
) -> None:
    """Train the LSTM from a YAML config, compare with the baselines, save model.pt, log to MLflow."""
    from cachetuner.hotness_model.config import load_experiment
    from cachetuner.hotness_model.train import run_experiment

    cfg = load_experiment(config)
    tracking = cfg.tracking.model_copy(
        update={"enabled": cfg.tracking.enabled and not no_tracking, "tracking_uri": tracking_uri or cfg.tracking.tracking_uri}
    )
    cfg = cfg.model_copy(update={"tracking": tracking})
    res = run_experiment(cfg, on_epoch=_epoch_logger, log=console.log)
    if json_out:
        emit_json(res)
    else:
        _print_models(res["models"], f"hotness on {res['trace']} (test windows {res['windows']['test']:,})")
        out.print(f"model: {res['model_path']}  run: {res['run_id']}")


@hotness_app.command("evaluate")
def evaluate_cmd(
    trace: Annotated[str, typer.Option("--trace", help="Trace file or synthetic:NAME.")],
    format: Annotated[str, typer.Option("--format", help="Trace format name, or auto.")] = "auto",
    model: Annotated[Path | None, typer.Option("--model", help="model.pt; without it an LSTM is trained on the earlier part of the trace.")] = None,
    config: Annotated[Path | None, typer.Option("--config", help="Experiment YAML for dataset/model/train/baseline settings (its trace is ignored).")] = None,
    size_model: Annotated[str | None, typer.Option("--size-model", help="Sizes for size-less traces, e.g. fixed:4096.")] = None,
    rate: Annotated[float | None, typer.Option("--rate", help="Requests/s for traces without timestamps.")] = None,
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="Read only the first N requests.")] = None,
    seed: Annotated[int, typer.Option("--seed", min=0)] = 0,
    params: Annotated[Path | None, typer.Option("--params", help="YAML mapping of reader params, e.g. expand: false for arc.")] = None,
    tracking_uri: Annotated[str | None, typer.Option("--tracking-uri")] = None,
    no_tracking: Annotated[bool, typer.Option("--no-tracking", help="Skip MLflow when training.")] = False,
    json_out: JsonOpt = False,
) -> None:
    """LSTM vs last value / EWMA / count-min sketch on the later part of a trace (time split)."""
    from cachetuner.cli.trace_options import load_params_file
    from cachetuner.hotness_model.config import HotnessExperiment, TraceSource, load_experiment
    from cachetuner.hotness_model.dataset import build_dataset
    from cachetuner.hotness_model.train import evaluate_models, load_scripted, load_trace, run_experiment
    from cachetuner.yamlconfig import validate_options

    scripted = load_scripted(model) if model is not None else None  # a bad --model fails before the trace is read
    src = validate_options(TraceSource, {
        "path": trace, "format": format, "size_model": size_model, "rate": rate, "limit": limit, "seed": seed,
        "params": load_params_file(params) or {},
    })  # fmt: skip
    if config is not None:
        cfg = load_experiment(config).model_copy(update={"trace": src})
    else:
        cfg = HotnessExperiment(trace=src, name="hotness-evaluate")
    cfg = cfg.model_copy(
        update={"tracking": cfg.tracking.model_copy(update={"enabled": not no_tracking, "tracking_uri": tracking_uri})}
    )
    tr = load_trace(src)
    result: dict[str, Any]
    if scripted is None:
        result = run_experiment(cfg, tr, on_epoch=_epoch_logger, log=console.log)
    else:
        if int(scripted.seq_len) != cfg.dataset.seq_len:
            cfg = cfg.model_copy(update={"dataset": cfg.dataset.model_copy(update={"seq_len": int(scripted.seq_len)})})
        ds = build_dataset(tr, cfg.dataset)
        metrics, _ = evaluate_models(ds, scripted, cfg.baselines)
        result = {"trace": tr.name, "models": metrics, "model_path": str(model), "windows": {"test": len(ds.test)},
                  "bucket_s": ds.counts.bucket_s}
    if json_out:
        emit_json(result)
    else:
        _print_models(result["models"], f"hotness on {result['trace']}")


@hotness_app.command("export")
def export_cmd(
    model: Annotated[Path, typer.Option("--model", help="model.pt written by `hotness train`.")],
    repo: Annotated[Path, typer.Option("--repo", help="Triton model repository to create/update.")],
    max_batch_size: Annotated[int, typer.Option("--max-batch-size", min=1)] = 1024,
    json_out: JsonOpt = False,
) -> None:
    """TorchScript -> Triton repository (<repo>/hotness/{config.pbtxt,1/model.py,1/model.pt}) and ONNX if possible."""
    from cachetuner.serving.export import export_all

    res = export_all(model, repo, max_batch_size=max_batch_size)
    doc = {"torchscript": str(res.torchscript), "repo": str(res.repo), "onnx": str(res.onnx) if res.onnx else None,
           "onnx_note": res.onnx_note}
    if json_out:
        emit_json(doc)
    else:
        out.print(doc)


@serve_app.command("hotness")
def serve_hotness(
    model_repo: Annotated[Path, typer.Option("--model-repo", help="Repository from `cachetuner hotness export`.")],
    http_port: Annotated[int, typer.Option("--http-port", help="0 = pick a free port.")] = 0,
    grpc_port: Annotated[int, typer.Option("--grpc-port", help="0 = pick a free port.")] = 0,
    metrics_port: Annotated[int, typer.Option("--metrics-port", help="0 = pick a free port.")] = 0,
    json_out: JsonOpt = False,
) -> None:
    """Run Triton on loopback with the hotness repository until Ctrl-C / SIGTERM."""
    from cachetuner.serving.launcher import TritonServer

    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    console.log(f"starting tritonserver with {model_repo} ...")
    with TritonServer(model_repo, http_port=http_port, grpc_port=grpc_port, metrics_port=metrics_port) as srv:
        urls = {"grpc": srv.grpc_url, "http": f"http://{srv.http_url}", "metrics": srv.metrics_url, "pid": srv.pid}
        if json_out:
            emit_json(urls)
        else:
            out.print(f"Triton ready: grpc {urls['grpc']}  http {urls['http']}  metrics {urls['metrics']}")
        console.log("serving; Ctrl-C or SIGTERM stops the server")
        while not stop.wait(0.5):
            if not srv.is_alive():
                console.log("tritonserver exited unexpectedly:\n" + srv.logs(2000))
                raise typer.Exit(1)
        console.log("stopping tritonserver ...")
    console.log("stopped")


@bench_app.command("hotness")
def bench_hotness(
    model: Annotated[Path | None, typer.Option("--model", help="model.pt (default: default architecture, random init).")] = None,
    batch: Annotated[int, typer.Option("--batch", min=1, help="Sequences per request.")] = 256,
    batches: Annotated[int, typer.Option("--batches", min=3, help="Measured batches per path.")] = 40,
    json_out: JsonOpt = False,
) -> None:
    """Keys/s and p50/p99 latency: Triton gRPC vs Triton HTTP vs in-process torch, in one run."""
    from cachetuner.serving.bench import run_bench

    res = run_bench(model, batch=batch, batches=batches, log=console.log)
    if json_out:
        emit_json(res)
    else:
        out.print(res)


def _ints(text: str, opt: str) -> list[int]:
    try:
        return [int(x) for x in text.replace(" ", ",").split(",") if x]
    except ValueError:
        raise ConfigError(f"{opt}: comma-separated integers, got {text!r}") from None


@hotness_app.command("ablation")
def ablation_cmd(
    recipe: Annotated[Path, typer.Option("--recipe", help="PPO experiment YAML both arms train (the shipped policy's recipe).")] = Path("experiments/general.yaml"),
    seeds: Annotated[str, typer.Option("--seeds", help="Training seeds, comma-separated (each arm trains each).")] = "0,1,2,3",
    timesteps: Annotated[int | None, typer.Option("--timesteps", min=128, help="PPO env steps per run (default: the recipe's).")] = None,
    out_dir: Annotated[Path, typer.Option("--out", help="Runs folder: ARM_sSEED/ policies, lstm/model.pt.")] = Path("runs/hotness-ablation"),
    from_runs: Annotated[bool, typer.Option("--from-runs", help="Evaluate the runs already under --out (e.g. trained by scripts/hotness_ablation_device.py); train nothing.")] = False,
    suite: Annotated[Path, typer.Option("--suite", help="Evaluation suite YAML: its held-out traces and prices.")] = Path("experiments/suite.yaml"),
    eval_seeds: Annotated[str | None, typer.Option("--eval-seeds", help="Evaluation seeds, comma-separated (default: the suite's).")] = None,
    traces: Annotated[str | None, typer.Option("--traces", help="Only these suite traces (names, comma-separated).")] = None,
    intervals: Annotated[int | None, typer.Option("--intervals", min=1, help="Evaluation episode length (default: whole traces).")] = None,
    lstm: Annotated[Path | None, typer.Option("--lstm", help="Hotness LSTM model.pt (default: OUT/lstm/model.pt, trained on the recipe's training workloads if missing).")] = None,
    n_envs: Annotated[int | None, typer.Option("--n-envs", min=1, help="Override the recipe's n_envs.")] = None,
    tracking_uri: Annotated[str | None, typer.Option("--tracking-uri")] = None,
    json_out: JsonOpt = False,
) -> None:
    """PPO (the shipped recipe) with vs without hotness features, trained and evaluated.

    Trains both arms x seeds, evaluates every
    policy on the suite's held-out traces against static-default and best-static, and logs to MLflow
    (experiment hotness-ablation). Locally this is slow (~14 core-minutes per run at 120k steps);
    scripts/hotness_ablation_device.py trains all runs in parallel elsewhere, then --from-runs evaluates them."""
    from cachetuner.reports.hotness_ablation import check_ablation_options, resave_numpy2_models, run_ablation

    seed_list = _ints(seeds, "--seeds")
    eval_list = _ints(eval_seeds, "--eval-seeds") if eval_seeds else None
    check_ablation_options(seed_list, eval_list, out_dir, train=not from_runs)  # before any re-save or training
    if from_runs:
        resave_numpy2_models(out_dir, log=console.log)
    res = run_ablation(
        recipe=recipe, seeds=seed_list, timesteps=timesteps, out_dir=out_dir, suite=suite,
        eval_seeds=eval_list,
        traces=[t for t in traces.split(",") if t] if traces else None, intervals=intervals, lstm_path=lstm,
        train=not from_runs, n_envs=n_envs, tracking_uri=tracking_uri, log=console.log,
    )
    if json_out:
        emit_json(res)
    else:
        out.print(res["table"])
