"""Live-path commands: ``stack up/down``, ``replay``, ``bench replay``, ``calibrate``, ``fidelity``, ``live-eval``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.progress import Progress
from rich.table import Table

from cachetuner.cli.app import app, bench_app, console, emit_json, out
from cachetuner.cli.trace_options import (
    FormatOpt,
    JsonOpt,
    LimitOpt,
    ParamsOpt,
    RateProfileOpt,
    SeedOpt,
    SizeModelOpt,
    StartOpt,
    load_trace_from_options,
)
from cachetuner.errors import ConfigError

stack_app = typer.Typer(help="Local redis-server + redis_exporter + prometheus on free loopback ports.", no_args_is_help=True)
app.add_typer(stack_app, name="stack")

DirOpt = Annotated[Path, typer.Option("--dir", help="Folder for configs, data, logs and stack.json.")]
DEFAULT_STACK_DIR = Path(".cachetuner-stack")
DEFAULT_TRACE = "bundled:web07"


@stack_app.command("up")
def stack_up(
    dir: DirOpt = DEFAULT_STACK_DIR,
    maxmemory: Annotated[int, typer.Option(help="Redis maxmemory at start, bytes.")] = 64 * 1024 * 1024,
    policy: Annotated[str, typer.Option(help="Redis maxmemory-policy at start.")] = "allkeys-lru",
    rules: Annotated[
        list[Path] | None,
        typer.Option("--rules", help="Prometheus rule file to evaluate (repeatable), e.g. deploy/alerts.yml."),
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Start the stack in the background, wait until Prometheus has its first redis_up sample, print URLs."""
    from cachetuner.live.stack import LocalStack

    stack = LocalStack(dir, maxmemory=maxmemory, maxmemory_policy=policy, rule_files=rules or ())
    try:
        with console.status("starting redis-server, redis_exporter, prometheus ..."):
            info = stack.up()
    except BaseException:
        stack.abort()
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
    rate: Annotated[float | None, typer.Option(
        "--rate", help="Fixed pace in requests/s (also re-times the trace); with --rate-profile the profile's mean.")] = None,
    rate_profile: RateProfileOpt = None,
    speedup: Annotated[float | None, typer.Option("--speedup", help="Replay trace timestamps X times faster.")] = None,
    duration: Annotated[float, typer.Option("--duration", help="Stop after S wall seconds.")] = 600.0,
    max_requests: Annotated[int | None, typer.Option("--max-requests", help="Stop after N requests.")] = None,
    loop: Annotated[bool, typer.Option("--loop", help="Wrap around at the end of the trace.")] = False,
    pipeline: Annotated[int, typer.Option("--pipeline", help="Commands per round trip.")] = 64,
    metrics_port: Annotated[int, typer.Option("--metrics-port", help="prometheus_client port (0 = free; -1 = off).")] = 0,
    sample_rate: Annotated[float, typer.Option("--sample-rate", help="Share of keys published to the sampled stream.")] = 0.01,
    miss_latency_ms: Annotated[float, typer.Option("--miss-latency-ms", help="Median simulated backend call on a miss.")] = 900.0,
    miss_sigma: Annotated[float, typer.Option("--miss-sigma", help="Lognormal sigma of the backend call.")] = 0.6,
    ttl_policy: Annotated[str | None, typer.Option("--ttl-policy", help="Client-side TTL policy: trace, fixed:S, rules, multi-factor, hotness (docs/ttl.md).")] = None,
    size_model: SizeModelOpt = None,
    seed: SeedOpt = 0,
    limit: LimitOpt = None,
    start: StartOpt = 0,
    params: ParamsOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Replay a trace into Redis as a read-through application (GET, on miss SET), pipelined."""
    from cachetuner.live.replay import replay, replay_options, replay_pacing
    from cachetuner.live.resp import parse_redis_url, redact_url
    from cachetuner.live.stack import load_state

    if stack_dir is not None and not redis:
        info = load_state(stack_dir)
        if info is None:
            raise ConfigError(f"--stack-dir {stack_dir}: no stack.json there (run `cachetuner stack up --dir {stack_dir}`)")
        redis = info.redis_url
    if not redis:
        raise ConfigError("--redis URL or --stack-dir DIR is required (start one with `cachetuner stack up`)")
    parse_redis_url(redis)
    pace_rate, pace_speedup = replay_pacing(rate, speedup, rate_profile)
    opts = replay_options(
        rate=pace_rate, speedup=pace_speedup, duration_s=duration, max_requests=max_requests, loop=loop, pipeline=pipeline,
        metrics_port=None if metrics_port == -1 else metrics_port, sample_rate=sample_rate,
        miss_latency_ms=miss_latency_ms, miss_sigma=miss_sigma, seed=seed, ttl_policy=ttl_policy,
        stack_dir=str(stack_dir) if stack_dir is not None else None,
    )  # fmt: skip
    tr = load_trace_from_options(trace, format, size_model, rate, seed, limit, params, rate_profile, start)
    total = max_requests or (None if loop else len(tr))
    with Progress(console=console, transient=True) as bar:
        task = bar.add_task(f"replaying {tr.name}", total=total)
        res = replay(tr, redis, opts, progress=lambda k: bar.advance(task, k))
    d = res.to_dict()
    if json_out:
        emit_json({"trace": tr.name, "redis": redact_url(redis), **d})
        return
    table = Table(title=f"replay {tr.name} -> {redact_url(redis)}", show_header=False)
    for k in ("requests", "gets", "hits", "misses", "hit_ratio", "sets", "rejected_writes", "errors", "requests_per_s",
              "latency_p50_ms", "latency_p95_ms", "elapsed_s", "stopped_by", "metrics_port"):  # fmt: skip
        v = d[k]
        table.add_row(k, f"{v:,.3f}" if isinstance(v, float) else str(v))
    out.print(table)


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


@app.command("calibrate")
def calibrate_cmd(
    redis: Annotated[str | None, typer.Option("--redis", help="Scratch Redis to measure (it is FLUSHed!); default: a fresh one.")] = None,
    n_keys: Annotated[int, typer.Option("--keys", help="Keys written per value size (>= 1).")] = 5000,
    json_out: JsonOpt = False,
) -> None:
    """Measure Redis's per-key memory (INFO used_memory deltas, MEMORY USAGE) against the simulator's model."""
    from cachetuner.live.calibrate import calibrate
    from cachetuner.live.resp import parse_redis_url

    if redis is not None:
        parse_redis_url(redis)
    with console.status("calibrating the memory model ..."):
        cal = calibrate(redis, n_keys=n_keys)
    if json_out:
        emit_json(cal.to_dict())
        return
    table = Table(title=f"Redis {cal.redis_version} ({cal.allocator}) per-key memory, {cal.n_keys} keys")
    for col in ("value B", "TTL", "measured B/key", "MEMORY USAGE", "sim formula", "err %"):
        table.add_column(col, justify="right")
    for row in cal.rows:
        table.add_row(*(str(row[k]) for k in ("value_bytes", "ttl", "measured_per_key", "memory_usage", "formula_per_key", "formula_err_pct")))
    out.print(table)
    out.print(f"base used_memory {cal.base_used_memory:,} B; replayer connection {cal.client_buffer_bytes:,} B; "
              f"formula mean |err| {cal.formula_mean_abs_err_pct}% vs flat +{cal.flat_overhead} B {cal.flat_mean_abs_err_pct}% -> {cal.chosen}")  # fmt: skip


def _fractions(text: str) -> tuple[float, ...]:
    try:
        vals = tuple(float(x.strip().rstrip("%")) / (100.0 if x.strip().endswith("%") else 1.0) for x in text.split(",") if x.strip())
    except ValueError as e:
        raise ConfigError(f"--sizes {text!r}: expected e.g. 5%,20%,50% or 0.05,0.2") from e
    if not vals or any(not 0 < v <= 4 for v in vals):
        raise ConfigError(f"--sizes {text!r}: each size must be a fraction in (0, 4] of the working set")
    return vals


@app.command("fidelity")
def fidelity_cmd(
    trace: Annotated[str, typer.Option("--trace", help="Trace file, synthetic:NAME or bundled:NAME.")] = DEFAULT_TRACE,
    format: FormatOpt = "auto",
    size_model: SizeModelOpt = None,
    seed: SeedOpt = 0,
    limit: LimitOpt = None,
    start: StartOpt = 0,
    params: ParamsOpt = None,
    sizes: Annotated[str, typer.Option("--sizes", help="maxmemory as % of the working set.")] = "5%,20%,50%",
    policies: Annotated[str, typer.Option("--policies", help="Comma-separated policies (default: all 8).")] = "",
    rate: Annotated[float, typer.Option("--rate", help="Replay pace, requests/s (the simulator gets the actual send times).")] = 20_000.0,
    pipeline: Annotated[int, typer.Option("--pipeline")] = 64,
    scenarios: Annotated[bool, typer.Option("--scenarios/--no-scenarios", help="Policy switch and maxmemory shrink mid-run.")] = True,
    redis: Annotated[str | None, typer.Option("--redis", help="Scratch Redis (FLUSHed!); default: a fresh one.")] = None,
    json_out: JsonOpt = False,
) -> None:
    """Hit ratio of the real Redis vs the simulator, per policy x memory size, same trace and clock."""
    from cachetuner.config import REDIS_POLICIES
    from cachetuner.live.fidelity import FidelityOptions, run_fidelity
    from cachetuner.live.resp import parse_redis_url
    from cachetuner.yamlconfig import validate_options

    if redis is not None:
        parse_redis_url(redis)
    pols = tuple(p.strip() for p in policies.split(",") if p.strip()) or REDIS_POLICIES
    opts = validate_options(
        FidelityOptions,
        {"sizes": _fractions(sizes), "policies": pols, "rate": rate, "pipeline": pipeline, "scenarios": scenarios, "seed": seed},
    )
    tr = load_trace_from_options(trace, format, size_model, None, seed, limit, params, start=start)
    n_runs = len(opts.sizes) * len(pols) + (2 if scenarios else 0) + 1
    with Progress(console=console, transient=True) as bar:
        task = bar.add_task("fidelity", total=n_runs + 1)

        def step(msg: str) -> None:
            bar.update(task, advance=1, description=msg)

        res = run_fidelity(tr, opts, redis, progress=step)
    if json_out:
        emit_json(res)
        return
    table = Table(title=f"fidelity {res['trace']}: {res['requests']:,} requests at {res['rate']:,.0f}/s, "
                        f"max |diff| {res['max_abs_diff_pp']:.2f} pp")  # fmt: skip
    for col in ("policy", "size", "sim HR", "redis HR", "diff pp", "evict sim/redis", "OOM sim/redis", "mem err %"):
        table.add_column(col, justify="right")
    for c in res["cells"] + res["scenarios"]:
        table.add_row(
            c.get("scenario", c["policy"]), f"{c.get('size_fraction', 0):.0%}" if "size_fraction" in c else "-",
            f"{c['sim_hit_ratio']:.4f}", f"{c['redis_hit_ratio']:.4f}", f"{c['diff_pp']:+.2f}",
            f"{c['sim_evictions']}/{c['redis_evictions']}", f"{c['sim_rejected_writes']}/{c['redis_rejected_writes']}",
            f"{c['used_memory_err_pct']:+.2f}",
        )  # fmt: skip
    out.print(table)
    out.print(f"memory model error (no maxmemory, all keys resident): {res['memory_model_err_pct']}%")


@app.command("live-eval")
def live_eval_cmd(
    model: Annotated[
        str | None, typer.Option("--model", help="trained policy for --controller ppo: model.zip, default, or runs:/<id>/model")
    ] = None,
    controller: Annotated[str, typer.Option("--controller", help="registered controller (ppo, mrc, static-default, ...)")] = "ppo",
    trace: Annotated[str, typer.Option("--trace", help="Trace the background replayer loops over.")] = DEFAULT_TRACE,
    format: FormatOpt = "auto",
    size_model: SizeModelOpt = None,
    intervals: Annotated[int, typer.Option("--intervals", min=1, help="Live intervals (env steps).")] = 10,
    interval_s: Annotated[float, typer.Option("--interval-s", min=1.0, help="Wall seconds per interval.")] = 3.0,
    rate: Annotated[float, typer.Option("--rate", help="Background replay pace, requests/s.")] = 2000.0,
    redis: Annotated[str | None, typer.Option("--redis", help="Use this Redis instead of starting a stack.")] = None,
    prometheus: Annotated[str | None, typer.Option("--prometheus", help="Prometheus scraping that Redis's exporter.")] = None,
    stack_dir: Annotated[Path | None, typer.Option("--stack-dir", help="Use a running `stack up --dir` stack.")] = None,
    config: Annotated[Path | None, typer.Option("--config", help="Training config of the model (default: train_config.yaml next to it).")] = None,
    json_out: JsonOpt = False,
) -> None:
    """A short evaluation episode of a controller on a live Redis (starts a local stack unless URLs are given)."""
    from cachetuner.live.live_eval import live_eval
    from cachetuner.live.resp import parse_redis_url

    if bool(redis) != bool(prometheus):
        raise ConfigError("--redis and --prometheus go together (or give neither to start a local stack)")
    if redis:
        parse_redis_url(redis)
    tr = load_trace_from_options(trace, format, size_model)

    def show(row: dict) -> None:
        console.print(
            f"[{row['interval']:>3}] {row['policy']:<15} {row['maxmemory'] / 2**20:8.1f} MiB  HR {row['hit_ratio']:.3f}  "
            f"req {row['requests']:>7}  evict {row['evictions']:>6}  p95 {row['p95_ms']:8.1f} ms  r {row['reward']:+.3f}"
            + ("  STALE" if row["stale"] else "")
        )

    res = live_eval(
        model, tr, intervals=intervals, interval_s=interval_s, rate=rate, redis_url=redis, prometheus_url=prometheus,
        stack_dir=str(stack_dir) if stack_dir else None, on_row=show, config_path=str(config) if config else None,
        controller=controller,
    )  # fmt: skip
    if json_out:
        emit_json(res)
        return
    table = Table(title=f"live eval {controller}{' ' + str(model) if model else ''} on {res['trace']}")
    for col in ("#", "policy", "maxmemory MiB", "HR", "requests", "evictions", "p95 ms", "reward", "stale"):
        table.add_column(col, justify="right")
    for r in res["rows"]:
        table.add_row(str(r["interval"]), r["policy"], f"{r['maxmemory'] / 2**20:.1f}", f"{r['hit_ratio']:.3f}", str(r["requests"]),
                      str(r["evictions"]), f"{r['p95_ms']:.1f}", f"{r['reward']:+.3f}", "yes" if r["stale"] else "")  # fmt: skip
    out.print(table)
    out.print(f"mean hit ratio {res['mean_hit_ratio']:.4f}, total reward {res['total_reward']:+.3f}")
