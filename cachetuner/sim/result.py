"""Whole-trace simulation: :func:`simulate` cuts a trace into fixed intervals and sums them up."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from cachetuner.config import RedisConfig
from cachetuner.errors import ConfigError
from cachetuner.metrics import LATENCY_BUCKETS_S, MetricsSnapshot
from cachetuner.sim.params import SimParams
from cachetuner.sim.simulator import TieredCacheSim
from cachetuner.traces.trace import Trace

if TYPE_CHECKING:
    from rich.console import Console

_SUMMED = (
    "requests", "gets", "hits", "misses", "byte_requests", "byte_hits", "sets", "evictions",
    "expirations", "rejected_writes", "commands", "reconnects", "l2_hits", "miss_cost",
)


@dataclass
class SimResult:
    """Per-interval snapshots and whole-run totals.

    ``totals`` holds the summed counters, ratios, peak memory, request-weighted latency mean,
    latency quantiles over the whole run (from the merged histogram, as Prometheus would compute
    them over the run), memory cost (maxmemory reserved for the trace's duration), wall-clock
    ``seconds`` and ``requests_per_second`` of the simulation itself.
    """

    intervals: list[MetricsSnapshot] = field(default_factory=list)
    totals: dict = field(default_factory=dict)
    config: RedisConfig = field(default_factory=RedisConfig)
    params: SimParams = field(default_factory=SimParams)


#: Most intervals one run may report. Each costs ~20 us of simulation and ~0.9 KB of snapshot (measured), so 2 million
#: is ~40 s and ~2 GB, while a two-week trace at 1 s per interval is 1.2 million; beyond that the window count comes
#: from a mistake (a tiny --interval, or a tiny --rate stretching the trace over years) and would hang or exhaust memory.
MAX_INTERVALS = 2_000_000


def interval_bounds(trace: Trace, interval_s: float) -> list[tuple[int, int, float]]:
    """``(start, stop, window_end_time)`` for consecutive windows of ``interval_s`` seconds (0: one window).

    Refuses, in one line, a nan / inf / negative ``interval_s``, a trace whose duration is not finite, and more
    than :data:`MAX_INTERVALS` windows, instead of hanging or allocating them.
    """
    if not math.isfinite(interval_s) or interval_s < 0:
        raise ConfigError(f"--interval={interval_s}: expected a positive, finite number of seconds")
    if len(trace) == 0:
        return []
    t0 = float(trace.timestamps[0])
    duration = float(trace.duration)
    if not math.isfinite(duration):
        raise ConfigError(f"trace {trace.name}: its duration is {duration} s, not a finite time; check --rate")
    if interval_s == 0 or duration <= 0:
        return [(0, len(trace), float(trace.timestamps[-1]))]
    _check_interval_count(trace, duration, interval_s)
    n_win = int(np.floor(duration / interval_s)) + 1
    edges = t0 + interval_s * np.arange(1, n_win + 1)
    stops = np.searchsorted(trace.timestamps, edges, side="left")
    stops[-1] = len(trace)
    starts = np.concatenate(([0], stops[:-1]))
    return [(int(a), int(b), float(e)) for a, b, e in zip(starts, stops, edges, strict=True)]


def _check_interval_count(trace: Trace, duration: float, interval_s: float) -> None:
    """Refuse more than :data:`MAX_INTERVALS` windows, naming --interval, the trace's duration and the smallest
    interval that would do (the count is a float first: 1e300 s / 1e-9 s must not reach ``int`` or ``arange``)."""
    n = duration / interval_s + 1
    if n <= MAX_INTERVALS:
        return
    smallest = duration / (MAX_INTERVALS - 1)
    if smallest > 1e-290:  # 3 significant digits, rounded up so that the advice works (no 10**-330 underflow)
        step = 10.0 ** (math.floor(math.log10(smallest)) - 2)
        smallest = math.ceil(smallest / step) * step
    raise ConfigError(
        f"--interval={interval_s:g} s cuts trace {trace.name} ({duration:,.6g} s long) into {n:,.4g} intervals, more "
        f"than the {MAX_INTERVALS:,} a run may report; use --interval {smallest:.6g} or more, or check --rate "
        f"(it sets the duration of a trace)"
    )


def simulate(
    trace: Trace,
    config: RedisConfig,
    params: SimParams | None = None,
    seed: int = 0,
    interval_s: float = 60.0,
    progress: bool = False,
    console: Console | None = None,
) -> SimResult:
    """Replay the whole ``trace`` under a fixed ``config``, one snapshot per ``interval_s`` window.

    ``progress`` shows a transient progress bar on ``console`` (default: a stderr console, so that
    stdout stays clean for results). The console is a parameter rather than the CLI's own so that
    the simulator does not depend on the CLI package.
    """
    params = params or SimParams()
    sim = TieredCacheSim(trace.n_keys, config, params, seed=seed, key_bytes=trace.key_bytes)
    windows = interval_bounds(trace, interval_s)
    snaps: list[MetricsSnapshot] = []
    hist = np.zeros(len(LATENCY_BUCKETS_S) + 1, dtype=np.int64)
    t_start = time.perf_counter()
    bar = None
    if progress:
        from rich.console import Console
        from rich.progress import Progress

        bar = Progress(console=console or Console(stderr=True), transient=True)
        bar.start()
        task = bar.add_task(f"simulating {trace.name}", total=len(trace))
    try:
        for start, stop, end in windows:
            snaps.append(sim.run(trace, start, stop, interval_s=interval_s, until=end))
            hist += sim.last_latency_histogram
            if bar is not None:
                bar.update(task, completed=stop)
    finally:
        if bar is not None:
            bar.stop()
    seconds = time.perf_counter() - t_start
    return SimResult(
        intervals=snaps,
        totals=summarize(snaps, hist, trace, config, params, seconds),
        config=config,
        params=params,
    )


def summarize(
    snaps: list[MetricsSnapshot],
    hist: np.ndarray,
    trace: Trace,
    config: RedisConfig,
    params: SimParams,
    seconds: float,
) -> dict:
    """Totals over a run of snapshots (see :class:`SimResult`)."""
    from cachetuner.metrics import histogram_quantile

    tot: dict = {name: sum(getattr(s, name) for s in snaps) for name in _SUMMED}
    gets = tot["gets"]
    tot["hit_ratio"] = tot["hits"] / gets if gets else 0.0
    tot["miss_ratio"] = tot["misses"] / gets if gets else 0.0
    tot["byte_hit_ratio"] = tot["byte_hits"] / tot["byte_requests"] if tot["byte_requests"] else 0.0
    tot["l2_hit_ratio"] = tot["l2_hits"] / tot["misses"] if tot["misses"] else 0.0
    tot["peak_used_memory"] = max((s.peak_used_memory for s in snaps), default=0)
    tot["used_memory"] = snaps[-1].used_memory if snaps else 0
    tot["keys"] = snaps[-1].keys if snaps else 0
    tot["l2_used_bytes"] = snaps[-1].l2_used_bytes if snaps else 0
    n_lat = int(hist.sum())
    for q, name in ((0.5, "p50_latency_ms"), (0.95, "p95_latency_ms"), (0.99, "p99_latency_ms")):
        tot[name] = histogram_quantile(q, hist) * 1000.0 if n_lat else 0.0
    tot["mean_latency_ms"] = (
        sum(s.latency_mean_ms * s.requests for s in snaps) / tot["requests"] if tot["requests"] else 0.0
    )
    hours = trace.duration / 3600.0
    gb = 1024**3
    tot["memory_cost"] = config.maxmemory / gb * hours * params.cost.memory_cost_per_gb_hour
    l2_cap = params.l2.capacity_bytes if params.l2.enabled else 0
    tot["l2_cost"] = l2_cap / gb * hours * params.cost.l2_cost_per_gb_hour
    tot["total_cost"] = tot["miss_cost"] + tot["memory_cost"] + tot["l2_cost"]
    tot["trace_seconds"] = trace.duration
    tot["intervals"] = len(snaps)
    tot["seconds"] = seconds
    tot["requests_per_second"] = tot["requests"] / seconds if seconds > 0 else 0.0
    return tot
