"""``cachetuner simulate`` and ``cachetuner bench sim``."""

from __future__ import annotations

import math
from typing import Annotated, TypeVar, get_args

import typer
from pydantic import BaseModel, ValidationError
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
from cachetuner.config import RedisConfig
from cachetuner.errors import ConfigError
from cachetuner.registry import Registry
from cachetuner.sim import SimParams, simulate
from cachetuner.sim.bench import BENCH_REQUESTS, bench_against_libcachesim, default_bench_trace
from cachetuner.sim.params import REDIS_INT_MAX, ClientParams, L2Params, MemoryParams
from cachetuner.sim.policies import POLICIES
from cachetuner.sim.sizing import parse_size
from cachetuner.traces import read_trace
from cachetuner.traces.trace import Trace

#: Rows of the human-readable table (and the keys every --json output has).
REPORT_KEYS = (
    "requests", "gets", "hits", "misses", "hit_ratio", "byte_hit_ratio", "evictions", "expirations",
    "rejected_writes", "reconnects", "l2_hits", "peak_used_memory", "p50_latency_ms", "p95_latency_ms",
    "p99_latency_ms", "mean_latency_ms", "miss_cost", "memory_cost", "total_cost", "seconds",
    "requests_per_second",
)  # fmt: skip

#: ``--eviction-order`` values: the names ``SimParams.eviction_order`` accepts.
EVICTION_ORDERS: Registry[str] = Registry("eviction order", "--eviction-order")
for _order in get_args(SimParams.model_fields["eviction_order"].annotation):
    EVICTION_ORDERS.add(_order, _order)


#: ``--accounting`` values: the full Redis 7 memory model, or value bytes only (libCacheSim's).
ACCOUNTING: Registry[str] = Registry("accounting", "--accounting")
ACCOUNTING.add("redis", "redis")
ACCOUNTING.add("exact", "exact")


M = TypeVar("M", bound=BaseModel)


def as_lookups(tr: Trace) -> Trace:
    """libCacheSim's request semantics for ``--accounting exact``: every request is a lookup (a miss
    fills the cache), no TTLs; so miss counts compare one to one with its LRU on any trace."""
    import dataclasses

    import numpy as np

    return dataclasses.replace(tr, ops=np.zeros(len(tr), dtype=np.uint8), ttls=np.zeros(len(tr)), read_only=True)


#: The option that sets each :class:`SimParams` field ``simulate`` fills in: an invalid value is named as typed.
PARAM_OPTIONS = {
    "per_key_overhead": "--per-key-overhead",
    "base_used_memory": "--base-memory",
    "n_clients": "--clients",
    "capacity_bytes": "--l2-capacity",
}

#: ``--sim-seed`` is taken modulo 2^64 by the simulator: a larger seed would silently repeat a smaller one's run.
MAX_SIM_SEED = 2**64 - 1


def _param_model(model: type[M], **fields: object) -> M:
    """``model(**fields)``, with a bad value reported in one line naming its option (``--clients=99999999999: Input
    should be less than or equal to 100000``), not as pydantic's multi-line ValidationError."""
    try:
        return model(**fields)
    except ValidationError as e:
        first = e.errors()[0]
        field = str(first["loc"][0]) if first["loc"] else model.__name__
        raise ConfigError(f"{PARAM_OPTIONS.get(field, field)}={first.get('input')!r}: {first['msg']}") from None


def check_run_options(lfu_decay_time: int, timeout: int, interval: float, sim_seed: int) -> None:
    """One-line errors for the numeric ``simulate`` options typer's ``min=`` does not cover: Redis's INT_MAX ceiling
    of ``lfu-decay-time`` and ``timeout`` (a larger int ends in an OverflowError in the simulator), a nan, inf or
    non-positive ``--interval`` (inf ran one window to t=inf; nan got typer's misleading ">= 0" message), and a
    ``--sim-seed`` past 64 bits."""
    for option, value in (("--lfu-decay-time", lfu_decay_time), ("--timeout", timeout)):
        if value > REDIS_INT_MAX:
            raise ConfigError(f"{option}={value}: more than Redis accepts ({REDIS_INT_MAX:,}, INT_MAX)")
    if not math.isfinite(interval) or interval <= 0:
        raise ConfigError(f"--interval={interval}: expected a positive, finite number of seconds")
    if sim_seed > MAX_SIM_SEED:
        raise ConfigError(f"--sim-seed={sim_seed}: at most 2^64-1 (the simulator's seed is 64 bits)")


def _build_params(
    per_key_overhead: int | None,
    base_memory: int | None,
    clients: int | None,
    l2_capacity: int,
    eviction_order: str = "make-room",
    accounting: str = "redis",
) -> SimParams:
    if ACCOUNTING.get(accounting) == "exact":
        clash = [o for o, v in (("--per-key-overhead", per_key_overhead), ("--base-memory", base_memory),
                                ("--clients", clients)) if v is not None]
        if clash:
            raise ConfigError(f"--accounting exact charges value bytes only; drop {', '.join(clash)}")
        exact = SimParams.exact()
        l2 = _param_model(L2Params, enabled=l2_capacity > 0, capacity_bytes=l2_capacity)
        return exact.model_copy(update={"eviction_order": EVICTION_ORDERS.get(eviction_order), "l2": l2})
    p = SimParams(eviction_order=EVICTION_ORDERS.get(eviction_order))  # type: ignore[arg-type]
    mem = p.memory.model_dump()
    if per_key_overhead is not None:
        mem["per_key_overhead"] = per_key_overhead
    if base_memory is not None:
        mem["base_used_memory"] = base_memory
    cl = p.clients.model_dump()
    if clients is not None:
        cl["n_clients"] = clients
    l2 = _param_model(L2Params, enabled=l2_capacity > 0, capacity_bytes=l2_capacity)
    memory, client = _param_model(MemoryParams, **mem), _param_model(ClientParams, **cl)
    return p.model_copy(update=dict(memory=memory, clients=client, l2=l2))


@app.command("simulate")
def simulate_cmd(
    trace: TraceOpt = "bundled:web07",
    format: FormatOpt = "auto",
    size_model: SizeModelOpt = None,
    rate: RateOpt = None,
    rate_profile: RateProfileOpt = None,
    seed: SeedOpt = 0,
    limit: LimitOpt = None,
    start: StartOpt = 0,
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
    accounting: Annotated[
        str, typer.Option("--accounting", help="redis (the Redis 7 memory model: per-key overhead, base memory, client "
                          "buffers) or exact (libCacheSim's: value bytes only, every request a lookup, no TTL; "
                          "cross-check miss counts)")
    ] = "redis",
    interval: Annotated[float, typer.Option("--interval", help="seconds per reported interval (> 0)")] = 60.0,
    sim_seed: Annotated[int, typer.Option("--sim-seed", min=0, help="seed of the simulator's random stream")] = 0,
    json_out: JsonOpt = False,
) -> None:
    """Replay a trace through the Redis 7 simulator under one configuration and report the totals."""
    POLICIES.get(policy, field="--policy")
    check_run_options(lfu_decay_time, timeout, interval, sim_seed)
    tr = load_trace_from_options(trace, format, size_model, rate, seed, limit, params, rate_profile, start)
    if ACCOUNTING.get(accounting) == "exact":
        tr = as_lookups(tr)
    l2_bytes = parse_size(l2_capacity, tr, what="--l2-capacity")
    p = _build_params(per_key_overhead, base_memory, clients, l2_bytes, eviction_order, accounting)
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
    totals = {"trace": tr.name, "policy": policy, "maxmemory": mm, "accounting": accounting, **res.totals}
    if json_out:
        emit_json({**totals, "config": cfg.model_dump(), "params": p.model_dump()})
        return
    table = Table(title=f"simulate {tr.name}  {policy}  maxmemory={mm:,} B", show_header=False)
    for k in REPORT_KEYS:
        v = totals[k]
        table.add_row(k, f"{v:,.4f}" if isinstance(v, float) else f"{v:,}")
    out.print(table)


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
        trace, default_fmt = default_bench_trace()
        format = format or default_fmt
    if trace.startswith("synthetic:"):
        n = limit or BENCH_REQUESTS
        tr = read_trace(trace, size_model=size_model, rate=rate, seed=seed, limit=n, params={"n_requests": n})
    else:
        tr = load_trace_from_options(trace, format or "auto", size_model, rate, seed, limit or BENCH_REQUESTS, None)
    params = SimParams.exact()
    mm = parse_size(maxmemory, tr, params, what="--maxmemory")
    console.print(f"bench sim: {tr.name}, {len(tr):,} requests, maxmemory {mm:,} B (compiling / warming up)")
    result = bench_against_libcachesim(tr, mm, repeat, params)
    if json_out:
        emit_json(result)
        return
    table = Table(title="bench sim", show_header=False)
    for k, v in result.items():
        table.add_row(k, f"{v:,.4f}" if isinstance(v, float) else f"{v:,}" if isinstance(v, int) and not isinstance(v, bool) else str(v))
    out.print(table)
