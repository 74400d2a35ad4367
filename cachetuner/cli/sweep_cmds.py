"""``cachetuner sweep`` and ``cachetuner bench sweep`` (Ray; see docs/scaling.md)."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import typer

from cachetuner.cli.app import app, bench_app, console, emit_json, out, wide_out

_JSON = typer.Option("--json", help="print exactly one JSON object on stdout")
_URI = typer.Option("--tracking-uri", help="MLflow store (default: MLFLOW_TRACKING_URI, else sqlite:///mlflow.db here)")
_ADDR = typer.Option(
    "--ray-address", help="Ray cluster to join: auto, HOST:PORT or ray://HOST:PORT; default: start Ray on this machine"
)


@contextlib.contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """Send everything written to file descriptor 1 (Ray's and its libraries' prints included) to
    stderr while the block runs, so that ``--json`` leaves exactly one object on stdout."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


@app.command("sweep")
def sweep_cmd(
    config: Annotated[Path, typer.Argument(help="sweep YAML (experiments/sweep_smoke.yaml)")],
    ray_address: Annotated[str | None, _ADDR] = None,
    num_cpus: Annotated[int | None, typer.Option("--num-cpus", min=1, help="CPUs of a locally started Ray")] = None,
    json_out: Annotated[bool, _JSON] = False,
    tracking_uri: Annotated[str | None, _URI] = None,
) -> None:
    """Hyperparameter search on Ray Tune (Optuna + ASHA).

    Every trial is a PPO training logged as a child MLflow run; the best model is saved and registered in the
    MLflow Model Registry."""
    import signal

    from cachetuner.cluster import check_address
    from cachetuner.sweep import load_sweep

    # A bad config or address is one line in seconds, before Ray, MLflow and torch are imported.
    load_sweep(config)
    check_address(ray_address)
    from cachetuner.sweep.run import run_sweep

    def _terminate(signum: int, frame: object) -> None:
        raise KeyboardInterrupt  # SIGTERM as a second Ctrl-C: trials stopped, runs marked KILLED

    signal.signal(signal.SIGTERM, _terminate)
    with stdout_to_stderr():
        res = run_sweep(config, ray_address=ray_address, tracking_uri=tracking_uri, num_cpus=num_cpus, console=console)
    if json_out:
        emit_json(res)
    else:
        print_sweep(res)
    if res["interrupted"]:
        raise typer.Exit(130)


def print_sweep(res: dict) -> None:
    from rich.table import Table

    table = Table(title=f"sweep {res['sweep']}: {len(res['trials'])} trials on {res['nodes_used']} node(s), "
                        f"{res['wall_seconds']:.0f} s")
    for col in ("trial", "status", "best score", "steps", "node", "settings"):
        table.add_column(col, no_wrap=col != "settings")
    for t in sorted(res["trials"], key=lambda t: -(t["best_score"] if t["best_score"] is not None else float("inf"))):
        table.add_row(t["trial_id"], t["status"], "n/a" if t["best_score"] is None else f"{t['best_score']:.3f}",
                      str(t["timesteps"] or ""), (t["node_id"] or "")[:8],
                      " ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in t["config"].items()))
    wide_out().print(table)
    for e in res["errors"]:
        out.print(f"trial {e['trial_id']} crashed: {e['error']}")
    b = res["best_trial"]
    if b:
        out.print(f"best trial {b['trial_id']}: score {b['score']:.3f}, model {b['model_path']} "
                  f"(registered as {res['registered_model']})")
    else:
        out.print("no trial finished: no model registered")
    out.print(f"MLflow parent run {res['mlflow_run_id']}")


@bench_app.command("sweep")
def bench_sweep_cmd(
    suite: Annotated[Path, typer.Option("--suite", help="evaluation suite YAML to time")] = Path("experiments/sweep_bench_suite.yaml"),
    workers: Annotated[int, typer.Option("--workers", min=1, help="local Ray workers (CPUs)")] = 2,
    json_out: Annotated[bool, _JSON] = False,
) -> None:
    """Wall time of the same evaluation suite run serially and as Ray tasks on N local workers."""
    from cachetuner.sweep.bench import bench_suite

    with stdout_to_stderr():
        res = bench_suite(suite, workers=workers, console=console)
    if json_out:
        emit_json(res)
    else:
        out.print(f"suite {res['suite']} ({res['cells']} cells): serial {res['serial_seconds']:.1f} s, "
                  f"Ray x{res['workers']} {res['ray_seconds']:.1f} s -> speed-up {res['speedup']:.2f}x; "
                  f"results identical: {res['identical']}")
