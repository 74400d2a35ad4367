"""``cachetuner ttl compare / policies``: client-side TTL policies on the simulator (docs/ttl.md)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.progress import Progress
from rich.table import Table

from cachetuner.cli.app import app, console, emit_json, out, wide_out
from cachetuner.cli.trace_options import JsonOpt, LimitOpt, SeedOpt, load_trace_from_options
from cachetuner.errors import ConfigError

ttl_app = typer.Typer(help="Client-side TTL policies (key lifetimes), freshness and tenants.", no_args_is_help=True)
app.add_typer(ttl_app, name="ttl")


def _pick(values: list, i: int, n: int, name: str, default: object) -> object:
    if not values:
        return default
    if len(values) != 1 and len(values) != n:
        raise ConfigError(f"{name}: give it once or once per --trace ({n}), got {len(values)}")
    v = values[0] if len(values) == 1 else values[i]
    return default if v in ("-", "", 0, 0.0) else v  # "-" (or a 0 rate): this trace's default


def _check_options(memory: float, interval: float, eviction: str | None = None) -> None:
    """The options every TTL experiment shares, checked before any trace is read (one line, naming the option)."""
    from cachetuner.ttl.run import check_interval, check_share, ttl_redis_config

    check_share(memory, "--memory")
    check_interval(interval, "--interval")
    if eviction is not None:
        ttl_redis_config(1, eviction, "--eviction")


def _check_figure(figure: str | None) -> None:
    """``--figure`` must name an image file in an existing folder (:func:`cachetuner.outputs.check_output_file`)."""
    if figure is not None:
        from cachetuner.outputs import IMAGE_SUFFIXES, check_output_file

        check_output_file(figure, "--figure", suffixes=IMAGE_SUFFIXES)


def _publish(report: dict, fig: object, figure: object, *, track: bool, json_out: bool) -> bool:
    """Save the figure where asked, log report + figure to MLflow, print the JSON; True when the JSON was
    the output (no table follows). One path for the simulated and the live QoS experiment."""
    from cachetuner.tenants.qos import log_qos

    if figure:
        try:
            fig.savefig(figure, dpi=110, bbox_inches="tight")  # type: ignore[attr-defined]
        except OSError as e:
            raise ConfigError(f"--figure {figure}: cannot write ({e.strerror or e})") from None
    report["mlflow_run_id"] = log_qos(report, fig) if track else None
    if json_out:
        emit_json(report)
    return json_out


def _wide(table: Table) -> None:
    wide_out(150).print(table)


@ttl_app.command("policies")
def policies_cmd() -> None:
    """List the registered TTL policies."""
    from cachetuner.ttl import TTL_POLICIES

    out.print("\n".join(TTL_POLICIES.names()))


@ttl_app.command("train-model")
def train_model_cmd(
    config: Annotated[str, typer.Option("--config", help="Hotness experiment to train.")] = "experiments/hotness-small.yaml",
    out_path: Annotated[str, typer.Option("--out", help="Where the hotness TTL policy looks for its model.")] = (
        "runs/hotness/ttl/model.pt"),
) -> None:
    """Train the LSTM the `hotness` TTL policy uses (synthetic traffic, ~1 min on CPU)."""
    from cachetuner.ttl.hotness import train_default_model

    path = train_default_model(out_path, config, log=lambda s: console.log(s))
    out.print(f"hotness TTL model: {path}")


@ttl_app.command("compare")
def compare_cmd(
    trace: Annotated[list[str], typer.Option("--trace", help="Trace (repeat for several).")],
    format: Annotated[list[str], typer.Option("--format", help="Format, once or once per --trace.")] = [],  # noqa: B006
    size_model: Annotated[list[str], typer.Option("--size-model", help="Size model, once or per trace (- = the trace's own).")] = [],  # noqa: B006
    rate: Annotated[list[float], typer.Option("--rate", help="Requests/s, once or per trace (0 = the trace's own timing).")] = [],  # noqa: B006
    label: Annotated[list[str], typer.Option("--label", help="Row label per trace (default: file name).")] = [],  # noqa: B006
    policy: Annotated[list[str], typer.Option("--policy", help="TTL policy spec (repeat); the first is the reference.")] = [  # noqa: B006
        "fixed:300", "hotness", "rules", "multi-factor"],
    memory: Annotated[float, typer.Option("--memory", help="maxmemory as a share of each trace's working set.")] = 0.1,
    eviction: Annotated[str, typer.Option("--eviction", help="maxmemory-policy of every cell.")] = "allkeys-lru",
    interval: Annotated[float, typer.Option("--interval", help="Seconds per interval (p95 and series).")] = 60.0,
    track: Annotated[bool, typer.Option("--track/--no-track", help="Log to MLflow (experiment cachetuner-ttl).")] = True,
    seed: SeedOpt = 0,
    limit: LimitOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Each TTL policy on each trace at the same maxmemory; deltas against the first policy."""
    from cachetuner.ttl.compare import compare_ttl, log_compare
    from cachetuner.ttl.run import maxmemory_for

    _check_options(memory, interval, eviction)
    n = len(trace)
    traces = []
    for i, t in enumerate(trace):
        tr = load_trace_from_options(
            t, str(_pick(format, i, n, "--format", "auto")), _pick(size_model, i, n, "--size-model", None),  # type: ignore[arg-type]
            _pick(rate, i, n, "--rate", None), seed, limit,  # type: ignore[arg-type]
        )
        maxmemory_for(tr, memory, "--memory")
        traces.append((str(_pick(label, i, n, "--label", tr.name)), tr))
    with Progress(console=console, transient=True) as bar:
        task = bar.add_task("ttl compare", total=n * len(policy))
        rows = compare_ttl(
            traces, list(policy), memory_share=memory, maxmemory_policy=eviction, interval_s=interval, seed=seed,
            on_cell=lambda done, total, what: bar.update(task, completed=done, description=what),
        )
    settings = {"traces": trace, "policies": policy, "memory_share": memory, "eviction": eviction,
                "interval_s": interval, "seed": seed, "limit": limit}  # fmt: skip
    run_id = log_compare(rows, settings) if track else None
    if json_out:
        emit_json({"rows": rows, "mlflow_run_id": run_id, **settings})
        return
    table = Table(title=f"TTL policies at maxmemory = {memory:g} x working set ({eviction})")
    for c in ("trace", "policy", "hit ratio", "Δ pp", "byte hit", "Δ pp", "stale share", "Δ pp", "p95 ms", "Δ ms", "mean TTL s"):
        table.add_column(c)
    for r in rows:
        table.add_row(
            r["trace"], r["policy"], f"{r['hit_ratio']:.4f}", f"{r['delta_hit_ratio_pp']:+.2f}",
            f"{r['byte_hit_ratio']:.4f}", f"{r['delta_byte_hit_ratio_pp']:+.2f}", f"{r['stale_share']:.4f}",
            f"{r['delta_stale_share_pp']:+.2f}", f"{r['p95_ms']:.0f}", f"{r['delta_p95_ms']:+.0f}", f"{r['mean_ttl_s']:.0f}",
        )  # fmt: skip
    _wide(table)
    if run_id:
        console.print(f"MLflow run {run_id} (experiment cachetuner-ttl)")


@ttl_app.command("tenants")
def tenants_cmd(
    workload: Annotated[str, typer.Option("--workload", help="Tenant workload YAML.")] = (
        "experiments/workloads/tenants-3class.yaml"),
    policy: Annotated[str, typer.Option("--policy", help="TTL policy of every tenant (times its class factor).")] = "fixed:300",
    memory: Annotated[float, typer.Option("--memory", help="maxmemory as a share of the working set.")] = 0.1,
    interval: Annotated[float, typer.Option("--interval", help="Seconds per interval.")] = 60.0,
    warmup: Annotated[int, typer.Option("--warmup", help="Cold-start intervals left out of the shares.")] = 10,
    figure: Annotated[str | None, typer.Option("--figure", help="Also write the p95 figure here (.png, .svg, .pdf, .jpg).")] = None,
    track: Annotated[bool, typer.Option("--track/--no-track", help="Log to MLflow (experiment cachetuner-ttl).")] = True,
    stack_dir: Annotated[str | None, typer.Option("--stack-dir", help="Run on this live stack instead (cachetuner stack up).")] = None,
    speedup: Annotated[float, typer.Option("--speedup", help="Live: replay the workload this many times faster.")] = 20.0,
    json_out: JsonOpt = False,
) -> None:
    """Per-class memory protection under memory pressure: per-tenant hit ratio, p95 and stale share."""
    from cachetuner.tenants import load_tenant_workload
    from cachetuner.tenants.qos import qos_experiment, qos_figure
    from cachetuner.ttl.run import check_warmup, maxmemory_for

    _check_options(memory, interval)
    _check_figure(figure)
    if warmup < 0:
        raise ConfigError(f"--warmup: cold-start intervals must be >= 0, got {warmup}")
    trace = load_tenant_workload(workload)
    maxmemory_for(trace, memory, "--memory")
    check_warmup(warmup, trace, interval, "--warmup")
    if stack_dir is not None:
        from cachetuner.live.replay_qos import check_speedup, live_qos_experiment, live_qos_figure

        check_speedup(speedup)
        with console.status(f"replaying {trace.name} into the live stack, 2 scenarios x {trace.duration / speedup:.0f} s"):
            live = live_qos_experiment(trace, stack_dir, policy=policy, memory_share=memory, interval_s=interval,
                                       warmup=warmup, speedup=speedup)  # fmt: skip
        if _publish(live, live_qos_figure(live), figure, track=track, json_out=json_out):
            return
        table = Table(title=f"live {trace.name}: maxmemory {live['maxmemory']:,} B, x{speedup:g}, after {warmup} intervals")
        for c in ("scenario", "tenant", "hit ratio", "p95 ms (mean)", "p95 met", "keys resident / requested"):
            table.add_column(c)
        for sc, d in live["scenarios"].items():
            for t, v in d["tenants"].items():
                table.add_row(sc, f"{t} ({v['p95_threshold_ms']:.0f} ms)", f"{v['hit_ratio']:.3f}", f"{v['p95_ms_mean']:.0f}",
                              f"{100 * v['p95_met_share']:.0f} % of {v['intervals']}",
                              f"{v['keys_resident_at_end']:,} / {v['keys_requested']:,}")  # fmt: skip
        _wide(table)
        return
    with Progress(console=console, transient=True) as bar:
        task = bar.add_task("tenant QoS scenarios", total=3)
        report, runs = qos_experiment(
            trace, policy=policy, memory_share=memory, interval_s=interval, warmup=warmup,
            on_scenario=lambda done, total, what: bar.update(task, completed=done, total=total, description=what),
        )  # fmt: skip
    if _publish(report, qos_figure(runs, warmup), figure, track=track, json_out=json_out):
        return
    table = Table(title=f"{trace.name}: maxmemory {report['maxmemory']:,} B, policy {policy}, after {warmup} intervals")
    for c in ("scenario", "tenant", "hit ratio", "byte hit", "p95 ms (mean)", "p95 met", "stale share", "share of misses"):
        table.add_column(c)
    for sc, d in report["scenarios"].items():
        for t, v in d["tenants"].items():
            table.add_row(sc, f"{t} ({v['qos']}, {v['p95_threshold_ms']:.0f} ms)", f"{v['hit_ratio']:.3f}",
                          f"{v['byte_hit_ratio']:.3f}", f"{v['p95_ms_mean']:.0f}", f"{100 * v['p95_met_share']:.0f} %",
                          f"{v['stale_share']:.3f}", f"{100 * v['miss_share']:.0f} %")  # fmt: skip
    _wide(table)
