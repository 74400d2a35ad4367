"""libCacheSim LRU on a :class:`Trace`: the reference the simulator's ``exact-lru`` must equal.

libCacheSim (``consider_obj_metadata=False``, its default) charges each object exactly its
``obj_size`` and, on a miss, evicts from the LRU tail until ``occupied + size <= cache_size`` and
skips objects larger than the cache. ``exact-lru`` with ``SimParams.exact()`` (value bytes only, no
base memory, no client buffers) does the same, so miss counts must agree exactly.
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass

import numpy as np

from cachetuner.errors import ConfigError
from cachetuner.traces.trace import Trace

_ORACLE = np.dtype([("t", "<u4"), ("id", "<u8"), ("sz", "<u4"), ("nxt", "<i8")])


@dataclass
class ReferenceResult:
    requests: int
    misses: int
    miss_ratio: float
    byte_miss_ratio: float
    seconds: float  # process_trace only (file writing excluded)

    @property
    def requests_per_second(self) -> float:
        return self.requests / self.seconds if self.seconds > 0 else 0.0


def _import_libcachesim():  # type: ignore[no-untyped-def]
    try:
        import libcachesim
    except ImportError as e:  # optional dev dependency
        raise ConfigError("libCacheSim is not installed: `.venv/bin/pip install libcachesim` (dev extra)") from e
    return libcachesim


def write_oracle_general(trace: Trace, path: str) -> None:
    """The trace as libCacheSim oracleGeneral records (ids shifted by 1: libCacheSim treats 0 as special)."""
    rec = np.zeros(len(trace), dtype=_ORACLE)
    t = trace.timestamps - (trace.timestamps[0] if len(trace) else 0.0)
    rec["t"] = np.floor(t).astype(np.uint32)
    rec["id"] = trace.keys.astype(np.uint64) + 1
    rec["sz"] = trace.sizes.astype(np.uint32)
    rec["nxt"] = -1
    rec.tofile(path)


def libcachesim_lru(trace: Trace, cache_size: int) -> ReferenceResult:
    """Replay every request of ``trace`` as a read through libCacheSim's LRU of ``cache_size`` bytes."""
    lcs = _import_libcachesim()
    fd, path = tempfile.mkstemp(suffix=".oracleGeneral.bin")
    os.close(fd)
    try:
        write_oracle_general(trace, path)
        reader = lcs.TraceReader(trace=path, trace_type=lcs.TraceType.ORACLE_GENERAL_TRACE)
        cache = lcs.LRU(cache_size=int(cache_size))
        t0 = time.perf_counter()
        miss_ratio, byte_miss_ratio = cache.process_trace(reader)
        seconds = time.perf_counter() - t0
    finally:
        os.unlink(path)
    n = len(trace)
    return ReferenceResult(n, int(round(miss_ratio * n)), float(miss_ratio), float(byte_miss_ratio), seconds)
