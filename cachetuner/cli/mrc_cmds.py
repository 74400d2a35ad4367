"""``cachetuner bench mrc``: miss-ratio-curve error against full simulation, and its cost."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from cachetuner.cli.app import app, bench_app, console, emit_json, out, wide_out
from cachetuner.cli.trace_options import JsonOpt

#: ``--traces`` of the benchmarks over the shared traces.
SharedTracesOpt = Annotated[
    str | None, typer.Option("--traces", help="comma-separated shared trace paths (relative to shared/traces); default: all")
]


@bench_app.command("mrc")
def bench_mrc_cmd(
    traces: SharedTracesOpt = None,
    rate: Annotated[float, typer.Option("--rate", min=0.0001, max=1.0, help="base SHARDS sampling rate")] = 0.01,
    limit: Annotated[int, typer.Option("--limit", min=1, help="requests read per trace")] = 300_000,
    min_keys: Annotated[int, typer.Option("--min-keys", min=0, help="raise the rate to sample about this many keys")] = 500,
    min_objects: Annotated[int | None, typer.Option(
        "--min-objects", min=0, help="raise a miniature cache's rate until it holds about this many objects (default: "
        "mrc.min_objects's)")] = None,
    size_model: Annotated[str, typer.Option(
        "--size-model", help="value sizes: fixed:BYTES | lognormal:MEDIAN,SIGMA | llm[:P,EMBED,MEDIAN,SIGMA] (per key, "
        "replacing a trace's own), or native (a trace's own sizes, fixed:4096 where it has none)")] = "fixed:4096",
    size_correction: Annotated[bool, typer.Option(
        "--size-correction/--no-size-correction", help="place each miniature cache at the size its key sample stands "
        "for (mrc.size_correction, off by default: the nominal sizes)")] = False,
    draws: Annotated[int, typer.Option(
        "--draws", min=1, max=64, help="draws of the key sample per trace (the shipped hash, then seeded relabellings "
        "of the key ids); errors are means over them")] = 8,
    json_out: JsonOpt = False,
) -> None:
    """Mean and max |hit-ratio error| (pp) of the curves vs full simulation, per policy and trace."""
    from cachetuner.mrc import MRCConfig
    from cachetuner.mrc.bench import bench_mrc, choose_shared

    extra = {} if min_objects is None else {"min_objects": min_objects}
    cfg = MRCConfig(rate=rate, min_keys=min_keys, size_correction=size_correction, **extra)
    res = bench_mrc(choose_shared(traces), cfg=cfg, limit=limit, draws=draws,
                    size_model=None if size_model == "native" else size_model, on_trace=lambda t: console.print(f"[dim]mrc bench: {t}[/dim]"))
    if json_out:
        emit_json(res)
        return
    from rich.table import Table

    table = Table(title=f"miss-ratio curves at {rate:.0%} sampling vs full simulation (pp), sizes {size_model}, "
                        f"{draws} draw{'s' if draws > 1 else ''} of the key sample")
    for col in ("trace", "keys", *(f"{p} mean/max" for p in res["summary"]), "cost vs 1 sim"):
        table.add_column(col, justify="left" if col == "trace" else "right")
    for t in res["traces"]:
        table.add_row(t["trace"], str(t["keys"]), *(f"{t['error_pp'][p]['mean']:.2f} / {t['error_pp'][p]['max']:.2f}"
                                                     for p in res["summary"]), f"{t['estimator_cost_vs_one_simulation']:.1f}x")
    out.print(table)
    out.print("summary: " + ", ".join(f"{p} mean {v['mean_error_pp']:.2f} pp, max {v['max_error_pp']:.2f} pp"
                                      for p, v in res["summary"].items()))
    if draws > 1:
        for p, v in res["summary"].items():
            out.print(f"{p} mean error of each draw (pp): " + " ".join(f"{x:.2f}" for x in v["mean_error_pp_by_draw"])
                      + f" (sd {v['draw_sd_pp']:.2f})")
    for p, v in res["summary"].items():
        out.print(f"{p} signed error by size, smallest first, mean over traces (pp; a bias stays where noise averages "
                  "out): " + " ".join(f"{x:+.1f}" for x in v["mean_signed_error_pp_by_size"]))



@bench_app.command("knobs")
def bench_knobs_cmd(
    traces: SharedTracesOpt = None,
    budgets: Annotated[str, typer.Option("--budgets", help="comma-separated caps: a share of the working set (5%) or bytes (64mb)")] = "5%,20%",
    limit: Annotated[int, typer.Option("--limit", min=1, help="requests read per trace")] = 300_000,
    size_model: Annotated[str, typer.Option(
        "--size-model", help="value sizes: fixed:BYTES | lognormal:MEDIAN,SIGMA | llm (per key), or native")] = "fixed:4096",
    predicted: Annotated[bool, typer.Option(
        "--predicted", help="also what mrc's curves predict for its knob variants at the cap (the error of knob differences)")] = False,
    json_out: JsonOpt = False,
) -> None:
    """What maxmemory-samples, lfu-log-factor and lfu-decay-time could add under a memory budget, in hindsight."""
    from cachetuner.errors import ConfigError
    from cachetuner.mrc.bench import choose_shared
    from cachetuner.mrc.bench_knobs import bench_knobs
    from cachetuner.sim.sizing import check_size

    caps = tuple(b.strip() for b in budgets.split(",") if b.strip())
    if not caps:
        raise ConfigError("--budgets: give at least one cap, e.g. 5%,20%")
    for cap in caps:  # before any trace is read
        check_size(cap, what="--budgets")
    res = bench_knobs(choose_shared(traces), budgets=caps, limit=limit, size_model=None if size_model == "native" else size_model,
                      on_trace=lambda t: console.print(f"[dim]knobs bench: {t}[/dim]"), predicted=predicted)
    if json_out:
        emit_json(res)
        return
    from rich.table import Table

    table = Table(title=f"eviction knobs under a budget, whole trace in hindsight (sizes {size_model})")
    for col in ("trace", "budget", "LRU default", "LFU default", "best setting", "hit ratio", "headroom pp"):
        table.add_column(col, justify="left" if col in ("trace", "best setting") else "right")
    for c in res["cells"]:
        table.add_row(c["trace"], c["budget"], f"{c['default_lru']:.4f}", f"{c['default_lfu']:.4f}", c["best"],
                      f"{c['best_hit_ratio']:.4f}", f"{c['headroom_pp']:+.2f}")
    wide_out().print(table)
    s = res["summary"]
    b = s["best_one_choice"]
    out.print(f"headroom mean {s['headroom_pp']['mean']:+.2f} pp, max {s['headroom_pp']['max']:+.2f} pp; "
              f"best single setting for every cell: {b['setting']} ({b['mean_pp']:+.2f} pp mean, worst {b['worst_pp']:+.2f} pp "
              "against the better default of each cell)")
    if predicted:
        p = s["predicted"]
        out.print(f"curves at 1 % sampling: knob-gap error {p['knob_gap_error_pp']['mean']:.2f} pp mean "
                  f"({p['knob_gap_error_pp']['max']:.2f} max), {p['knob_gaps_over_1pp_wrong_way']} of "
                  f"{p['knob_gaps_over_1pp']} predicted gaps >= 1 pp the wrong way; the curves' pick "
                  f"{p['pick_vs_better_default_pp']['mean']:+.2f} pp over the better default (worst "
                  f"{p['pick_vs_better_default_pp']['worst']:+.2f}), their pick between the defaults "
                  f"{p['defaults_pick_vs_better_default_pp']['mean']:+.2f}")


def summary_line(doc: str | None) -> str:
    """A docstring's first paragraph on one line, RST double backticks as single ones (the listing's
    summary: the first *line* alone cut most of them mid-sentence)."""
    first = (doc or "").strip().split("\n\n")[0]
    return " ".join(first.split()).replace("``", "`")


@app.command("controllers")
def controllers_cmd(json_out: JsonOpt = False) -> None:
    """List the registered controllers: name, whether it needs the future (hindsight), what it does."""
    from cachetuner.control import CONTROLLERS, controller_names

    rows: list[dict[str, Any]] = []
    for name in controller_names():
        cls = CONTROLLERS.get(name)
        doc = summary_line(cls.__doc__)
        rows.append({"name": name, "hindsight": bool(getattr(cls, "hindsight", False)), "summary": doc})
    if json_out:
        emit_json({"controllers": rows})
        return
    from rich.table import Table

    table = Table(title="controllers (cachetuner.control)")
    for col in ("name", "hindsight", "summary"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["name"], "yes" if r["hindsight"] else "", r["summary"])
    out.print(table)
