"""``cachetuner train`` and ``cachetuner evaluate``."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Annotated, Any

import typer

from cachetuner.cli.app import app, console, emit_json, out
from cachetuner.cli.trace_options import (
    FormatOpt,
    LimitOpt,
    ParamsOpt,
    RateOpt,
    SeedOpt,
    SizeModelOpt,
    load_params_file,
)

_JSON = typer.Option("--json", help="print exactly one JSON object on stdout")
_URI = typer.Option("--tracking-uri", help="MLflow store (default: MLFLOW_TRACKING_URI, else sqlite:///mlflow.db here)")


@app.command("train")
def train_cmd(
    config: Annotated[Path, typer.Argument(help="experiment YAML (see experiments/)")],
    json_out: Annotated[bool, _JSON] = False,
    tracking_uri: Annotated[str | None, _URI] = None,
    timesteps: Annotated[int | None, typer.Option("--timesteps", min=1, help="override total_timesteps")] = None,
    seed: Annotated[int | None, typer.Option("--seed", help="override seed")] = None,
    output_dir: Annotated[Path | None, typer.Option("--output-dir", help="override output_dir")] = None,
) -> None:
    """Train PPO on the simulated cache; log config, metrics, model and plots to MLflow."""
    from cachetuner.agent.config import TrainConfig
    from cachetuner.agent.train import train

    cfg = TrainConfig.from_yaml(config)
    updates: dict[str, Any] = {}
    if timesteps is not None:
        updates["total_timesteps"] = timesteps
    if seed is not None:
        updates["seed"] = seed
    if output_dir is not None:
        updates["output_dir"] = output_dir
    if updates:
        cfg = cfg.model_copy(update=updates)
    res = train(cfg, tracking_uri=tracking_uri, config_path=config, console=console)
    summary = {
        "mlflow_run_id": res.run_id,
        "model_path": str(res.model_path),
        "run_name": res.run_name,
        "timesteps": res.timesteps,
        "stopped_early": res.stopped_early,
        "final_eval_ppo": res.final_eval,
    }
    if json_out:
        emit_json(summary)
    else:
        out.print(f"run {res.run_name} ({res.run_id}): {res.timesteps} steps, model {res.model_path}")
        fe = res.final_eval
        out.print(
            f"final evaluation episode: cost {fe['cost']:.4f}, hit ratio {fe['hit_ratio']:.3f}, "
            f"mean maxmemory {fe['mean_maxmemory_bytes'] / 2**20:.1f} MiB"
        )


def _resolve_configs(model: Path | None, config: Path | None) -> tuple[Any, Path | None]:
    """The experiment config to evaluate under: ``--config``, else the model's ``train_config.yaml``,
    else defaults."""
    from cachetuner.agent.config import TrainConfig
    from cachetuner.agent.train import CONFIG_SIDECAR

    if config is not None:
        return TrainConfig.from_yaml(config), config
    if model is not None and (model.parent / CONFIG_SIDECAR).is_file():
        side = model.parent / CONFIG_SIDECAR
        return TrainConfig.from_yaml(side), side
    return TrainConfig(experiment="evaluate", total_timesteps=1), None


def run_evaluation(
    *,
    model: Path | None,
    trace: str | None,
    fmt: str = "auto",
    size_model: str | None = None,
    rate: float | None = None,
    seed: int = 0,
    limit: int | None = None,
    params: Path | None = None,
    config: Path | None = None,
    tuners: str | None = None,
    workload: int = 0,
    intervals: int | None = None,
    tracking_uri: str | None = None,
) -> tuple[dict[str, Any], Any]:
    """Run ``model`` and the baselines on the same traffic and log the comparison to MLflow.

    Returns the JSON-ready summary (with ``mlflow_run_id``) and the :class:`EvalReport`; ``cachetuner
    evaluate`` and ``cachetuner demo`` both print from it.
    """
    import mlflow
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from cachetuner.agent.evaluate import SUMMARY_FIELDS, evaluate_tuners
    from cachetuner.agent.plots import episode_figures
    from cachetuner.baselines import DEFAULT_TUNERS, build_tuners
    from cachetuner.env import WorkloadSpec
    from cachetuner.errors import ConfigError
    from cachetuner.tracking import log_figure_png, run_name, setup_tracking

    cfg, cfg_source = _resolve_configs(model, config)
    env_cfg = cfg.eval_env_config()
    if trace is not None:
        spec = WorkloadSpec(
            trace=trace, format=fmt, size_model=size_model, rate=rate, limit=limit, seed=seed,
            params=load_params_file(params) or {},
        )
        env_cfg = env_cfg.model_copy(update={"workloads": [spec]})
        workload = 0
    elif workload >= len(env_cfg.workloads):
        raise ConfigError(f"--workload {workload}: the config has {len(env_cfg.workloads)} evaluation workloads")
    env_cfg = env_cfg.model_copy(update={"episode_intervals": intervals})
    names = [t.strip() for t in tuners.split(",") if t.strip()] if tuners else [
        t for t in DEFAULT_TUNERS if t != "ppo" or model is not None
    ]
    built = build_tuners(names, cfg.baselines, seed=seed, model_path=model)

    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=console) as prog:
        tasks = {n: prog.add_task(f"{n}: waiting", total=None) for n in built}

        def tick(name: str, n: int) -> None:
            prog.update(tasks[name], description=f"{name}: interval {n}")

        report = evaluate_tuners(env_cfg, built, seed=seed, workload=workload, on_interval=tick)

    result = report.to_json()
    setup_tracking(tracking_uri, experiment=cfg.experiment)
    label = "SimRedisDiscrete-v0" if env_cfg.actions.space == "discrete12" else "SimRedis-v0"
    with mlflow.start_run(run_name=run_name(label, f"{cfg.experiment}-eval", seed)) as run:
        mlflow.set_tags({"kind": "evaluate", "workload": report.workload, "model_path": str(model or "")})
        mlflow.log_params({"trace": trace or report.workload, "format": fmt, "size_model": str(size_model),
                           "rate": str(rate), "limit": str(limit), "tuners": ",".join(names), "seed": seed,
                           "config": str(cfg_source or "defaults")})
        mlflow.log_metrics({f"{t}.{k}": float(v) for t, s in result["tuners"].items() for k, v in s.items()})
        if report.gap_closed is not None:
            mlflow.log_metric("gap_closed", report.gap_closed)
        with tempfile.TemporaryDirectory() as d:
            p = Path(d) / "evaluation.json"
            p.write_text(json.dumps({"summary": result, "records": report.records_json()}))
            mlflow.log_artifact(str(p), artifact_path="eval")
        mlflow.log_table({"tuner": list(result["tuners"]),
                          **{k: [s[k] for s in result["tuners"].values()] for k in SUMMARY_FIELDS}},
                         artifact_file="eval/table.json")
        for key, fig in episode_figures({k: r.records for k, r in report.results.items()}, report.workload).items():
            log_figure_png(fig, f"eval_{key}")
        result["mlflow_run_id"] = run.info.run_id

    return result, report


@app.command("evaluate")
def evaluate_cmd(
    model: Annotated[Path | None, typer.Option("--model", help="model.zip from cachetuner train")] = None,
    trace: Annotated[
        str | None,
        typer.Option("--trace", help="trace file, synthetic:NAME or a workload .yaml; default: the config's evaluation workload"),
    ] = None,
    fmt: FormatOpt = "auto",
    size_model: SizeModelOpt = None,
    rate: RateOpt = None,
    seed: SeedOpt = 0,
    limit: LimitOpt = None,
    params: ParamsOpt = None,
    config: Annotated[
        Path | None,
        typer.Option("--config", help="experiment YAML (env + baselines); default: the model's train_config.yaml"),
    ] = None,
    tuners: Annotated[str | None, typer.Option("--tuners", help="comma-separated tuner names (default: all)")] = None,
    workload: Annotated[int, typer.Option("--workload", min=0, help="workload index when --trace is not given")] = 0,
    intervals: Annotated[int | None, typer.Option("--intervals", min=1, help="episode length; default: the whole trace")] = None,
    json_out: Annotated[bool, _JSON] = False,
    tracking_uri: Annotated[str | None, _URI] = None,
) -> None:
    """Run the trained policy and the baselines on the same traffic; report cost, hit ratio, memory, gap closed."""
    result, report = run_evaluation(model=model, trace=trace, fmt=fmt, size_model=size_model, rate=rate, seed=seed, limit=limit, params=params, config=config, tuners=tuners, workload=workload, intervals=intervals, tracking_uri=tracking_uri)
    if json_out:
        emit_json(result)
        return
    print_evaluation(result, report)


def print_evaluation(result: dict[str, Any], report: Any) -> None:
    """The evaluation table on stdout (rich)."""
    from rich.console import Console
    from rich.table import Table

    from cachetuner.agent.evaluate import SUMMARY_FIELDS

    n = len(next(iter(report.results.values())).records)
    table = Table(title=f"evaluation on {report.workload} ({n} intervals)")
    table.add_column("tuner", no_wrap=True)
    headers = {"mean_maxmemory_bytes": "mean maxmemory", "p95_latency_ms": "p95 ms"}
    for k in SUMMARY_FIELDS:
        table.add_column(headers.get(k, k), justify="right", no_wrap=True)
    for t, s in result["tuners"].items():
        table.add_row(
            t,
            f"{s['cost']:.4f}",
            f"{s['hit_ratio']:.4f}",
            f"{s['byte_hit_ratio']:.4f}",
            f"{s['p95_latency_ms']:.2f}",
            f"{s['mean_maxmemory_bytes'] / 2**20:.2f} MiB",
            str(s["slo_violations"]),
            str(s["config_changes"]),
        )
    # Piped output (make demo | tee) gets rich's 80 columns by default: too narrow for 8 columns.
    (out if out.is_terminal and out.width >= 130 else Console(width=130)).print(table)
    gc = report.gap_closed
    out.print(f"gap closed (best-static -> oracle): {'n/a' if gc is None else f'{gc:.1%}'}; MLflow run {result['mlflow_run_id']}")
