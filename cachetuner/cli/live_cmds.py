"""Live-path commands: ``stack up/down``, ``replay``, ``bench replay``, ``calibrate``, ``fidelity``, ``live-eval``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import Progress
from rich.table import Table

from cachetuner.cli.app import app, bench_app, console, emit_json, out
from cachetuner.cli.trace_options import (
    FormatOpt,
    LimitOpt,
    ParamsOpt,
    SeedOpt,
    SizeModelOpt,
    load_trace_from_options,
)
from cachetuner.errors import ConfigError

stack_app = typer.Typer(help="Local redis-server + redis_exporter + prometheus on free loopback ports.", no_args_is_help=True)
app.add_typer(stack_app, name="stack")

JsonOpt = Annotated[bool, typer.Option("--json", help="Print exactly one JSON object on stdout.")]
DirOpt = Annotated[Path, typer.Option("--dir", help="Folder for configs, data, logs and stack.json.")]
DEFAULT_STACK_DIR = Path(".cachetuner-stack")
DEFAULT_TRACE = "bundled:web07"


@stack_app.command("up")
def stack_up(
    dir: DirOpt = DEFAULT_STACK_DIR,
    maxmemory: Annotated[int, typer.Option(help="Redis maxmemory at start, bytes.")] = 64 * 1024 * 1024,
    policy: Annotated[str, typer.Option(help="Redis maxmemory-policy at start.")] = "allkeys-lru",
    json_out: JsonOpt = False,
) -> None:
    """Start the stack in the background, wait until Prometheus has its first redis_up sample, print URLs."""
    from cachetuner.live.stack import LocalStack

    stack = LocalStack(dir, maxmemory=maxmemory, maxmemory_policy=policy)
    try:
        with console.status("starting redis-server, redis_exporter, prometheus ..."):
            info = stack.up()
    except BaseException:
        stack.down()
        raise
    urls = info.urls()
    if json_out:
        emit_json({"dir": info.dir, **urls, "pids": info.pids})
        return
    for name, url in urls.items():
        out.print(f"{name:<11} {url}")
    out.print(f"stop with: cachetuner stack down --dir {info.dir}")


@stack_app.command("down")
def stack_down(dir: DirOpt = DEFAULT_STACK_DIR, json_out: JsonOpt = False) -> None:
    """Stop the processes recorded in DIR/stack.json (by PID, after checking /proc cmdline)."""
    from cachetuner.live.stack import stop_stack

    stopped = stop_stack(dir)
    if json_out:
        emit_json({"dir": str(Path(dir).resolve()), "stopped": stopped})
    else:
        out.print(f"stopped: {', '.join(stopped) if stopped else 'nothing (no stack running there)'}")


@app.command("replay")
def replay_cmd(
    trace: Annotated[str, typer.Option("--trace", help="Trace file, synthetic:NAME or bundled:NAME.")] = DEFAULT_TRACE,
    format: FormatOpt = "auto",
    redis: Annotated[str, typer.Option("--redis", help="redis:// or rediss:// URL (user:password@ for ACL).")] = "",
    stack_dir: Annotated[Path | None, typer.Option("--stack-dir", help="Use this stack's Redis and register /metrics with its Prometheus.")] = None,
    rate: Annotated[float | None, typer.Option("--rate", help="Fixed pace in requests/s (also re-times the trace).")] = None,
    speedup: Annotated[float | None, typer.Option("--speedup", help="Replay trace timestamps X times faster.")] = None,
    duration: Annotated[float, typer.Option("--duration", help="Stop after S wall seconds.")] = 600.0,
    max_requests: Annotated[int | None, typer.Option("--max-requests", help="Stop after N requests.")] = None,
    loop: Annotated[bool, typer.Option("--loop", help="Wrap around at the end of the trace.")] = False,
    pipeline: Annotated[int, typer.Option("--pipeline", help="Commands per round trip.")] = 64,
    metrics_port: Annotated[int, typer.Option("--metrics-port", help="prometheus_client port (0 = free; -1 = off).")] = 0,
    sample_rate: Annotated[float, typer.Option("--sample-rate", help="Share of keys published to the sampled stream.")] = 0.01,
    miss_latency_ms: Annotated[float, typer.Option("--miss-latency-ms", help="Median simulated backend call on a miss.")] = 900.0,
    miss_sigma: Annotated[float, typer.Option("--miss-sigma", help="Lognormal sigma of the backend call.")] = 0.6,
    size_model: SizeModelOpt = None,
    seed: SeedOpt = 0,
    limit: LimitOpt = None,
    params: ParamsOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Replay a trace into Redis as a read-through application (GET, on miss SET), pipelined."""
    from cachetuner.live.replay import ReplayOptions, replay
    from cachetuner.live.stack import load_state

    if stack_dir is not None and not redis:
        info = load_state(stack_dir)
        if info is None:
            raise ConfigError(f"--stack-dir {stack_dir}: no stack.json there (run `cachetuner stack up --dir {stack_dir}`)")
        redis = info.redis_url
    if not redis:
        raise ConfigError("--redis URL or --stack-dir DIR is required (start one with `cachetuner stack up`)")
    tr = load_trace_from_options(trace, format, size_model, rate, seed, limit, params)
    opts = ReplayOptions(
        rate=rate, speedup=speedup, duration_s=duration, max_requests=max_requests, loop=loop, pipeline=pipeline,
        metrics_port=None if metrics_port < 0 else metrics_port, sample_rate=sample_rate,
        miss_latency_ms=miss_latency_ms, miss_sigma=miss_sigma, seed=seed,
        stack_dir=str(stack_dir) if stack_dir is not None else None,
    )  # fmt: skip
    total = max_requests or (None if loop else len(tr))
    with Progress(console=console, transient=True) as bar:
        task = bar.add_task(f"replaying {tr.name}", total=total)
        res = replay(tr, redis, opts, progress=lambda k: bar.advance(task, k))
    d = res.to_dict()
    if json_out:
        emit_json({"trace": tr.name, "redis": _redact(redis), **d})
        return
    table = Table(title=f"replay {tr.name} -> {_redact(redis)}", show_header=False)
    for k in ("requests", "gets", "hits", "misses", "hit_ratio", "sets", "rejected_writes", "errors", "requests_per_s",
              "latency_p50_ms", "latency_p95_ms", "elapsed_s", "stopped_by", "metrics_port"):  # fmt: skip
        v = d[k]
        table.add_row(k, f"{v:,.3f}" if isinstance(v, float) else str(v))
    out.print(table)


def _redact(url: str) -> str:
    """The URL without its password (for output)."""
    if "@" not in url:
        return url
    scheme, rest = url.split("://", 1)
    cred, host = rest.rsplit("@", 1)
    user = cred.split(":", 1)[0] if ":" in cred else ""
    return f"{scheme}://{user}:***@{host}"


@bench_app.command("replay")
def bench_replay(
    trace: Annotated[str, typer.Option("--trace", help="Trace to replay flat out.")] = DEFAULT_TRACE,
    format: FormatOpt = "auto",
    size_model: Annotated[str | None, typer.Option("--size-model", help="Size model (default fixed:64, as redis-benchmark's -d 64).")] = "fixed:64",
    pipeline: Annotated[int, typer.Option("--pipeline", help="Pipeline depth for both.")] = 64,
    requests: Annotated[int, typer.Option("--requests", help="Requests for each side.")] = 200_000,
    clients: Annotated[int, typer.Option("--clients", help="redis-benchmark connections (-c); the replayer uses 1.")] = 1,
    json_out: JsonOpt = False,
) -> None:
    """Replayer throughput next to redis-benchmark (-t get,set -P same depth) against one fresh redis-server."""
    from cachetuner.live.bench import bench_replay as run

    tr = load_trace_from_options(trace, format, size_model)
    with console.status("benchmarking replay vs redis-benchmark ..."):
        res = run(tr, pipeline=pipeline, requests=requests, clients=clients)
    if json_out:
        emit_json(res)
        return
    table = Table(title="bench replay", show_header=False)
    for k, v in res.items():
        table.add_row(k, f"{v:,.3f}" if isinstance(v, float) else str(v))
    out.print(table)


def _print_json_or(obj: dict, json_out: bool) -> bool:
    if json_out:
        emit_json(obj)
    return json_out


__all__ = ["bench_replay", "replay_cmd", "stack_down", "stack_up", "json"]
