"""Non-learned hotness predictors, evaluated on exactly the windows the LSTM sees.

All return log1p of the predicted next-horizon count so they are comparable with the LSTM (the
ranking metrics only use the order, but the plots and the MSE use the scale).

Registry: :data:`BASELINES` maps a name to a factory; :func:`make_baseline` rejects unknown names
with the list of valid ones.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from cachetuner.hotness_model.dataset import BucketCounts, Windows
from cachetuner.registry import Registry


class BaselineConfig(BaseModel):
    """Parameters of the baselines."""

    model_config = ConfigDict(extra="forbid")

    ewma_alpha: float = Field(0.3, gt=0, le=1, description="weight of the newest bucket")
    sketch_width: int = Field(16384, ge=64, description="count-min sketch counters per row (rounded up to 2^k)")
    sketch_depth: int = Field(4, ge=1, le=8)
    sketch_age_buckets: int = Field(8, ge=1, description="all counters are halved every this many buckets")


class HotnessBaseline(Protocol):
    """A predictor that needs no training."""

    name: str

    def predict(self, windows: Windows, counts: BucketCounts, horizon: int) -> np.ndarray: ...


class LastValue:
    """Next horizon = last bucket's count, repeated ``horizon`` times."""

    name = "last_value"

    def __init__(self, cfg: BaselineConfig) -> None:
        self.cfg = cfg

    def predict(self, windows: Windows, counts: BucketCounts, horizon: int) -> np.ndarray:
        return np.log1p(np.expm1(windows.x[:, -1]) * horizon).astype(np.float32)


class EWMA:
    """Exponentially weighted mean of the history's per-bucket counts, times ``horizon``."""

    name = "ewma"

    def __init__(self, cfg: BaselineConfig) -> None:
        self.alpha = cfg.ewma_alpha

    def predict(self, windows: Windows, counts: BucketCounts, horizon: int) -> np.ndarray:
        raw = np.expm1(windows.x.astype(np.float64))
        L = raw.shape[1]
        w = self.alpha * (1 - self.alpha) ** np.arange(L - 1, -1, -1, dtype=np.float64)
        w[0] += (1 - self.alpha) ** L  # the initial value is the oldest bucket
        return np.log1p(raw @ w * horizon).astype(np.float32)


class CountMinSketch:
    """TinyLFU-style frequency estimate: count-min sketch over the whole history with aging.

    Approximation: counters are built from the aggregated per-bucket counts (the sketch is linear,
    so this equals streaming the requests) and halving is exact (no integer truncation, no
    4-bit saturation as in Caffeine's sketch). Collisions are real: every key seen before the
    anchor is hashed into the same ``depth x width`` counters.
    """

    name = "sketch"

    def __init__(self, cfg: BaselineConfig) -> None:
        self.depth = cfg.sketch_depth
        self.bits = int(np.ceil(np.log2(cfg.sketch_width)))
        self.age = cfg.sketch_age_buckets
        rng = np.random.default_rng(0x5EED)
        self.mult = rng.integers(1, 2**63, size=self.depth, dtype=np.uint64) | np.uint64(1)

    def _cells(self, keys: np.ndarray, row: int) -> np.ndarray:
        with np.errstate(over="ignore"):
            h = keys.astype(np.uint64) * self.mult[row]
        return (h >> np.uint64(64 - self.bits)).astype(np.int64)

    def predict(self, windows: Windows, counts: BucketCounts, horizon: int) -> np.ndarray:
        out = np.zeros(len(windows), np.float64)
        width = 1 << self.bits
        all_keys = np.arange(counts.counts.shape[0], dtype=np.int64)
        for idx in windows.groups():
            t = int(windows.anchor[idx[0]])
            ages = (t - 1 - np.arange(t)) // self.age
            aged = counts.counts[:, :t] @ (0.5**ages)
            est = np.full(len(idx), np.inf)
            for r in range(self.depth):
                cells = self._cells(all_keys, r)
                table = np.bincount(cells, weights=aged, minlength=width)
                est = np.minimum(est, table[self._cells(windows.key[idx], r)])
            out[idx] = est
        # an aged total is a rate times the effective window (~ 2 * age buckets); scale to the horizon
        return np.log1p(out * horizon / (2.0 * self.age)).astype(np.float32)


#: name -> factory ``BaselineConfig -> HotnessBaseline`` (evaluated and reported in this order).
BASELINES: Registry[Callable[[BaselineConfig], HotnessBaseline]] = Registry("hotness baseline")
BASELINES.add("last_value", LastValue)
BASELINES.add("ewma", EWMA)
BASELINES.add("sketch", CountMinSketch)


def make_baseline(name: str, cfg: BaselineConfig | None = None) -> HotnessBaseline:
    """Instantiate a baseline by name; an unknown name raises a one-line
    :class:`~cachetuner.errors.UnknownNameError` (a ``ConfigError``) listing the valid ones."""
    return BASELINES.get(name)(cfg or BaselineConfig())
