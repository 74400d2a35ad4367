"""``cachetuner recommend``: the cost-optimal static maxmemory and policy for a trace, checked by replay;
``cachetuner bench recommend``: how close that answer comes to the best config found by full simulation."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated

import typer

from cachetuner.cli.app import app, bench_app, console, emit_json, out
from cachetuner.cli.mrc_cmds import SharedTracesOpt
from cachetuner.cli.trace_options import (
    FormatOpt,
    JsonOpt,
    LimitOpt,
    ParamsOpt,
    RateOpt,
    SeedOpt,
    SizeModelOpt,
    StartOpt,
    TraceOpt,
    load_trace_from_options,
)
from cachetuner.config import RedisConfig
from cachetuner.errors import ConfigError

_MIB = float(1 << 20)

PricesOpt = Annotated[str | None, typer.Option("--prices", help="price preset: list, scaled (default) or cheap-backend")]
BudgetOpt = Annotated[str | None, typer.Option(
    "--budget", help="memory budget: bytes (64mb) or a share of the working set (10%); memory is then free below it")]
MemoryPriceOpt = Annotated[float | None, typer.Option("--memory-price", min=0, help="$ per GiB-hour (overrides the preset)")]
MissPriceOpt = Annotated[float | None, typer.Option("--miss-price", min=0, help="$ per miss (overrides the preset)")]
PoliciesOpt = Annotated[str, typer.Option("--policies", help="comma-separated maxmemory-policies to price")]
SampleRateOpt = Annotated[float, typer.Option("--sample-rate", min=0.0001, max=1.0, help="base SHARDS key-sampling rate")]


def prices_from_options(preset: str | None, budget: str | None, memory_price: float | None, miss_price: float | None):  # noqa: ANN201
    """``--prices``/``--budget``/``--memory-price``/``--miss-price`` as one :class:`PricesConfig`."""
    from cachetuner.env.prices import PricesConfig
    from cachetuner.reports.evaluate import price_option

    chosen = price_option(preset, budget)
    base = chosen if isinstance(chosen, PricesConfig) else PricesConfig(preset=chosen or "scaled")  # type: ignore[arg-type]
    for option, v in (("--memory-price", memory_price), ("--miss-price", miss_price)):
        if v is not None and not (math.isfinite(v) and v >= 0):
            raise ConfigError(f"{option}: must be a finite number >= 0, got {v}")
    update = {k: v for k, v in (("memory_per_gib_hour", memory_price), ("per_miss", miss_price)) if v is not None}
    if update.get("per_miss") == 0:
        raise ConfigError("--miss-price: must be > 0 (a free miss makes the smallest cache always cheapest)")
    return base.model_copy(update=update)


def _policies(text: str) -> list[str]:
    from cachetuner.sim.policies import POLICIES

    chosen = [p.strip() for p in text.split(",") if p.strip()]
    if not chosen:
        raise ConfigError("--policies: give at least one maxmemory-policy")
    for p in chosen:
        POLICIES.get(p, field="--policies")
        if not p.startswith("allkeys-"):
            raise ConfigError(f"--policies: {p!r} evicts only keys with a TTL; the curves price allkeys-* policies")
    return chosen


def _current(text: str | None, trace, default_policy: str) -> RedisConfig | None:  # noqa: ANN001
    if text is None:
        return None
    from cachetuner.sim.policies import POLICIES
    from cachetuner.sim.sizing import parse_size

    size, colon, policy = text.partition(":")
    if colon and not policy.strip():
        raise ConfigError(f"--current {text!r}: nothing after ':' (give SIZE, or SIZE:POLICY such as 64mb:allkeys-lru)")
    policy = policy.strip() or default_policy
    POLICIES.get(policy, field="--current")
    maxmemory = parse_size(size, trace, what="--current")
    if maxmemory < 1:  # Redis reads 0 as unlimited: this replay would price an unbounded cache as a 0 B one
        raise ConfigError(f"--current {text!r}: the size must be at least 1 byte (0 means unlimited in Redis)")
    return RedisConfig(maxmemory=maxmemory, maxmemory_policy=policy)  # type: ignore[arg-type]


@app.command("recommend")
def recommend_cmd(
    trace: TraceOpt = "bundled:web07",
    format: FormatOpt = "auto",
    size_model: SizeModelOpt = None,
    rate: RateOpt = None,
    seed: SeedOpt = 0,
    limit: LimitOpt = None,
    start: StartOpt = 0,
    params: ParamsOpt = None,
    prices: PricesOpt = None,
    budget: BudgetOpt = None,
    memory_price: MemoryPriceOpt = None,
    miss_price: MissPriceOpt = None,
    policies: PoliciesOpt = "allkeys-lru,allkeys-lfu",
    min_size: Annotated[str | None, typer.Option("--min-size", help="smallest maxmemory considered (default 2% of the working set)")] = None,
    max_size: Annotated[str | None, typer.Option("--max-size", help="largest maxmemory considered (default: the working set)")] = None,
    current: Annotated[str | None, typer.Option(
        "--current", help="the config in force, SIZE[:POLICY] (e.g. 64mb:allkeys-lru or 25%): replayed and priced beside the recommendation")] = None,
    tolerance: Annotated[float, typer.Option("--tolerance", min=0.0, max=1.0, help="report the sizes whose cost is within this share of the optimum")] = 0.03,
    verify: Annotated[bool, typer.Option("--verify/--no-verify", help="replay the trace at the recommended config")] = True,
    grid: Annotated[int, typer.Option("--grid", min=0, max=200, help="hindsight check: also replay this many log-spaced sizes x every policy (0 = off)")] = 0,
    sample_rate: SampleRateOpt = 0.01,
    plot: Annotated[Path | None, typer.Option("--plot", help="also write the figure to this PNG")] = None,
    mlflow_log: Annotated[bool, typer.Option("--mlflow/--no-mlflow", help="record the run, JSON and figure in MLflow")] = True,
    tracking_uri: Annotated[str | None, typer.Option("--tracking-uri", help="MLflow store (default: MLFLOW_TRACKING_URI, else sqlite:///mlflow.db here)")] = None,
    json_out: JsonOpt = False,
) -> None:
    """The cost-optimal static maxmemory and policy for a trace: its sampled miss-ratio curves priced in dollars (memory + misses), the cheapest config, and a replay of the trace there.

    One config for the whole trace; for traffic that shifts, the online controllers (mrc, ppo) follow it."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

    from cachetuner.mrc.config import MRCConfig
    from cachetuner.outputs import IMAGE_SUFFIXES, check_output_file
    from cachetuner.reports.recommend import run_recommend
    from cachetuner.sim.sizing import parse_size

    if plot is not None:  # before the trace is read: a bad path must not cost the whole run
        check_output_file(plot, "--plot", suffixes=IMAGE_SUFFIXES)
    chosen = _policies(policies)
    price_cfg = prices_from_options(prices, budget, memory_price, miss_price)
    tr = load_trace_from_options(trace, format, size_model, rate, seed, limit, params, start=start)
    cfg = MRCConfig(rate=sample_rate, policies=chosen)  # type: ignore[arg-type]
    bounds = None
    if min_size is not None or max_size is not None:
        from cachetuner.mrc.offline import default_bounds
        from cachetuner.sim.params import SimParams

        lo, hi = default_bounds(tr, SimParams())
        lo = parse_size(min_size, tr, what="--min-size") if min_size is not None else lo
        hi = parse_size(max_size, tr, what="--max-size") if max_size is not None else hi
        if lo < 1:
            raise ConfigError("--min-size: the smallest size must be at least 1 byte (0 means unlimited in Redis)")
        if lo >= hi:
            raise ConfigError(f"--min-size {lo:,} B must be below --max-size {hi:,} B")
        bounds = (lo, hi)
    cur = _current(current, tr, chosen[0])
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, transient=json_out) as prog:
        tasks: dict[str, TaskID] = {}

        def tick(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                tasks[stage] = prog.add_task("sampled pass (requests)" if stage == "sample" else "replays", total=total)
            prog.update(tasks[stage], completed=done)

        result, rec = run_recommend(tr, price_cfg, cfg=cfg, bounds=bounds, tolerance=tolerance, current=cur,
                                    verify=verify, grid=grid, tracking_uri=tracking_uri, log=mlflow_log, plot=plot,
                                    on_progress=tick)
    if json_out:
        emit_json(result)
        return
    _print(result)


def _print(result: dict) -> None:
    from rich.table import Table

    r = result["recommended"]
    p = result["prices"]
    unit = "budget" if p["budget_bytes"] is not None else f"${p['memory_per_gib_hour']:g}/GiB-h"
    out.print(f"[bold]{result['trace']}[/bold]: {result['requests']:,} requests over {result['duration_s'] / 3600:.2f} h "
              f"({result['gets_per_hour']:,.0f} GETs/h); prices {unit}, ${p['per_miss']:g}/miss")
    if result["timing"].startswith("uniform"):
        out.print(f"[yellow]timing {result['timing']}: the trace has no timestamps; the $/hour scale with --rate[/yellow]")
    if result["size_model"] not in ("", "from trace"):
        out.print(f"[yellow]value sizes {result['size_model']} (the trace has none, or --size-model replaced them)[/yellow]")
    out.print(f"[bold green]recommended: maxmemory {r['maxmemory']:,} B ({r['maxmemory'] / _MIB:,.1f} MiB), "
              f"{r['maxmemory_policy']}[/bold green]; predicted hit ratio {r['predicted_hit_ratio']:.3f}, "
              f"${r['predicted_cost_per_hour']:,.4g}/h")
    b = r["band"]
    out.print(f"within {b['tolerance']:.0%} of the optimum: {b['min_maxmemory'] / _MIB:,.1f}–{b['max_maxmemory'] / _MIB:,.1f} MiB")
    if result["replays"] or result.get("grid_check"):
        table = Table(title="replayed through the full simulator")
        for col in ("config", "maxmemory", "policy", "hit ratio (predicted)", "$ / hour"):
            table.add_column(col, justify="left" if col in ("config", "policy") else "right")
        rows = list(result["replays"].values())
        check = result.get("grid_check")
        if check:
            rows.append({**check["best"], "label": "best of the grid (hindsight)"})
        for x in rows:
            table.add_row(x["label"], f"{x['maxmemory'] / _MIB:,.1f} MiB", x["policy"],
                          f"{x['hit_ratio']:.3f} ({x['predicted_hit_ratio']:.3f})", f"{x['cost_per_hour']:,.4g}")
        out.print(table)
        if check and check["recommended_regret"] is not None:
            out.print(f"recommended vs the best of {check['points']} replayed configs: {check['recommended_regret']:+.2%}")
        if "current" in result["replays"] and "recommended" in result["replays"]:
            c, n = result["replays"]["current"]["cost_per_hour"], result["replays"]["recommended"]["cost_per_hour"]
            out.print(f"recommended vs current: {n / c - 1:+.2%} per hour")
    if "mlflow_run_id" in result:
        out.print(f"[dim]MLflow run {result['mlflow_run_id']} (experiment 'recommend')[/dim]")


@bench_app.command("recommend")
def bench_recommend_cmd(
    traces: SharedTracesOpt = None,
    prices: PricesOpt = None,
    memory_price: MemoryPriceOpt = None,
    miss_price: MissPriceOpt = None,
    rate: Annotated[float, typer.Option("--rate", min=0.001, help="requests per second (traces without timestamps)")] = 100.0,
    size_model: Annotated[str, typer.Option(
        "--size-model", help="value sizes: fixed:BYTES | lognormal:MEDIAN,SIGMA | llm | native (a trace's own)")] = "fixed:4096",
    limit: Annotated[int, typer.Option("--limit", min=1, help="requests read per trace")] = 300_000,
    grid: Annotated[int, typer.Option("--grid", min=2, max=200, help="log-spaced sizes replayed per policy (hindsight check)")] = 16,
    split: Annotated[float | None, typer.Option(
        "--split", min=0.05, max=0.95, help="recommend from this first share of each trace, judge on the rest (sizing from last week's traffic)")] = None,
    sample_rate: SampleRateOpt = 0.01,
    json_out: JsonOpt = False,
) -> None:
    """Regret of `recommend` against the best of a replayed grid, savings vs static-default, on every shared trace."""
    from cachetuner.mrc.bench import choose_shared
    from cachetuner.mrc.bench_recommend import bench_recommend
    from cachetuner.mrc.config import MRCConfig

    price_cfg = prices_from_options(prices, None, memory_price, miss_price)
    mem, miss = price_cfg.resolve()
    res = bench_recommend(choose_shared(traces), memory_per_gib_hour=mem, per_miss=miss, rate=rate,
                          size_model=None if size_model == "native" else size_model, limit=limit, grid=grid, split=split,
                          cfg=MRCConfig(rate=sample_rate), on_trace=lambda t: console.print(f"[dim]recommend bench: {t}[/dim]"))
    res["prices"]["preset"] = price_cfg.preset
    if json_out:
        emit_json(res)
        return
    from rich.table import Table

    where = "" if split is None else f", sized on the first {split:.0%}, judged on the rest"
    table = Table(title=f"recommend vs the best of a {grid}-size replayed grid ({price_cfg.preset} prices, {rate:g} req/s{where})")
    for col in ("trace", "recommended", "best on grid", "regret", "savings vs default", "cost predicted vs replayed"):
        table.add_column(col, justify="left" if col == "trace" else "right")
    for t in res["traces"]:
        r, b = t["recommended"], t["best_on_grid"]
        table.add_row(t["trace"], f"{r['maxmemory'] / _MIB:,.1f} MiB {r['maxmemory_policy'][8:]}",
                      f"{b['maxmemory'] / _MIB:,.1f} MiB {b['maxmemory_policy'][8:]}", f"{t['regret']:+.2%}",
                      f"{t['savings_vs_default']:+.1%}", f"{t['predicted_cost_error']:+.2%}")
    out.print(table)
    s = res["summary"]
    out.print(f"regret mean {s['regret']['mean']:+.2%}, worst {s['regret']['max']:+.2%}; savings vs default "
              f"{s['savings_vs_default']['mean']:+.1%} (grid's best {s['savings_vs_default']['grid_mean']:+.1%})")
