"""Prices and predicted cost: what a configuration would cost in an interval, from a miss-ratio curve.

The same arithmetic as the env's reward (:mod:`cachetuner.env.reward`), evaluated on *predicted* hit
ratios so that a controller (or the learned policy's features) can compare every size and policy
before choosing one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cachetuner.mrc.curves import MissRatioCurves

_GIB = float(1024**3)


@dataclass(frozen=True)
class Prices:
    """What one interval costs, in the env's cost units (see :mod:`cachetuner.env.reward`).

    ``budget_bytes``: a memory budget (the ``budget`` price regime): memory is free below it and no
    controller may exceed it (it is the upper bound of the config space too).
    """

    memory_per_gib_hour: float
    miss: float
    slo_penalty: float = 0.0
    switch: float = 0.0
    interval_s: float = 60.0
    slo_p95_ms: float = float("inf")
    miss_latency_ms: float = 900.0
    miss_sigma: float = 0.6
    hit_latency_ms: float = 0.3
    budget_bytes: int | None = None

    def memory_cost(self, size_bytes: float | np.ndarray) -> np.ndarray:
        """Cost of holding ``size_bytes`` of maxmemory for one interval."""
        return self.memory_per_gib_hour * (np.asarray(size_bytes, float) / _GIB) * (self.interval_s / 3600.0)

    def p95_ms(self, miss_ratio: float | np.ndarray) -> np.ndarray:
        """p95 latency predicted from the miss ratio through the latency model: below 5 % misses the
        95th percentile is a hit; above, it is the miss latency's ``1 - 0.05/m`` quantile (lognormal)."""
        from scipy.stats import norm

        m = np.clip(np.asarray(miss_ratio, float), 1e-9, 1.0)
        q = np.clip(1.0 - 0.05 / m, 1e-6, 1 - 1e-6)
        miss_q = self.miss_latency_ms * np.exp(self.miss_sigma * norm.ppf(q))
        return np.where(m <= 0.05, self.hit_latency_ms, miss_q + self.hit_latency_ms)

    def interval_cost(self, size_bytes: np.ndarray, hit_ratio: np.ndarray, gets: float) -> np.ndarray:
        """Predicted cost of an interval at ``size_bytes`` with ``hit_ratio`` (no switch)."""
        miss = 1.0 - np.asarray(hit_ratio, float)
        slo = np.where(self.p95_ms(miss) > self.slo_p95_ms, self.slo_penalty, 0.0) if self.slo_penalty else 0.0
        return self.memory_cost(size_bytes) + self.miss * gets * miss + slo


@dataclass(frozen=True)
class CostCurve:
    """Predicted interval cost of every (policy, size) candidate, and the cheapest one."""

    sizes: np.ndarray
    cost: dict[str, np.ndarray]
    best_policy: str
    best_size: int
    best_cost: float

    def cost_at(self, policy: str, size: float) -> float:
        """Predicted cost at ``size`` (interpolated in log size), ``nan`` for a policy without a curve."""
        if policy not in self.cost:
            return float("nan")
        return float(np.interp(np.log(max(size, 1.0)), np.log(self.sizes.astype(float)), self.cost[policy]))


def cost_curve(
    curves: MissRatioCurves,
    prices: Prices,
    gets: float,
    bounds: tuple[int, int],
    *,
    policies: list[str] | None = None,
    n: int = 96,
    shortfall: float = 0.0,
) -> CostCurve:
    """Predicted cost at ``n`` log-spaced sizes within ``bounds`` for each policy with a curve.

    Reads the monotone (isotonic) version of the curves: a bigger cache never hits less, and a noisy
    dip must not look like a cheap size. ``shortfall``: each size is charged its memory but credited the hits of
    ``1 - shortfall`` times that size (a cache that may hold less than its miniature cache; see the rule setting
    ``size_shortfall``).
    """
    mono = curves.monotone()
    lo, hi = bounds
    sizes = np.unique(np.geomspace(max(lo, 1), max(hi, lo + 1), n).round().astype(np.int64))
    cost: dict[str, np.ndarray] = {}
    for p in policies or mono.policies:
        if p not in mono.hit or not np.all(np.isfinite(mono.hit[p])):
            continue
        cost[p] = prices.interval_cost(sizes, mono.hit_ratio(p, sizes * (1.0 - shortfall)), gets)
    if not cost:
        return CostCurve(sizes, {}, "", int(hi), float("nan"))
    best_p = min(cost, key=lambda p: float(cost[p].min()))
    k = int(np.argmin(cost[best_p]))
    return CostCurve(sizes, cost, best_p, int(sizes[k]), float(cost[best_p][k]))


__all__ = ["CostCurve", "Prices", "cost_curve"]
