"""Spatial (SHARDS) key sampling: one stable hash shared by the simulator, the live replayer and every
estimator, so that the simulated and the live path sample exactly the same keys.

A key is kept iff ``splitmix64(key) mod P < rate * P``; thresholds nest, so a sample at a lower rate
is a subset of one at a higher rate (the miss-ratio-curve estimator uses that to give small
miniature caches a higher rate than large ones from one stream).
"""

from __future__ import annotations

import numpy as np

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)

#: Default hash modulus ``P``.
MODULUS = 1 << 24


def splitmix64(keys: np.ndarray) -> np.ndarray:
    """Deterministic 64-bit mix of integer key ids (Steele et al.'s SplitMix64 finaliser).

    Unlike Python's ``hash()`` it is stable across processes and machines, so the simulated and the
    live path sample the same keys.
    """
    z = np.asarray(keys).astype(np.uint64, copy=True)
    with np.errstate(over="ignore"):
        z += _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * _M1
        z = (z ^ (z >> np.uint64(27))) * _M2
        z ^= z >> np.uint64(31)
    return z


def hash_values(keys: np.ndarray, modulus: int = MODULUS) -> np.ndarray:
    """``splitmix64(key) mod modulus`` as int64 (compare with :func:`threshold`)."""
    return (splitmix64(keys) % np.uint64(modulus)).astype(np.int64)


def threshold(rate: float, modulus: int = MODULUS) -> int:
    """Keys whose hash value is below this are in the ``rate`` sample."""
    return int(round(min(max(rate, 0.0), 1.0) * modulus))


def hash_sample_mask(keys: np.ndarray, rate: float, modulus: int = MODULUS) -> np.ndarray:
    """``True`` where ``splitmix64(key) mod modulus < rate * modulus`` (spatial sampling)."""
    if rate >= 1.0:
        return np.ones(len(keys), dtype=bool)
    return hash_values(keys, modulus) < threshold(rate, modulus)


__all__ = ["MODULUS", "hash_sample_mask", "hash_values", "splitmix64", "threshold"]


def grown(capacity: int, need: int) -> int:
    """``capacity`` doubled until it holds ``need`` ids (how the miniature caches' key tables grow)."""
    cap = max(int(capacity), 1)
    while cap < need:
        cap *= 2
    return cap


class LocalIds:
    """Dense local ids for arbitrary global key ids, as miniature caches need (their key tables are
    arrays indexed by id): each batch's new keys get the next ids, in sorted key order, from
    ``start``. Shared by the miss-ratio-curve estimator, the what-if features and the shadow A/B
    minis, which differ only in what they do when the ids outgrow their table (the caller checks
    :meth:`unseen` against its capacity before :meth:`add`)."""

    def __init__(self, start: int = 0) -> None:
        self.start = int(start)
        self._known = np.zeros(0, dtype=np.int64)  # sorted global ids
        self._ids = np.zeros(0, dtype=np.int64)  # the local id of each

    def __len__(self) -> int:
        return len(self._known)

    @property
    def next_id(self) -> int:
        return self.start + len(self._known)

    def unseen(self, keys: np.ndarray) -> np.ndarray:
        """The distinct keys of ``keys`` without an id yet, sorted."""
        uniq = np.unique(keys)
        if not len(self._known):
            return uniq
        pos = np.minimum(np.searchsorted(self._known, uniq), len(self._known) - 1)
        return uniq[self._known[pos] != uniq]

    def add(self, new: np.ndarray) -> np.ndarray:
        """Give the (distinct, unseen) keys ``new`` the next ids; returns those ids."""
        ids = np.arange(self.next_id, self.next_id + len(new), dtype=np.int64)
        if len(new):
            allk = np.concatenate([self._known, new])
            alli = np.concatenate([self._ids, ids])
            order = np.argsort(allk, kind="stable")
            self._known, self._ids = allk[order], alli[order]
        return ids

    def lookup(self, keys: np.ndarray) -> np.ndarray:
        """Local ids of ``keys`` (every one must have an id)."""
        return self._ids[np.searchsorted(self._known, keys)]

    def copy(self) -> LocalIds:
        new = LocalIds(self.start)
        new._known, new._ids = self._known.copy(), self._ids.copy()
        return new
