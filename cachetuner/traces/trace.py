"""The in-memory trace: flat numpy arrays, one element per request.

Every reader and every synthetic workload produces a :class:`Trace`; the simulator, the replayer,
the hotness dataset builder and the environment only ever see this type.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import IntEnum

import numpy as np


class Op(IntEnum):
    """Request operation. ``GET`` on a read-only trace is read-through: a miss fills the cache."""

    GET = 0
    SET = 1
    DELETE = 2


@dataclass(frozen=True)
class Trace:
    """A request stream as flat arrays of equal length ``n``.

    Attributes:
        name: human-readable origin (file name or ``synthetic:NAME``).
        timestamps: float64 seconds, non-decreasing, first request at ``timestamps[0]``
            (not necessarily 0).
        keys: int64 dense key ids in ``0..n_keys-1`` (keys are mapped once, in order of first appearance; a
            :meth:`relabelled` trace permutes them).
        sizes: int64 value size in bytes (>= 1). For a read-only trace this is the size the
            miss fills with.
        ops: uint8 values of :class:`Op`.
        ttls: float64 TTL in seconds applied by SET / read-through fill; ``0`` means no TTL.
        n_keys: number of distinct keys U.
        key_bytes: int32 length in bytes of each key's name, indexed by key id (len ``n_keys``);
            the simulator's memory model charges it like Redis does for the key string.
        read_only: True when the source has only reads (the simulator and replayer then do
            read-through fills, counted as sets).
        meta: free-form provenance (format, size model, rate, seed, ...).
    """

    name: str
    timestamps: np.ndarray
    keys: np.ndarray
    sizes: np.ndarray
    ops: np.ndarray
    ttls: np.ndarray
    n_keys: int
    key_bytes: np.ndarray
    read_only: bool = True
    meta: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        n = len(self.keys)
        for attr in ("timestamps", "sizes", "ops", "ttls"):
            if len(getattr(self, attr)) != n:
                raise ValueError(
                    f"Trace {self.name}: {attr} has {len(getattr(self, attr))} rows, keys has {n}"
                )
        if len(self.key_bytes) != self.n_keys:
            raise ValueError(
                f"Trace {self.name}: key_bytes has {len(self.key_bytes)} rows, n_keys={self.n_keys}"
            )

    def __len__(self) -> int:
        return len(self.keys)

    @property
    def nbytes(self) -> int:
        """Bytes of its arrays (a :meth:`slice` counts its own rows, though it shares them with its trace)."""
        return sum(int(a.nbytes) for a in (self.timestamps, self.keys, self.sizes, self.ops, self.ttls, self.key_bytes))

    @property
    def duration(self) -> float:
        """Seconds between first and last request (0 for fewer than two requests)."""
        return float(self.timestamps[-1] - self.timestamps[0]) if len(self) > 1 else 0.0

    def slice(self, start: int, stop: int) -> Trace:
        """Requests ``[start, stop)`` sharing this trace's key space (views, no copy)."""
        return Trace(
            name=self.name,
            timestamps=self.timestamps[start:stop],
            keys=self.keys[start:stop],
            sizes=self.sizes[start:stop],
            ops=self.ops[start:stop],
            ttls=self.ttls[start:stop],
            n_keys=self.n_keys,
            key_bytes=self.key_bytes,
            read_only=self.read_only,
            meta=self.meta,
        )

    def relabelled(self, draw: int) -> Trace:
        """The same traffic with its key ids permuted by a permutation seeded by ``draw`` (0: this trace).

        Every request, its order, size, TTL and key-name length stay; only the ids change. What that changes is
        which keys a hash of the id selects: the miss-ratio curves, the what-if features and the shadow A/B sample
        keys by a fixed hash of the id (the same on the live path), so a relabelled trace is another draw of their
        key sample, and the spread over draws is the sampling's luck, which the seeds of a suite do not redraw."""
        if draw == 0:
            return self
        perm = np.random.default_rng(draw).permutation(self.n_keys).astype(self.keys.dtype)
        inv = np.argsort(perm)  # key_bytes is indexed by id: the new id perm[k] keeps key k's name length
        return replace(self, keys=perm[self.keys], key_bytes=self.key_bytes[inv], meta={**self.meta, "key_draw": draw})

    def index_at(self, t: float) -> int:
        """Index of the first request with timestamp >= ``t``."""
        return int(np.searchsorted(self.timestamps, t, side="left"))

    def working_set_bytes(self) -> int:
        """Sum over distinct keys of their last-seen value size (a common cache-sizing reference)."""
        last = np.zeros(self.n_keys, dtype=np.int64)
        last[self.keys] = self.sizes
        return int(last.sum())
