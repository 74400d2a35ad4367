"""Simulator throughput and miss counts against libCacheSim's LRU (``cachetuner bench sim``).

Three engines replay the same trace at the same byte size with libCacheSim's accounting (value
bytes only: per-key overhead 0, base 0, no client buffers, :meth:`SimParams.exact`): this simulator
with ``allkeys-lru`` (5 samples), this simulator with ``exact-lru``, and libCacheSim LRU. ``exact-lru``
misses must equal libCacheSim's. Timings exclude numba compilation (a warm-up run first) and trace
loading; the best of ``repeat`` interleaved runs is kept, so machine load hits all engines alike.

libCacheSim is optional: it is imported (through :mod:`cachetuner.sim.reference`) only when
:func:`bench_against_libcachesim` runs.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from cachetuner.config import RedisConfig
from cachetuner.sim.params import SimParams
from cachetuner.sim.simulator import TieredCacheSim
from cachetuner.traces.trace import Trace

_SHARED = Path(os.environ.get("CACHETUNER_SHARED_TRACES", Path(__file__).resolve().parents[3] / "shared" / "traces"))
#: The default benchmark trace (cache2k orm-night), when the shared trace folder has it.
DEFAULT_BENCH_TRACE = _SHARED / "cache2k" / "orm-night.trace.zst"
#: Requests replayed by default.
BENCH_REQUESTS = 1_000_000


def default_bench_trace() -> tuple[str, str]:
    """``(trace, format)``: cache2k orm-night when present, else ``synthetic:zipf``."""
    if DEFAULT_BENCH_TRACE.is_file():
        return str(DEFAULT_BENCH_TRACE), "raw-be-i4"
    return "synthetic:zipf", "auto"


def timed_run(trace: Trace, config: RedisConfig, params: SimParams) -> tuple[float, int]:
    """Seconds and misses of one whole-trace interval (run :func:`warm_up` first to exclude compilation)."""
    sim = TieredCacheSim(trace.n_keys, config, params, seed=0, key_bytes=trace.key_bytes)
    t0 = time.perf_counter()
    snap = sim.run(trace, 0, len(trace))
    return time.perf_counter() - t0, snap.misses


def warm_up(trace: Trace, params: SimParams) -> None:
    """Compile (or load from cache) the kernel on a tiny slice so that timings exclude numba."""
    tiny = trace.slice(0, min(len(trace), 2000))
    for policy in ("allkeys-lru", "exact-lru"):
        cfg = RedisConfig(maxmemory=max(1, int(tiny.sizes.sum()) // 4), maxmemory_policy=policy)  # type: ignore[arg-type]
        TieredCacheSim(trace.n_keys, cfg, params, key_bytes=trace.key_bytes).run(tiny)


def bench_against_libcachesim(trace: Trace, maxmemory: int, repeat: int = 5, params: SimParams | None = None) -> dict[str, Any]:
    """The ``bench sim --json`` report for ``trace`` at ``maxmemory`` bytes (see the module docstring)."""
    from cachetuner.sim.reference import libcachesim_lru  # libCacheSim is imported only here

    params = params or SimParams.exact()
    warm_up(trace, params)
    lru_cfg = RedisConfig(maxmemory=maxmemory, maxmemory_policy="allkeys-lru", maxmemory_samples=5)
    exact_cfg = RedisConfig(maxmemory=maxmemory, maxmemory_policy="exact-lru")
    ct_s, ct_miss, ex_s, ex_miss, ref_s = [], 0, [], 0, []
    ref = None
    for _ in range(repeat):  # interleaved so that machine load hits all engines alike
        s, ct_miss = timed_run(trace, lru_cfg, params)
        ct_s.append(s)
        s, ex_miss = timed_run(trace, exact_cfg, params)
        ex_s.append(s)
        ref = libcachesim_lru(trace, maxmemory)
        ref_s.append(ref.seconds)
    assert ref is not None
    n = len(trace)
    ct_rps, ex_rps, ref_rps = n / min(ct_s), n / min(ex_s), n / min(ref_s)
    return {
        "trace": trace.name,
        "requests": n,
        "unique_keys": int(np.unique(trace.keys).size),
        "maxmemory": maxmemory,
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


__all__ = [
    "BENCH_REQUESTS",
    "DEFAULT_BENCH_TRACE",
    "bench_against_libcachesim",
    "default_bench_trace",
    "timed_run",
    "warm_up",
]
