"""Miss-ratio curves: hit ratio (and byte hit ratio) per policy at absolute cache sizes.

A :class:`MissRatioCurves` is a snapshot the estimator hands to controllers and to the observation:
plain arrays, interpolated linearly in ``log(size)`` between the sampled sizes and held flat outside
them. Estimates of a noisy sample need not be monotone; :meth:`monotone` returns the closest
non-decreasing curve (pool-adjacent-violators), which is what a cost minimiser should read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from cachetuner.config import RedisConfig


def isotonic(y: np.ndarray, w: np.ndarray | None = None) -> np.ndarray:
    """Least-squares non-decreasing fit of ``y`` (pool adjacent violators); NaNs are left as they are."""
    y = np.asarray(y, dtype=float)
    out = y.copy()
    ok = np.isfinite(y)
    if ok.sum() < 2:
        return out
    vals = list(y[ok])
    wts = list(np.ones(len(vals)) if w is None else np.asarray(w, float)[ok])
    blocks: list[list[float]] = []  # [mean, weight, count]
    for v, wt in zip(vals, wts, strict=True):
        blocks.append([v, max(wt, 1e-12), 1])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            b = blocks.pop()
            a = blocks[-1]
            tw = a[1] + b[1]
            a[0] = (a[0] * a[1] + b[0] * b[1]) / tw
            a[1], a[2] = tw, a[2] + b[2]
    fitted = np.concatenate([np.full(int(c), m) for m, _, c in blocks])
    out[ok] = fitted
    return out


@dataclass(frozen=True)
class KnobPoint:
    """An eviction-knob variant's windowed hit ratio at a budget's cap, and the GETs it accounts for (its evidence);
    :mod:`cachetuner.mrc.knobs` chooses among them."""

    config: RedisConfig  # the variant applied to the estimator's base config (maxmemory = the cap)
    hit: float
    evidence: float


@dataclass
class MissRatioCurves:
    """Hit ratios of each policy at ``sizes`` (bytes of ``maxmemory``, increasing).

    ``weight`` is the (windowed) number of sampled GETs behind each point: 0 means no estimate yet.
    ``evidence`` is the (windowed) number of GETs each point *accounts for*: with SHARDS-adj the expected
    sampled GETs (``rate x all GETs``), which include the requests of hot keys the sample missed and the
    correction counts as hits. It grows with the window's age whatever the skew, so readiness is judged
    on it; ``weight`` (what was actually simulated) stays the pooling weight of :meth:`monotone`.
    Empty: readiness falls back to ``weight``.

    ``knobs``: under a memory budget, the hit ratio at ``knob_size`` (the cap) of each eviction-knob variant
    (:mod:`cachetuner.mrc.knobs`); the policy curves themselves run ``base_config``'s knobs.
    """

    sizes: np.ndarray
    hit: dict[str, np.ndarray] = field(default_factory=dict)
    byte_hit: dict[str, np.ndarray] = field(default_factory=dict)
    weight: dict[str, np.ndarray] = field(default_factory=dict)
    object_bytes: float = 4096.0  # mean memory per cached object (refill-time estimates)
    evidence: dict[str, np.ndarray] = field(default_factory=dict)
    knobs: list[KnobPoint] = field(default_factory=list)
    knob_size: int | None = None
    base_config: RedisConfig | None = None

    @property
    def policies(self) -> list[str]:
        return list(self.hit)

    def ready(self, min_weight: float = 1.0) -> bool:
        """True when every point of every curve accounts for at least ``min_weight`` (windowed) GETs.

        Why evidence and not the simulated count: under heavy skew a 1 % sample often misses the few
        hottest keys, so the sampled GETs stay far below ``rate x GETs`` and a readiness gate on them
        would freeze the controller for as long as the skew lasts (measured: a workload turning from
        Zipf 0.6 to 1.3 left mrc holding a 4x oversized cache to the end)."""
        ev = self.evidence or self.weight
        return bool(self.hit) and all(
            np.all(np.isfinite(h)) and np.all(ev[p] >= min_weight) for p, h in self.hit.items()
        )

    def monotone(self) -> MissRatioCurves:
        """The same curves, each made non-decreasing in size (a bigger cache never hits less)."""
        return MissRatioCurves(
            self.sizes,
            {p: isotonic(h, self.weight.get(p)) for p, h in self.hit.items()},
            {p: isotonic(h, self.weight.get(p)) for p, h in self.byte_hit.items()},
            dict(self.weight),
            self.object_bytes,
            dict(self.evidence),
            list(self.knobs),
            self.knob_size,
            self.base_config,
        )

    def hit_ratio(self, policy: str, size: float | np.ndarray, *, bytes_: bool = False) -> np.ndarray:
        """Hit ratio of ``policy`` at ``size`` (interpolated in log size; flat outside the sampled range)."""
        curve = (self.byte_hit if bytes_ else self.hit)[policy]
        x = np.log(np.maximum(np.asarray(size, dtype=float), 1.0))
        return np.interp(x, np.log(self.sizes.astype(float)), curve)

    def to_json(self) -> dict[str, object]:
        return {
            "sizes": [int(s) for s in self.sizes],
            "hit_ratio": {p: [round(float(v), 6) for v in h] for p, h in self.hit.items()},
            "byte_hit_ratio": {p: [round(float(v), 6) for v in h] for p, h in self.byte_hit.items()},
        }


__all__ = ["KnobPoint", "MissRatioCurves", "isotonic"]
