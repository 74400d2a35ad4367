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
