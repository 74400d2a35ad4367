"""``cachetuner trace info / convert / formats`` and ``cachetuner bench traces``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from cachetuner.cli.app import app, bench_app, console, emit_json, out
from cachetuner.cli.trace_options import (
    FormatOpt,
    JsonOpt,
    LimitOpt,
    ParamsOpt,
    RateOpt,
    RateProfileOpt,
    SeedOpt,
    SizeModelOpt,
    StartOpt,
    TraceOpt,
    load_trace_from_options,
)
from cachetuner.errors import TraceError
from cachetuner.traces import BUNDLED_TRACES, FORMATS, SIZE_MODELS, SYNTHETIC_WORKLOADS, list_formats
from cachetuner.traces.stats import repair_notes, summarize

trace_app = typer.Typer(help="Inspect traces and list the supported formats.", no_args_is_help=True)
app.add_typer(trace_app, name="trace")


@trace_app.command("info")
def info(
    trace: TraceOpt,
    format: FormatOpt = "auto",
    size_model: SizeModelOpt = None,
    rate: RateOpt = None,
    rate_profile: RateProfileOpt = None,
    seed: SeedOpt = 0,
    limit: LimitOpt = None,
    start: StartOpt = 0,
    params: ParamsOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Requests, unique keys, duration, top-1% share, ops, sizes and working set of a trace."""
    from cachetuner.resources import format_bytes, memory_available
    from cachetuner.sim.state import state_bytes_per_key

    tr = load_trace_from_options(trace, format, size_model, rate, seed, limit, params, rate_profile, start)
    s = summarize(tr)
    # what simulating it takes (the guards' figures): the trace's arrays, one simulated cache's state, and the
    # memory this process may still take (None where unknown)
    s["memory"] = {"trace_bytes": tr.nbytes, "simulator_state_bytes": tr.n_keys * state_bytes_per_key(),
                   "available_bytes": memory_available()}
    if json_out:
        emit_json(s)
        return
    mem = s["memory"]
    avail = "unknown" if mem["available_bytes"] is None else format_bytes(mem["available_bytes"])
    table = Table(title=f"trace {s['name']}", show_header=False)
    rows = [
        ("format", s["format"] if not s["stored"] else f"{s['format']} ({s['stored']})"),
        ("requests", f"{s['requests']:,}" + (f" (from request {s['start']:,} of the source)" if s["start"] else "")),
        ("unique keys", f"{s['unique_keys']:,}"),
        ("duration", f"{s['duration_s']:,.1f} s ({s['timing']})"),
        ("top-1% share", f"{s['top1pct_share']:.3f}"),
        ("read-only", str(s["read_only"])),
        ("ops get/set/delete", f"{s['ops']['get']:,} / {s['ops']['set']:,} / {s['ops']['delete']:,}"),
        ("sizes", f"min {s['sizes']['min']:,}  p50 {s['sizes']['p50']:,.0f}  mean {s['sizes']['mean']:,.0f}  "
                  f"p99 {s['sizes']['p99']:,.0f}  max {s['sizes']['max']:,}  ({s['size_model']})"),
        ("working set", format_bytes(s["working_set_bytes"])),
        ("requests with TTL", f"{s['ttl_share']:.1%}"),
        ("repairs", "; ".join(repair_notes(s["repairs"])) or "none"),
        ("memory to simulate", f"trace {format_bytes(mem['trace_bytes'])}, one simulated cache "
                               f"{format_bytes(mem['simulator_state_bytes'])} (evaluate holds ~2.5 of them); "
                               f"{avail} available"),
    ]  # fmt: skip
    for k, v in rows:
        table.add_row(k, str(v))
    out.print(table)


@trace_app.command("convert")
def convert(
    trace: TraceOpt,
    to: Annotated[str, typer.Option("--to", help="output format: lcs (libCacheSim v3) or csv")],
    out_path: Annotated[Path, typer.Option("--out", help="output file")],
    format: FormatOpt = "auto",
    size_model: SizeModelOpt = None,
    rate: RateOpt = None,
    seed: SeedOpt = 0,
    limit: LimitOpt = None,
    start: StartOpt = 0,
    params: ParamsOpt = None,
    force: Annotated[bool, typer.Option("--force", help="overwrite --out if it exists")] = False,
    json_out: JsonOpt = False,
) -> None:
    """Write a trace (any format, a synthetic workload, a bundled excerpt) as libCacheSim lcs or csv."""
    from cachetuner.outputs import check_output_file
    from cachetuner.traces.writers import get_writer, write_trace

    get_writer(to)  # an unknown format fails before a large trace is read
    check_output_file(out_path, "--out", force=force)
    tr = load_trace_from_options(trace, format, size_model, rate, seed, limit, params, start=start)
    res = write_trace(tr, out_path, to)
    if json_out:
        emit_json(res)
        return
    out.print(f"wrote {res['requests']:,} requests to {out_path} ({to})")
    if res.get("note"):
        out.print(f"note: {res['note']}")
    if res.get("read_back_params"):
        out.print(f"read it back with --format csv and a --params file holding {res['read_back_params']}")


@trace_app.command("formats")
def formats(json_out: JsonOpt = False) -> None:
    """Trace file formats, synthetic workloads, size models and bundled traces."""
    data: dict[str, Any] = {
        "formats": [
            {"name": n, "extensions": list(FORMATS[n].extensions), "description": FORMATS[n].description}
            for n in list_formats()
        ],
        "synthetic": [
            {
                "name": f"synthetic:{n}",
                "description": w.description,
                "params": list(w.params_model.model_fields),
            }
            for n, w in sorted(SYNTHETIC_WORKLOADS.items())
        ],
        "size_models": [f"{n}:{','.join(args)}" for n, (args, _, _) in SIZE_MODELS.items()],
        "bundled": [f"bundled:{n}" for n in BUNDLED_TRACES],
    }
    if json_out:
        emit_json(data)
        return
    table = Table(title="trace formats (--format)")
    table.add_column("name")
    table.add_column("extensions")
    table.add_column("description")
    for f in data["formats"]:
        table.add_row(f["name"], " ".join(f["extensions"]) or "-", f["description"])
    out.print(table)
    syn = Table(title="synthetic workloads (--trace synthetic:NAME, --params file.yaml)")
    syn.add_column("name")
    syn.add_column("params")
    syn.add_column("description")
    for w in data["synthetic"]:
        syn.add_row(w["name"], ", ".join(w["params"]), w["description"])
    out.print(syn)
    out.print(f"size models (--size-model): {', '.join(data['size_models'])}")
    out.print(f"bundled traces (--trace): {', '.join(data['bundled'])}")


#: (path under the shared traces folder, format) read by ``cachetuner bench traces``.
BENCH_FILES = (
    ("cloudphysics/cloudPhysicsIO.csv", "libcachesim-csv"),
    ("cloudphysics/cloudPhysicsIO.oracleGeneral.bin", "oracle"),
    ("cache2k/orm-night.trace.zst", "raw-be-i4"),
    ("cache2k/web07.trace", "raw-be-i4"),
    ("arc/P3.lis", "arc"),
    ("lirs/sprite.trace", "lirs"),
    ("adaptsize/request.trace", "adaptsize"),
    ("meta_kvcache/kv_traces_1.csv", "meta-kv"),
    ("twitter/twitter_sample.csv", "twitter"),
)


@bench_app.command("traces")
def bench_traces(
    shared: Annotated[
        Path, typer.Option("--shared", help="Folder of the public sample traces (shared/traces).")
    ] = Path(os.environ.get("CACHETUNER_SHARED_TRACES", "../shared/traces")),
    n_requests: Annotated[
        int, typer.Option("--n-requests", min=1, help="Requests per synthetic workload.")
    ] = 1_000_000,
) -> None:
    """Read every sample trace and generate every synthetic workload; print wall time and throughput as JSON."""
    import time

    from cachetuner.traces import read_trace

    files, synth = [], []
    for rel, fmt in BENCH_FILES:
        path = shared / rel
        if not path.is_file():
            raise TraceError(f"{path}: sample trace not found (pass --shared DIR)")
        t0 = time.perf_counter()
        tr = read_trace(path, fmt)
        dt = time.perf_counter() - t0
        files.append({"file": rel, "format": fmt, "requests": len(tr), "unique_keys": tr.n_keys,
                      "seconds": round(dt, 3), "requests_per_s": round(len(tr) / dt)})  # fmt: skip
        console.log(f"{rel}: {len(tr):,} requests in {dt:.2f} s")
    for name in sorted(SYNTHETIC_WORKLOADS):
        t0 = time.perf_counter()
        tr = read_trace(f"synthetic:{name}", params={"n_requests": n_requests})
        dt = time.perf_counter() - t0
        synth.append({"workload": name, "requests": len(tr), "unique_keys": tr.n_keys,
                      "seconds": round(dt, 3), "requests_per_s": round(len(tr) / dt)})  # fmt: skip
        console.log(f"synthetic:{name}: {len(tr):,} requests in {dt:.2f} s")
    emit_json({"bench": "traces", "files": files, "synthetic": synth})
