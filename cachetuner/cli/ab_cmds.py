"""``cachetuner ab`` (A/B experiments), ``cachetuner ab promote`` and ``cachetuner bench ab-shadow``.

``cachetuner ab --config AB.yaml`` and ``cachetuner ab run --config AB.yaml`` are the same command.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from cachetuner.cli.app import app, bench_app, console, emit_json, out
from cachetuner.cli.trace_options import (
    FormatOpt,
    LimitOpt,
    ParamsOpt,
    RateOpt,
    RateProfileOpt,
    SizeModelOpt,
    StartOpt,
)
from cachetuner.errors import ConfigError

ab_app = typer.Typer(
    help="A/B experiments: two tuners on the same traffic, paired statistics, verdict, MLflow, promotion.",
    invoke_without_command=True,
    no_args_is_help=False,
)
app.add_typer(ab_app, name="ab")

_JSON = typer.Option("--json", help="print exactly one JSON object on stdout")
_URI = typer.Option("--tracking-uri", help="MLflow store (default: MLFLOW_TRACKING_URI, else sqlite:///mlflow.db here)")
ConfigOpt = Annotated[Path | None, typer.Option("--config", help="A/B experiment YAML (see experiments/ab*.yaml)")]
TraceOverride = Annotated[
    str | None, typer.Option("--trace", help="replace the experiment's workload by this trace (file, synthetic:NAME, ...)")
]
SeedOverride = Annotated[int | None, typer.Option("--seed", min=0, help="seed for size draws / synthetic workloads of --trace")]
MaxIntervals = Annotated[
    int | None,
    typer.Option("--max-intervals", min=1, help="stop early (a peek): the verdict is then inconclusive"),
]
NoTrack = Annotated[bool, typer.Option("--no-track", help="do not log to MLflow")]
StackDir = Annotated[
    Path | None,
    typer.Option("--stack-dir", help="live shadow mode: take redis_url / prometheus_url from this `cachetuner stack up` "
                "folder (TTL arms: the control's replay serves its Redis)"),
]


def _with_stack(cfg: Any, stack_dir: Path | None) -> Any:
    if stack_dir is None:
        return cfg
    from cachetuner.live.stack import load_state

    info = load_state(stack_dir)
    if info is None:
        raise ConfigError(f"--stack-dir {stack_dir}: no stack.json there (run `cachetuner stack up --dir {stack_dir}`)")
    opts = {**cfg.shadow.backend_options, "redis_url": info.redis_url, "prometheus_url": info.prometheus_url}
    shadow = cfg.shadow.model_copy(update={"backend_options": opts, "stack_dir": str(stack_dir)})
    return cfg.model_copy(update={"shadow": shadow})


def _env_override(trace: str | None, format: str, size_model: str | None, rate: float | None, seed: int | None,
                  limit: int | None, params: Path | None, rate_profile: str | None = None, start: int = 0) -> Any:
    if trace is None:
        if any(v is not None for v in (size_model, rate, seed, limit, params, rate_profile)) or format != "auto" or start:
            raise ConfigError("--format/--size-model/--rate/--rate-profile/--seed/--start/--limit/--params need --trace")
        return None
    from cachetuner.ab.config import override_workload
    from cachetuner.cli.trace_options import load_params_file

    opts = dict(trace=trace, format=format, size_model=size_model, rate=rate, seed=seed, limit=limit,
                params=load_params_file(params), rate_profile=rate_profile, start=start)
    return lambda env: override_workload(env, **opts)


def _print_result(res: Any) -> None:
    from rich.table import Table

    from cachetuner.ab.stats import METRICS

    v = res.verdict
    t = Table(title=f"A/B {res.name} ({res.mode}): {res.treatment.description} vs {res.control.description}")
    for col in ("metric (treatment - control)", "mean", "CI low", "CI high", "unit"):
        t.add_column(col)
    for name, ci in v.deltas.items():
        spec = METRICS[name]
        mark = " (primary)" if name == v.primary_metric else ""
        t.add_row(spec["key"] + mark, f"{ci.mean:.4g}", f"{ci.ci[0]:.4g}", f"{ci.ci[1]:.4g}", spec["unit"])
    out.print(t)
    out.print(f"verdict: {v.verdict}  ({v.intervals}/{v.horizon} intervals, {v.method})")
    if res.mlflow_run_id:
        out.print(f"mlflow run: {res.mlflow_run_id}")


def _run(config: Path | None, trace: str | None, format: str, size_model: str | None, rate: float | None,
         seed: int | None, limit: int | None, params: Path | None, json_out: bool, tracking_uri: str | None,
         max_intervals: int | None, no_track: bool, stack_dir: Path | None = None,
         rate_profile: str | None = None, start: int = 0) -> None:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from cachetuner.ab.config import load_ab_config
    from cachetuner.ab.runner import arm_env_config, run_ab
    from cachetuner.ab.tracking import log_ab

    if config is None:
        raise ConfigError("cachetuner ab: pass --config AB.yaml (e.g. experiments/ab_quickstart.yaml), or use 'ab promote RUN_ID'")
    cfg = _with_stack(load_ab_config(config), stack_dir)
    override = _env_override(trace, format, size_model, rate, seed, limit, params, rate_profile, start)
    if override is not None and cfg.workload is not None:
        cfg = cfg.model_copy(update={"workload": None})
    with Progress(TextColumn("A/B {task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, transient=True) as bar:
        task = bar.add_task(cfg.name, total=cfg.horizon_intervals)
        res = run_ab(cfg, env_override=override, max_intervals=max_intervals, source=str(config),
                     tracking_uri=tracking_uri, on_step=lambda i, n: bar.update(task, completed=i, total=n))
    if cfg.tracking.enabled and not no_track:
        env_cfg = arm_env_config(cfg, override, str(config))
        log_ab(res, cfg, env_cfg, config_path=config, tracking_uri=tracking_uri)
    if json_out:
        emit_json(res.to_json())
    else:
        _print_result(res)


@ab_app.callback(invoke_without_command=True)
def ab_main(
    ctx: typer.Context,
    config: ConfigOpt = None,
    trace: TraceOverride = None,
    format: FormatOpt = "auto",
    size_model: SizeModelOpt = None,
    rate: RateOpt = None,
    rate_profile: RateProfileOpt = None,
    seed: SeedOverride = None,
    limit: LimitOpt = None,
    start: StartOpt = 0,
    params: ParamsOpt = None,
    json_out: Annotated[bool, _JSON] = False,
    tracking_uri: Annotated[str | None, _URI] = None,
    max_intervals: MaxIntervals = None,
    no_track: NoTrack = False,
    stack_dir: StackDir = None,
) -> None:
    """Run an A/B experiment (same as `ab run`); see the subcommands for promotion."""
    if ctx.invoked_subcommand is not None:
        return
    _run(config, trace, format, size_model, rate, seed, limit, params, json_out, tracking_uri, max_intervals, no_track,
         stack_dir, rate_profile, start)


@ab_app.command("run")
def ab_run(
    config: ConfigOpt = None,
    trace: TraceOverride = None,
    format: FormatOpt = "auto",
    size_model: SizeModelOpt = None,
    rate: RateOpt = None,
    rate_profile: RateProfileOpt = None,
    seed: SeedOverride = None,
    limit: LimitOpt = None,
    start: StartOpt = 0,
    params: ParamsOpt = None,
    json_out: Annotated[bool, _JSON] = False,
    tracking_uri: Annotated[str | None, _URI] = None,
    max_intervals: MaxIntervals = None,
    no_track: NoTrack = False,
    stack_dir: StackDir = None,
) -> None:
    """Run both arms on the same traffic; print the verdict and the CI of every delta."""
    _run(config, trace, format, size_model, rate, seed, limit, params, json_out, tracking_uri, max_intervals, no_track,
         stack_dir, rate_profile, start)


@ab_app.command("promote")
def ab_promote(
    run_id: Annotated[str, typer.Argument(help="MLflow run id of the A/B parent run")],
    daemon_config: Annotated[
        Path | None, typer.Option("--daemon-config", help="daemon YAML whose policy section gets the treatment")
    ] = None,
    log: Annotated[Path | None, typer.Option("--log", help="promotions JSONL (default: the run's promotion.log)")] = None,
    json_out: Annotated[bool, _JSON] = False,
    tracking_uri: Annotated[str | None, _URI] = None,
) -> None:
    """Write the treatment into a daemon config, only if the run's recorded verdict is 'better' (else exit 2)."""
    from cachetuner.ab.promote import promote

    entry = promote(run_id, daemon_config=daemon_config, log_path=log, tracking_uri=tracking_uri)
    if json_out:
        emit_json(entry)
    else:
        out.print(f"promoted {entry['treatment']} into {entry['daemon_config']} (run {run_id}, verdict {entry['verdict']})")


@bench_app.command("ab-shadow")
def bench_ab_shadow(
    config: Annotated[Path, typer.Option("--config", help="A/B YAML (its arms and env; mode is ignored)")] = Path(
        "experiments/ab_shadow_validation.yaml"
    ),
    rates: Annotated[str, typer.Option("--rates", help="comma-separated sampling rates")] = "0.01,0.05,0.2",
    trace: TraceOverride = None,
    format: FormatOpt = "auto",
    size_model: SizeModelOpt = None,
    rate: RateOpt = None,
    rate_profile: RateProfileOpt = None,
    seed: SeedOverride = None,
    limit: LimitOpt = None,
    start: StartOpt = 0,
    params: ParamsOpt = None,
    json_out: Annotated[bool, _JSON] = False,
) -> None:
    """Shadow estimator vs simulation mode on the same trace: error of each delta per sampling rate."""
    from cachetuner.ab.config import load_ab_config
    from cachetuner.ab.validation import check_rates, validate_shadow

    try:
        rate_list = [float(r) for r in rates.split(",") if r.strip()]
    except ValueError:
        raise ConfigError(f"--rates {rates!r}: expected comma-separated numbers, e.g. 0.01,0.05") from None
    check_rates(rate_list, "--rates")
    cfg = load_ab_config(config)
    override = _env_override(trace, format, size_model, rate, seed, limit, params, rate_profile, start)
    if override is not None:
        cfg = cfg.model_copy(update={"workload": None})
    report = validate_shadow(cfg, rate_list, env_override=override)
    if json_out:
        emit_json(report)
    else:
        out.print_json(data=report)


@bench_app.command("ab-calibration")
def bench_ab_calibration(
    lengths: Annotated[str, typer.Option("--lengths", help="comma-separated numbers of intervals")] = "30,60,120,300",
    phis: Annotated[str, typer.Option("--phis", help="comma-separated AR(1) coefficients")] = "0,0.5,0.8",
    reps: Annotated[int, typer.Option("--reps", min=10, help="A/A runs per cell")] = 400,
    json_out: Annotated[bool, _JSON] = False,
) -> None:
    """False-positive rate at alpha=0.05 of the A/B CIs on A/A autocorrelated noise (should be ~0.05)."""
    from cachetuner.ab.validation import calibration, check_calibration

    try:
        ns = [int(x) for x in lengths.split(",") if x.strip()]
    except ValueError:
        raise ConfigError(f"--lengths {lengths!r}: expected comma-separated whole numbers, e.g. 30,60") from None
    try:
        ps = [float(x) for x in phis.split(",") if x.strip()]
    except ValueError:
        raise ConfigError(f"--phis {phis!r}: expected comma-separated numbers, e.g. 0,0.5") from None
    check_calibration(ns, ps, prefix="--")
    rows = calibration(ns, ps, reps=reps)
    if json_out:
        emit_json({"alpha": 0.05, "reps": reps, "rows": rows})
    else:
        for r in rows:
            out.print(r)
