"""Summary figures of a trace (what ``cachetuner trace info`` prints)."""

from __future__ import annotations

import math

import numpy as np

from cachetuner.traces.sizes import DEFAULT_SIZE_MODEL
from cachetuner.traces.trace import Op, Trace


def top_share(trace: Trace, fraction: float = 0.01) -> float:
    """Share of requests that go to the hottest ``fraction`` of keys (at least one key)."""
    counts = np.bincount(trace.keys, minlength=trace.n_keys)
    k = max(1, math.ceil(fraction * trace.n_keys))
    top = np.partition(counts, len(counts) - k)[len(counts) - k :]
    return float(top.sum() / len(trace))


def repairs(trace: Trace) -> dict:
    """What reading changed in the trace's own data (counts from its meta; 0 where nothing was): sizes of 0 or less
    filled from the key's other requests (and keys with no size at all, drawn from the default model), timestamps
    that stepped back clamped to the time before them, and the largest such step (seconds)."""
    meta = trace.meta
    return {
        "sizes_filled": int(meta.get("sizes_filled", 0)),
        "sizes_defaulted_keys": int(meta.get("sizes_defaulted_keys", 0)),
        "timestamps_clamped": int(meta.get("timestamps_clamped", 0)),
        "timestamps_max_step_back_s": float(meta.get("timestamps_max_step_back_s", 0.0)),
    }


def _seconds(x: float) -> str:
    return f"{x:,.0f} s" if x >= 10 else f"{x:.3g} s"


def repair_notes(fixed: dict) -> list[str]:
    """:func:`repairs` in words, for ``trace info``'s repairs line (empty where nothing was repaired)."""
    notes = []
    if fixed["timestamps_clamped"]:
        notes.append(f"{fixed['timestamps_clamped']:,} timestamps clamped where time stepped back (by up to "
                     f"{_seconds(fixed['timestamps_max_step_back_s'])})")
    if fixed["sizes_filled"]:
        size = f"{fixed['sizes_filled']:,} sizes <= 0 replaced by the key's known size"
        if fixed["sizes_defaulted_keys"]:
            size += f" ({fixed['sizes_defaulted_keys']:,} keys had none: {DEFAULT_SIZE_MODEL})"
        notes.append(size)
    return notes


def summarize(trace: Trace) -> dict:
    """Counts, timing, popularity skew, ops, sizes and working set of ``trace`` (JSON-ready)."""
    n = len(trace)
    ops = np.bincount(trace.ops, minlength=3)
    sizes = trace.sizes
    pct = np.percentile(sizes, [50, 99]) if n else [0, 0]
    duration = trace.duration
    return {
        "name": trace.name,
        "format": trace.meta.get("format"),
        "compression": trace.meta.get("compression"),
        "archive": trace.meta.get("archive"),
        "member": trace.meta.get("member"),
        "stored": trace.meta.get("stored"),
        "start": int(trace.meta.get("start", 0)),  # the window's first request in the source (--start)
        "requests": n,
        "unique_keys": trace.n_keys,
        "duration_s": duration,
        "mean_rate_per_s": n / duration if duration > 0 else None,
        "top1pct_share": top_share(trace, 0.01),
        "read_only": trace.read_only,
        "ops": {"get": int(ops[Op.GET]), "set": int(ops[Op.SET]), "delete": int(ops[Op.DELETE])},
        "sizes": {
            "min": int(sizes.min()),
            "p50": float(pct[0]),
            "mean": float(sizes.mean()),
            "p99": float(pct[1]),
            "max": int(sizes.max()),
        },
        "working_set_bytes": trace.working_set_bytes(),
        "key_bytes_total": int(trace.key_bytes.sum()),
        "ttl_share": float(np.count_nonzero(trace.ttls > 0) / n),
        "size_model": trace.meta.get("size_model"),
        "timing": trace.meta.get("timing"),
        "repairs": repairs(trace),
    }
