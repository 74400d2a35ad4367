"""Turn parsed columns into a :class:`Trace`: dense key ids, key-name lengths, sizes, timing.

Every reader and every synthetic workload ends here, so the conventions (first-appearance key
numbering, per-key sizes, the ``ct:`` key prefix, the default rate and size) live in one place.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from cachetuner.errors import TraceError
from cachetuner.traces.sizes import DEFAULT_SIZE_MODEL, SizeModel, parse_size_model
from cachetuner.traces.streams import ProgressFn
from cachetuner.traces.trace import Op, Trace

#: Numeric key ids are named ``ct:{dense id}`` by the replayer; key_bytes charges this name length.
KEY_PREFIX = "ct:"
#: Requests per second given to traces without timestamps when no ``--rate`` is given.
DEFAULT_RATE = 1000.0


@dataclass(frozen=True)
class ReadOptions:
    """What the caller asked for, shared by every reader."""

    size_model: SizeModel | None = None
    rate: float | None = None
    seed: int = 0
    limit: int | None = None
    params: dict = field(default_factory=dict)
    progress: ProgressFn | None = None


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


def _timestamps(name: str, cols: Columns, n: int, opts: ReadOptions, meta: dict) -> np.ndarray:
    if opts.rate is not None or cols.timestamps is None:
        rate = opts.rate if opts.rate is not None else DEFAULT_RATE
        if not rate > 0:
            raise TraceError(f"{name}: rate must be > 0 requests/s, got {rate}")
        meta["rate"] = rate
        meta["timing"] = "uniform at rate" if cols.timestamps is None else "re-timed uniformly at --rate"
        return np.arange(n, dtype=np.float64) / rate
    ts = np.asarray(cols.timestamps, dtype=np.float64)
    back = int(np.count_nonzero(ts[1:] < ts[:-1]))
    if back:
        # Logged timestamps can step back slightly (clock skew between hosts); keep order, clamp time.
        ts = np.maximum.accumulate(ts)
        meta["timestamps_clamped"] = back
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
    meta["size_model"] = "from trace"
    return sizes


def build_trace(name: str, cols: Columns, opts: ReadOptions, meta: dict | None = None) -> Trace:
    """Assemble a :class:`Trace` from reader columns, applying limit, rate and size model."""
    meta = dict(meta or {})
    n = len(cols.keys)
    if opts.limit is not None and n > opts.limit:
        n = opts.limit
    if n == 0:
        raise TraceError(f"{name}: no requests (empty trace)")
    cut = slice(0, n)
    raw = cols.keys[cut]
    if cols.keys_dense:
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
