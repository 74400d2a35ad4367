"""Turn parsed columns into a :class:`Trace`: dense key ids, key-name lengths, sizes, timing.

Every reader and every synthetic workload ends here, so the conventions (first-appearance key
numbering, per-key sizes, the ``ct:`` key prefix, the default rate and size) live in one place.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from cachetuner.errors import TraceError
from cachetuner.traces.rate_profile import RateProfile
from cachetuner.traces.sizes import DEFAULT_SIZE_MODEL, SizeModel, parse_size_model
from cachetuner.traces.streams import ProgressFn
from cachetuner.traces.trace import Op, Trace

#: Numeric key ids are named ``ct:{dense id}`` by the replayer; key_bytes charges this name length.
KEY_PREFIX = "ct:"
#: Requests per second given to traces without timestamps when no ``--rate`` is given.
DEFAULT_RATE = 1000.0
#: The largest size one request may carry (1 TiB): far above any cached object (Redis values stop at 512 MiB,
#: CDN objects at a few GiB), so a larger number is a corrupt field; it also keeps byte totals over billions of
#: requests clear of int64 overflow.
MAX_OBJECT_BYTES = 1 << 40
#: The longest key name (Redis's limit; key_bytes are held as int32).
MAX_KEY_BYTES = 512 * 1024 * 1024


@dataclass(frozen=True)
class ReadOptions:
    """What the caller asked for, shared by every reader."""

    size_model: SizeModel | None = None
    rate: float | None = None
    rate_profile: RateProfile | None = None  # the load shape of the re-timing (cachetuner.traces.rate_profile)
    seed: int = 0
    limit: int | None = None
    #: drop this many requests from the start before ``limit`` counts (a window of a long trace, read as its own
    #: trace: keys, sizes and the working set are the window's)
    start: int = 0
    params: dict = field(default_factory=dict)
    progress: ProgressFn | None = None

    @property
    def stop(self) -> int | None:
        """How many requests a reader needs from the start of the source: the window's end (None: all)."""
        return None if self.limit is None else self.start + self.limit


@dataclass
class Columns:
    """Per-request columns as read; ``None`` means the source does not have them.

    ``keys`` are raw ids (any integer dtype) unless ``keys_dense``; ``sizes`` <= 0 mark unknown
    sizes (e.g. a GET miss logged with size 0); ``key_bytes`` is per request (the key name length
    the source recorded) and is reduced to one value per key.
    """

    keys: np.ndarray
    timestamps: np.ndarray | None = None
    sizes: np.ndarray | None = None
    ops: np.ndarray | None = None
    ttls: np.ndarray | None = None
    key_bytes: np.ndarray | None = None
    keys_dense: bool = False


def dense_ids(raw: np.ndarray) -> tuple[np.ndarray, int]:
    """Map raw ids to ``0..U-1`` in order of first appearance; returns (int64 ids, U)."""
    n = len(raw)
    if n == 0:
        return np.zeros(0, dtype=np.int64), 0
    lo, hi = int(raw.min()), int(raw.max())
    if hi - lo < 4 * n + 1024:
        # Small id range: first-occurrence table in O(n + range), no sort of n elements.
        shifted = (raw - raw.dtype.type(lo)).astype(np.int64, copy=False)
        first = np.full(hi - lo + 1, n, dtype=np.int64)
        first[shifted[::-1]] = np.arange(n - 1, -1, -1, dtype=np.int64)
        present = np.flatnonzero(first < n)
        order = present[np.argsort(first[present], kind="stable")]
        rank = np.empty(hi - lo + 1, dtype=np.int64)
        rank[order] = np.arange(len(order), dtype=np.int64)
        return rank[shifted], len(order)
    try:  # pandas (an mlflow dependency) hashes in O(n): ~10x faster than numpy's sort-based unique
        import pandas as pd

        codes, uniques = pd.factorize(raw, sort=False)
        return codes.astype(np.int64, copy=False), len(uniques)
    except ImportError:
        pass
    uniq, first_idx, inverse = np.unique(raw, return_index=True, return_inverse=True)
    rank = np.empty(len(uniq), dtype=np.int64)
    rank[np.argsort(first_idx, kind="stable")] = np.arange(len(uniq), dtype=np.int64)
    return rank[inverse.reshape(-1)], len(uniq)


def numeric_key_bytes(n_keys: int) -> np.ndarray:
    """``len(KEY_PREFIX) + len(str(id))`` for ids ``0..n_keys-1`` (the replayer's key names)."""
    ids = np.arange(n_keys, dtype=np.int64)
    digits = np.ones(n_keys, dtype=np.int32)
    power = 10
    while power <= max(n_keys - 1, 0):
        digits += ids >= power
        power *= 10
    return digits + np.int32(len(KEY_PREFIX))


def key_name(key_id: int) -> str:
    """The Redis key name for a dense numeric key id (what :func:`numeric_key_bytes` measures)."""
    return f"{KEY_PREFIX}{key_id}"


def per_key_max(keys: np.ndarray, values: np.ndarray, n_keys: int) -> np.ndarray:
    """Largest value seen per key (0 where none is positive)."""
    out = np.zeros(n_keys, dtype=np.int64)
    order = np.lexsort((values, keys))  # last of each key's run is its max
    k = keys[order]
    last = np.r_[k[1:] != k[:-1], True]
    out[k[last]] = np.maximum(values[order][last], 0)
    return out


def check_rate(what: str, rate: float, n_requests: int = 1) -> None:
    """A request rate must be a finite number > 0 that spaces ``n_requests`` over a finite time: ``inf`` or
    ``1e400`` would put every request at t=0 (a trace of zero duration), ``nan`` anywhere."""
    if not (math.isfinite(rate) and rate > 0):
        raise TraceError(f"{what} must be a finite number > 0 requests/s, got {rate}")
    if not math.isfinite(max(n_requests - 1, 0) / rate):
        raise TraceError(f"{what} {rate} requests/s is too low: {n_requests:,} requests would span more than "
                         "any clock can hold")


def _timestamps(name: str, cols: Columns, n: int, opts: ReadOptions, meta: dict) -> np.ndarray:
    profile = opts.rate_profile
    if profile is not None and cols.timestamps is not None and opts.rate is None:
        raise TraceError(f"{name}: rate profile {profile.spec} re-times the trace, which has its own timestamps: give "
                         "a mean rate too (--rate / rate:), or drop the profile to replay its own clock")
    if opts.rate is not None or cols.timestamps is None:
        rate = opts.rate if opts.rate is not None else DEFAULT_RATE
        check_rate(f"{name}: rate", rate, n)
        meta["rate"] = rate
        if profile is not None:
            meta["rate_profile"] = profile.spec
            meta["timing"] = f"{profile.spec} around the mean rate"
            return profile.timestamps(n, rate)
        meta["timing"] = "uniform at rate" if cols.timestamps is None else "re-timed uniformly at --rate"
        return np.arange(n, dtype=np.float64) / rate
    ts = np.asarray(cols.timestamps, dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(ts))
    if len(bad):  # text readers name the line; this is the net under every other source
        raise TraceError(f"{name}: request {int(bad[0]) + 1:,}: timestamp must be a finite number, got {ts[bad[0]]}")
    steps = ts[1:] - ts[:-1]
    back = int(np.count_nonzero(steps < 0))
    if back:
        # Logged timestamps can step back slightly (clock skew between hosts); keep order, clamp time. Counted, with
        # the largest step, so that `trace info` shows a repair that is no skew (a jump back by days).
        ts = np.maximum.accumulate(ts)
        meta["timestamps_clamped"] = back
        meta["timestamps_max_step_back_s"] = float(-steps.min())
    meta["timing"] = "from trace"
    return ts


def _sizes(
    name: str, cols: Columns, keys: np.ndarray, n_keys: int, opts: ReadOptions, meta: dict
) -> np.ndarray:
    if opts.size_model is not None or cols.sizes is None:
        model = opts.size_model or parse_size_model(DEFAULT_SIZE_MODEL)
        meta["size_model"] = model.spec if cols.sizes is None else f"{model.spec} (overrides trace sizes)"
        return model.sample_seeded(n_keys, opts.seed)[keys]
    sizes = np.asarray(cols.sizes, dtype=np.int64)
    huge = np.flatnonzero(sizes > MAX_OBJECT_BYTES)
    if len(huge):  # text readers name the line; this is the net under binary ones (lcs v3+ sizes are int64)
        raise TraceError(f"{name}: request {int(huge[0]) + 1:,}: size {int(sizes[huge[0]]):,} bytes is more than "
                         f"{MAX_OBJECT_BYTES:,} (1 TiB): not an object size")
    missing = sizes <= 0
    if missing.any():
        # Unknown size (logged as 0, e.g. a GET miss): use the key's largest known size, else the default model.
        known = per_key_max(keys, sizes, n_keys)
        unknown_keys = known <= 0
        if unknown_keys.any():
            model = parse_size_model(DEFAULT_SIZE_MODEL)
            known[unknown_keys] = model.sample_seeded(n_keys, opts.seed)[unknown_keys]
        sizes = np.where(missing, known[keys], sizes)
        meta["sizes_filled"] = int(missing.sum())
        if unknown_keys.any():  # keys never logged with a size: drawn from the default model
            meta["sizes_defaulted_keys"] = int(unknown_keys.sum())
    meta["size_model"] = "from trace"
    return sizes


def build_trace(name: str, cols: Columns, opts: ReadOptions, meta: dict | None = None) -> Trace:
    """Assemble a :class:`Trace` from reader columns, applying start, limit, rate and size model."""
    meta = dict(meta or {})
    total = len(cols.keys)
    if total == 0:
        raise TraceError(f"{name}: no requests (empty trace)")
    stop = total if opts.stop is None else min(total, opts.stop)
    if opts.start >= stop:
        raise TraceError(f"{name}: start {opts.start:,} is past the trace's last request ({total:,} requests)")
    n = stop - opts.start
    cut = slice(opts.start, stop)
    if opts.start:
        meta["start"] = opts.start
    raw = cols.keys[cut]
    if cols.keys_dense and not opts.start:  # a window's ids are renumbered: its key space is its own
        keys = np.asarray(raw, dtype=np.int64)
        n_keys = int(keys.max()) + 1
    else:
        keys, n_keys = dense_ids(raw)
    for attr in ("timestamps", "sizes", "ops", "ttls", "key_bytes"):
        col = getattr(cols, attr)
        if col is not None:
            setattr(cols, attr, col[cut])
    meta["seed"] = opts.seed
    timestamps = _timestamps(name, cols, n, opts, meta)
    sizes = _sizes(name, cols, keys, n_keys, opts, meta)
    ops = np.zeros(n, dtype=np.uint8) if cols.ops is None else np.asarray(cols.ops, dtype=np.uint8)
    ttls = np.zeros(n, dtype=np.float64) if cols.ttls is None else np.asarray(cols.ttls, dtype=np.float64)
    if cols.key_bytes is None:
        key_bytes = numeric_key_bytes(n_keys)
        meta["key_names"] = f"{KEY_PREFIX}{{id}}"
    else:
        key_bytes = np.maximum(
            per_key_max(keys, np.asarray(cols.key_bytes, dtype=np.int64), n_keys), 1
        ).astype(np.int32)
        meta["key_names"] = "key_size from trace"
    read_only = bool(np.all(ops == Op.GET))
    return Trace(
        name=name,
        timestamps=timestamps,
        keys=keys,
        sizes=sizes,
        ops=ops,
        ttls=ttls,
        n_keys=n_keys,
        key_bytes=key_bytes,
        read_only=read_only,
        meta=meta,
    )
