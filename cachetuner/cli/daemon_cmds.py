"""``cachetuner daemon`` (the online tuning loop) and ``cachetuner chaos`` (fault injection against it)."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import typer

from cachetuner.cli.app import app, bench_app, console, emit_json, out


def _setup_logging(level: str) -> None:
    logging.basicConfig(
        stream=sys.stderr,
        level=getattr(logging, level.upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    from cachetuner.daemon.secrets import ScrubFilter

    for h in logging.getLogger().handlers:
        h.addFilter(ScrubFilter())


@app.command("daemon")
def daemon_cmd(
    config: Path = typer.Option(..., "--config", "-c", help="daemon YAML (see experiments/daemon.yaml, docs/daemon.md)"),
    dry_run: bool = typer.Option(False, "--dry-run", help="decide, guard and log, never CONFIG SET"),
    max_iterations: int | None = typer.Option(None, "--max-iterations", min=1, help="stop after N loops"),
    log_level: str = typer.Option("INFO", "--log-level", help="DEBUG, INFO, WARNING"),
) -> None:
    """Run the online tuning loop against the configured Redis targets until SIGTERM (exit 0)."""
    from cachetuner.daemon.config import load_daemon_config
    from cachetuner.daemon.loop import Daemon

    if log_level.upper() not in ("DEBUG", "INFO", "WARNING", "ERROR"):
        from cachetuner.errors import ConfigError

        raise ConfigError(f"--log-level: {log_level!r}; valid: DEBUG, INFO, WARNING, ERROR")
    _setup_logging(log_level)
    cfg = load_daemon_config(config)
    if max_iterations is not None:
        cfg = cfg.model_copy(update={"max_iterations": max_iterations})
    d = Daemon(cfg, dry_run=True if dry_run else None)
    d.install_signal_handlers()
    d.start_http()
    mode = "DRY-RUN (nothing is applied)" if d.cfg.dry_run else "LIVE"
    console.print(
        f"[bold]cachetuner daemon[/] {mode}: policy={cfg.policy.name} targets={[t.name for t in cfg.targets]} "
        f"interval={cfg.interval_s:g}s audit={cfg.audit_path}"
    )
    raise typer.Exit(d.run())


@app.command("chaos")
def chaos_cmd(
    json_out: bool = typer.Option(False, "--json", help="print one JSON object on stdout"),
    faults: str | None = typer.Option(None, "--faults", help="comma-separated subset (default: all, in order)"),
    duration_per_fault: float = typer.Option(6.0, "--duration-per-fault", min=2.0, help="seconds each fault lasts"),
    interval_s: float = typer.Option(1.0, "--interval", min=1.0, help="daemon interval (s)"),
    workdir: Path | None = typer.Option(None, "--workdir", help="keep stack, audit log and logs here (default: temp)"),
    tracking: bool = typer.Option(True, "--tracking/--no-tracking", help="log the daemon sessions to MLflow (in the workdir)"),
) -> None:
    """Run the daemon as a subprocess against a local stack and inject faults one after another."""
    from cachetuner.daemon.chaos import FAULT_NAMES, run_chaos
    from cachetuner.errors import ConfigError

    _setup_logging("WARNING")
    names = list(FAULT_NAMES) if not faults else [f.strip() for f in faults.split(",") if f.strip()]
    bad = [n for n in names if n not in FAULT_NAMES]
    if bad:
        raise ConfigError(f"--faults: unknown fault(s) {bad}; valid faults: {', '.join(FAULT_NAMES)}")
    report = run_chaos(
        names, duration_per_fault=duration_per_fault, interval_s=interval_s, workdir=workdir, console=console, tracking=tracking
    )
    if json_out:
        emit_json(report)
        return
    from rich.table import Table

    t = Table(title="cachetuner chaos")
    for col in ("fault", "survived", "out_of_bounds_applied", "rollback_intervals", "decisions_lost", "notes"):
        t.add_column(col)
    for name, r in report["faults"].items():
        t.add_row(
            name,
            str(r["survived"]),
            str(r["out_of_bounds_applied"]),
            str(r["rollback_intervals"]),
            str(r["decisions_lost"]),
            r.get("notes", ""),
        )
    out.print(t)


@bench_app.command("daemon-costs")
def bench_daemon_costs_cmd(
    intervals: int = typer.Option(80, "--intervals", min=10, help="60 s intervals each daemon runs"),
    prices: str = typer.Option("scaled,cheap-backend", "--prices", help="comma-separated price presets"),
    policy: str = typer.Option("mrc", "--policy", help="the tuned daemon's decider: mrc, or ppo (the shipped policy)"),
    json_out: bool = typer.Option(False, "--json", help="print one JSON object on stdout"),
) -> None:
    """The daemon's estimated saving against the measured one, per workload x price preset.

    A tuned daemon (--policy) and a static-default daemon run on the same simulated traffic."""
    from typing import get_args

    from rich.table import Table

    from cachetuner.daemon.bench import bench_daemon_costs
    from cachetuner.env.prices import PricesConfig
    from cachetuner.errors import ConfigError
    from cachetuner.mrc.bench import shared_traces_dir

    presets = tuple(p.strip() for p in prices.split(",") if p.strip())
    valid = get_args(PricesConfig.model_fields["preset"].annotation)
    bad = [p for p in presets if p not in valid or p == "budget"]
    if bad or not presets:
        raise ConfigError(f"--prices: {', '.join(bad) or 'empty'}: not a priced preset; valid: "
                          f"{', '.join(v for v in valid if v != 'budget')}")
    if policy not in ("mrc", "ppo"):
        raise ConfigError(f"--policy {policy!r}: expected mrc or ppo")
    with console.status("running daemons ...") as status:
        res = bench_daemon_costs(shared_traces_dir(), prices=presets, intervals=intervals, policy=policy,
                                 progress=lambda what: status.update(f"running daemons: {what}"))
    if json_out:
        emit_json(res)
        return
    t = Table(title=f"daemon: estimated vs measured saving ({policy} against static-default, same traffic)")
    for c in ("workload", "prices", "estimated", "measured"):
        t.add_column(c)
    def pct(v: float | None) -> str:
        return "-" if v is None else f"{100 * v:.1f} %"

    for r in res["rows"]:
        if "missing" in r:
            t.add_row(r["workload"], "-", f"missing: {r['missing']}", "-")
        else:
            t.add_row(r["workload"], r["prices"], pct(r["estimated_saving"]), pct(r["measured_saving"]))
    out.print(t)
    s = res["summary"]
    if s["mean_abs_error_pp"] is not None:
        out.print(f"mean |estimated - measured| {s['mean_abs_error_pp']:.2f} pp, max {s['max_abs_error_pp']:.2f} pp "
                  f"over {s['estimated']} of {s['cells']} cells")
