"""``cachetuner simulate`` and ``cachetuner bench sim``."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Annotated

import numpy as np
import typer
from rich.table import Table

from cachetuner.cli.app import app, bench_app, console, emit_json, out
from cachetuner.cli.trace_options import (
    FormatOpt,
    LimitOpt,
    ParamsOpt,
    RateOpt,
    SeedOpt,
    SizeModelOpt,
    TraceOpt,
    load_trace_from_options,
)
from cachetuner.config import RedisConfig
from cachetuner.errors import ConfigError
from cachetuner.sim import SimParams, TieredCacheSim, simulate
from cachetuner.sim.params import ClientParams, L2Params, MemoryParams
from cachetuner.sim.policies import POLICIES, get_policy
from cachetuner.sim.reference import libcachesim_lru
from cachetuner.sim.sizing import parse_size
from cachetuner.traces import read_trace
from cachetuner.traces.trace import Trace

JsonOpt = Annotated[bool, typer.Option("--json", help="Print exactly one JSON object on stdout.")]

#: Rows of the human-readable table (and the keys every --json output has).
REPORT_KEYS = (
    "requests", "gets", "hits", "misses", "hit_ratio", "byte_hit_ratio", "evictions", "expirations",
    "rejected_writes", "reconnects", "l2_hits", "peak_used_memory", "p50_latency_ms", "p95_latency_ms",
    "p99_latency_ms", "mean_latency_ms", "miss_cost", "memory_cost", "total_cost", "seconds",
    "requests_per_second",
)  # fmt: skip

_SHARED = Path(os.environ.get("CACHETUNER_SHARED_TRACES", Path(__file__).resolve().parents[3] / "shared" / "traces"))
DEFAULT_BENCH_TRACE = _SHARED / "cache2k" / "orm-night.trace.zst"
BENCH_REQUESTS = 1_000_000


def _build_params(
    per_key_overhead: int | None,
    base_memory: int | None,
    clients: int | None,
    l2_capacity: int,
    eviction_order: str = "make-room",
) -> SimParams:
    if eviction_order not in ("make-room", "redis"):
        raise ConfigError(f"--eviction-order {eviction_order!r}: valid: make-room, redis")
    p = SimParams(eviction_order=eviction_order)  # type: ignore[arg-type]
    mem = p.memory.model_dump()
    if per_key_overhead is not None:
        mem["per_key_overhead"] = per_key_overhead
    if base_memory is not None:
        mem["base_used_memory"] = base_memory
    cl = p.clients.model_dump()
    if clients is not None:
        cl["n_clients"] = clients
    l2 = L2Params(enabled=l2_capacity > 0, capacity_bytes=l2_capacity)
    return p.model_copy(update=dict(memory=MemoryParams(**mem), clients=ClientParams(**cl), l2=l2))


@app.command("simulate")
def simulate_cmd(
    trace: TraceOpt = "bundled:web07",
    format: FormatOpt = "auto",
    size_model: SizeModelOpt = None,
    rate: RateOpt = None,
    seed: SeedOpt = 0,
    limit: LimitOpt = None,
    params: ParamsOpt = None,
    policy: Annotated[str, typer.Option("--policy", help=f"maxmemory-policy: {', '.join(POLICIES)}")] = "allkeys-lru",
    maxmemory: Annotated[
        str, typer.Option("--maxmemory", help="64mb, 1.5GiB, 500000 (bytes) or 20% of the trace's working set")
    ] = "20%",
    samples: Annotated[int, typer.Option("--samples", min=1, max=64, help="maxmemory-samples")] = 5,
    lfu_log_factor: Annotated[int, typer.Option("--lfu-log-factor", min=0, max=255)] = 10,
    lfu_decay_time: Annotated[int, typer.Option("--lfu-decay-time", min=0, help="minutes")] = 1,
    timeout: Annotated[int, typer.Option("--timeout", min=0, help="idle client timeout, seconds (0 = never)")] = 0,
    per_key_overhead: Annotated[
        int | None, typer.Option("--per-key-overhead", min=0, help="flat bytes per key instead of the Redis 7 formula")
    ] = None,
    base_memory: Annotated[int | None, typer.Option("--base-memory", min=0, help="used_memory of an empty Redis")] = None,
    clients: Annotated[int | None, typer.Option("--clients", min=1, help="number of application clients")] = None,
    l2_capacity: Annotated[str, typer.Option("--l2-capacity", help="second-tier size (0 = no L2)")] = "0",
    eviction_order: Annotated[
        str, typer.Option("--eviction-order", help="make-room (evict until each write fits) or redis (evict before each command)")
    ] = "make-room",
    interval: Annotated[float, typer.Option("--interval", min=0, help="seconds per reported interval")] = 60.0,
    sim_seed: Annotated[int, typer.Option("--sim-seed", help="seed of the simulator's random stream")] = 0,
    json_out: JsonOpt = False,
) -> None:
    """Replay a trace through the Redis 7 simulator under one configuration and report the totals."""
    get_policy(policy)
    tr = load_trace_from_options(trace, format, size_model, rate, seed, limit, params)
    l2_bytes = parse_size(l2_capacity, tr, what="--l2-capacity")
    p = _build_params(per_key_overhead, base_memory, clients, l2_bytes, eviction_order)
    mm = parse_size(maxmemory, tr, p, what="--maxmemory")
    try:
        cfg = RedisConfig(
            maxmemory=mm,
            maxmemory_policy=policy,  # type: ignore[arg-type]
            maxmemory_samples=samples,
            lfu_log_factor=lfu_log_factor,
            lfu_decay_time=lfu_decay_time,
            timeout=timeout,
        )
    except ValueError as e:
        raise ConfigError(f"invalid Redis config: {e}".splitlines()[0]) from None
    res = simulate(tr, cfg, p, seed=sim_seed, interval_s=interval, progress=not json_out)
    totals = {"trace": tr.name, "policy": policy, "maxmemory": mm, **res.totals}
    if json_out:
        emit_json({**totals, "config": cfg.model_dump(), "params": p.model_dump()})
        return
    table = Table(title=f"simulate {tr.name}  {policy}  maxmemory={mm:,} B", show_header=False)
    for k in REPORT_KEYS:
        v = totals[k]
        table.add_row(k, f"{v:,.4f}" if isinstance(v, float) else f"{v:,}")
    out.print(table)


def _default_bench_trace() -> tuple[str, str]:
    if DEFAULT_BENCH_TRACE.is_file():
        return str(DEFAULT_BENCH_TRACE), "raw-be-i4"
    return "synthetic:zipf", "auto"


def _timed_run(trace: Trace, config: RedisConfig, params: SimParams) -> tuple[float, int]:
    """Seconds and misses of one whole-trace interval (compile excluded by a warm-up first)."""
    sim = TieredCacheSim(trace.n_keys, config, params, seed=0, key_bytes=trace.key_bytes)
    t0 = time.perf_counter()
    snap = sim.run(trace, 0, len(trace))
    return time.perf_counter() - t0, snap.misses


def _warm_up(trace: Trace, params: SimParams) -> None:
    """Compile (or load from cache) the kernel on a tiny slice so that timings exclude numba."""
    tiny = trace.slice(0, min(len(trace), 2000))
    for policy in ("allkeys-lru", "exact-lru"):
        cfg = RedisConfig(maxmemory=max(1, int(tiny.sizes.sum()) // 4), maxmemory_policy=policy)  # type: ignore[arg-type]
        TieredCacheSim(trace.n_keys, cfg, params, key_bytes=trace.key_bytes).run(tiny)


@bench_app.command("sim")
def bench_sim(
    trace: Annotated[str | None, typer.Option("--trace", help="default: 1M requests of cache2k orm-night")] = None,
    format: Annotated[str | None, typer.Option("--format", help="trace format (default: auto)")] = None,
    size_model: SizeModelOpt = None,
    rate: RateOpt = None,
    seed: SeedOpt = 0,
    limit: Annotated[int | None, typer.Option("--limit", min=1, help=f"requests (default {BENCH_REQUESTS:,})")] = None,
    maxmemory: Annotated[str, typer.Option("--maxmemory", help="bytes, units or % of working set")] = "10%",
    repeat: Annotated[int, typer.Option("--repeat", min=1, help="timed runs per engine; the best is kept")] = 5,
    json_out: JsonOpt = False,
) -> None:
    """Throughput and miss counts: this simulator (allkeys-lru samples 5, exact-lru) vs libCacheSim LRU.

    All three replay the same trace at the same byte size with libCacheSim's accounting (value
    bytes only: per-key overhead 0, base 0, no client buffers), so exact-lru misses must equal
    libCacheSim LRU misses. Timings exclude numba compilation and trace loading; best of ``repeat``.
    """
    if trace is None:
        trace, default_fmt = _default_bench_trace()
        format = format or default_fmt
    if trace.startswith("synthetic:"):
        n = limit or BENCH_REQUESTS
        tr = read_trace(trace, size_model=size_model, rate=rate, seed=seed, limit=n, params={"n_requests": n})
    else:
        tr = load_trace_from_options(trace, format or "auto", size_model, rate, seed, limit or BENCH_REQUESTS, None)
    params = SimParams.exact()
    mm = parse_size(maxmemory, tr, params, what="--maxmemory")
    console.print(f"bench sim: {tr.name}, {len(tr):,} requests, maxmemory {mm:,} B (compiling / warming up)")
    _warm_up(tr, params)
    lru_cfg = RedisConfig(maxmemory=mm, maxmemory_policy="allkeys-lru", maxmemory_samples=5)
    exact_cfg = RedisConfig(maxmemory=mm, maxmemory_policy="exact-lru")
    ct_s, ct_miss, ex_s, ex_miss, ref_s = [], 0, [], 0, []
    ref = None
    for _ in range(repeat):  # interleaved so that machine load hits all engines alike
        s, ct_miss = _timed_run(tr, lru_cfg, params)
        ct_s.append(s)
        s, ex_miss = _timed_run(tr, exact_cfg, params)
        ex_s.append(s)
        ref = libcachesim_lru(tr, mm)
        ref_s.append(ref.seconds)
    assert ref is not None
    n = len(tr)
    ct_rps, ex_rps, ref_rps = n / min(ct_s), n / min(ex_s), n / min(ref_s)
    result = {
        "trace": tr.name,
        "requests": n,
        "unique_keys": int(np.unique(tr.keys).size),
        "maxmemory": mm,
        "cachetuner_rps": ct_rps,
        "cachetuner_exact_lru_rps": ex_rps,
        "libcachesim_lru_rps": ref_rps,
        "ratio": ct_rps / ref_rps,
        "exact_lru_ratio": ex_rps / ref_rps,
        "cachetuner_miss_ratio": ct_miss / n,
        "exact_lru_miss_ratio": ex_miss / n,
        "libcachesim_lru_miss_ratio": ref.miss_ratio,
        "cachetuner_misses": ct_miss,
        "exact_lru_misses": ex_miss,
        "libcachesim_lru_misses": ref.misses,
        "exact_matches_libcachesim": ex_miss == ref.misses,
        "repeat": repeat,
    }
    if json_out:
        emit_json(result)
        return
    table = Table(title="bench sim", show_header=False)
    for k, v in result.items():
        table.add_row(k, f"{v:,.4f}" if isinstance(v, float) else f"{v:,}" if isinstance(v, int) and not isinstance(v, bool) else str(v))
    out.print(table)
