"""Offline sizing: the cost-optimal static ``(maxmemory, maxmemory-policy)`` for a trace, from one sampled pass.

This is the sum an operator would do by hand before setting ``maxmemory``, done properly: price every size
and policy of the miss-ratio curves (memory held plus the model calls the misses cause) and take the
cheapest. It is what the ``mrc`` controller does every interval online (Macaron, SOSP'24), here once over
the whole trace, so it answers "what one config should this traffic get", not "how should it follow a
shifting workload" (the online controllers' job).

The curves come from the same sampled estimator the controllers read (``whole_trace_curves``), so the
answer carries their sampling error. That error is shown, not hidden: ``verify`` replays the whole trace
through the simulator at the recommended config (and at the operator's current one), and ``grid`` runs the
hindsight check, a full simulation of every (size, policy) on a log grid, and reports how far the
recommendation is from the cheapest of them. Approximations: a static config and the steady state (no
switch cost, no cold-start accounting beyond what the replay itself shows); no SLO penalty is priced.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cachetuner.config import RedisConfig
from cachetuner.errors import ConfigError
from cachetuner.mrc.config import MRCConfig
from cachetuner.mrc.cost import CostCurve, Prices, cost_curve
from cachetuner.mrc.curves import MissRatioCurves
from cachetuner.mrc.offline import default_bounds, whole_trace_curves
from cachetuner.sim.params import SimParams
from cachetuner.sim.sizing import full_size
from cachetuner.traces.trace import Op, Trace

_GIB = float(1024**3)

#: ``on_progress(stage, done, total)``: stage is "sample" (requests fed) or "replay" (full simulations run).
ProgressFn = Callable[[str, int, int], None]


@dataclass(frozen=True)
class Replayed:
    """One config replayed through the full simulator: what it really hits and costs (per hour)."""

    label: str
    policy: str
    maxmemory: int
    hit_ratio: float
    predicted_hit_ratio: float
    memory_per_hour: float
    misses_per_hour: float
    cost_per_hour: float

    def to_json(self) -> dict[str, Any]:
        return {k: (round(v, 6) if isinstance(v, float) else v) for k, v in self.__dict__.items()}


@dataclass(frozen=True)
class Recommendation:
    """The priced curves, the cheapest static config, and (when asked) the replays that check it."""

    trace: str
    requests: int
    gets_per_hour: float
    duration_s: float
    working_set_bytes: int
    bounds: tuple[int, int]
    memory_per_gib_hour: float
    per_miss: float
    budget_bytes: int | None
    curves: MissRatioCurves
    cost: CostCurve  # per hour
    tolerance: float
    band: tuple[int, int]  # sizes of the best policy within ``tolerance`` of the optimum (contiguous)
    sampled_share: float
    timing: str = ""  # the trace's "from trace" or "uniform at R req/s": the dollars per hour scale with it
    size_model: str = ""
    replays: dict[str, Replayed] = field(default_factory=dict)  # "recommended", "current"
    grid: list[Replayed] = field(default_factory=list)  # hindsight check: every (size, policy) of the grid

    @property
    def policy(self) -> str:
        return self.cost.best_policy

    @property
    def maxmemory(self) -> int:
        return self.cost.best_size

    @property
    def predicted_hit_ratio(self) -> float:
        return float(self.curves.monotone().hit_ratio(self.policy, self.maxmemory))

    @property
    def best_on_grid(self) -> Replayed | None:
        return min(self.grid, key=lambda r: r.cost_per_hour) if self.grid else None

    def to_json(self) -> dict[str, Any]:
        mono = self.curves.monotone()
        out: dict[str, Any] = {
            "trace": self.trace,
            "requests": self.requests,
            "timing": self.timing,
            "size_model": self.size_model,
            "duration_s": round(self.duration_s, 3),
            "gets_per_hour": round(self.gets_per_hour, 3),
            "working_set_bytes": self.working_set_bytes,
            "bounds": list(self.bounds),
            "prices": {"memory_per_gib_hour": self.memory_per_gib_hour, "per_miss": self.per_miss,
                       "budget_bytes": self.budget_bytes},
            "recommended": {
                "maxmemory": self.maxmemory,
                "maxmemory_policy": self.policy,
                "predicted_hit_ratio": round(self.predicted_hit_ratio, 6),
                "predicted_cost_per_hour": round(self.cost.best_cost, 6),
                "band": {"tolerance": self.tolerance, "min_maxmemory": self.band[0], "max_maxmemory": self.band[1]},
            },
            "curves": {
                "sizes": [int(s) for s in self.curves.sizes],
                "hit_ratio": {p: [round(float(h), 6) for h in mono.hit[p]] for p in mono.policies},
            },
            "cost_per_hour": {
                "sizes": [int(s) for s in self.cost.sizes],
                **{p: [round(float(c), 6) for c in v] for p, v in self.cost.cost.items()},
            },
            "sampled_share": round(self.sampled_share, 4),
            "replays": {k: r.to_json() for k, r in self.replays.items()},
        }
        best = self.best_on_grid
        if best is not None:
            rec = self.replays.get("recommended")
            out["grid_check"] = {
                "points": len(self.grid),
                "best": best.to_json(),
                "recommended_regret": None if rec is None else round(rec.cost_per_hour / best.cost_per_hour - 1, 6),
            }
        return out


def trace_hours(trace: Trace) -> float:
    """The trace's span in hours, one mean inter-arrival added (``n`` requests span ``n`` gaps, not ``n-1``)."""
    n = len(trace)
    if n < 2:
        raise ConfigError(f"{trace.name}: a trace of {n} request(s) has no duration to price memory over")
    span = float(trace.timestamps[-1] - trace.timestamps[0])
    if span <= 0:
        raise ConfigError(f"{trace.name}: every request has the same timestamp; give --rate to space them")
    return span * n / (n - 1) / 3600.0


def recommend(
    trace: Trace,
    *,
    memory_per_gib_hour: float,
    per_miss: float,
    budget_bytes: int | None = None,
    cfg: MRCConfig | None = None,
    params: SimParams | None = None,
    bounds: tuple[int, int] | None = None,
    tolerance: float = 0.03,
    current: RedisConfig | None = None,
    verify: bool = True,
    grid: int = 0,
    on_progress: ProgressFn | None = None,
) -> Recommendation:
    """Price the whole-trace curves and pick the cheapest static config within ``bounds`` (default: 2 % to
    100 % of the working set, as the env's); under a budget (``budget_bytes``) the default upper bound is the budget
    itself, above the working set too: memory is free below it, and traffic that reads more keys than the trace did
    fits (explicit ``bounds`` still cap it).

    ``verify`` replays the trace at the recommendation (and at ``current``); ``grid`` (> 1) also replays
    ``grid`` log-spaced sizes x every policy and reports the cheapest (hindsight)."""
    cfg = cfg or MRCConfig()
    params = params or SimParams()
    if not len(trace):
        raise ConfigError(f"{trace.name}: empty trace")
    ws = full_size(trace, params)
    lo, hi = bounds or default_bounds(trace, params)
    if budget_bytes is not None:
        if budget_bytes <= lo:
            raise ConfigError(f"--budget: {budget_bytes:,} B is not above the smallest size considered ({lo:,} B)")
        hi = min(hi, budget_bytes) if bounds is not None else budget_bytes
    if lo >= hi:
        raise ConfigError(f"bounds: min {lo:,} B >= max {hi:,} B")
    hours = trace_hours(trace)
    gph = gets_per_hour(trace)
    if gph <= 0:
        raise ConfigError(f"{trace.name}: the trace has no GETs; there are no misses to price")
    n = len(trace)
    sample = (lambda done: on_progress("sample", done, n)) if on_progress is not None else None
    curves, est = whole_trace_curves(trace, cfg, params, (lo, hi), on_chunk=sample)
    if not curves.policies:
        raise ConfigError(f"{trace.name}: too few sampled requests for a curve; raise --rate")
    hourly = Prices(memory_per_gib_hour=memory_per_gib_hour, miss=per_miss, interval_s=3600.0, budget_bytes=budget_bytes)
    costs = cost_curve(curves, hourly, gph, (lo, hi), policies=list(cfg.policies))
    if not costs.cost:
        raise ConfigError(f"{trace.name}: no policy has a complete curve; raise --rate")
    costs = _largest_of_ties(costs)
    rec = Recommendation(
        trace=trace.name, requests=n, gets_per_hour=gph, duration_s=hours * 3600.0, working_set_bytes=ws,
        bounds=(int(lo), int(hi)), memory_per_gib_hour=memory_per_gib_hour, per_miss=per_miss,
        budget_bytes=budget_bytes, curves=curves, cost=costs, tolerance=tolerance,
        band=_band(costs, tolerance), sampled_share=float(est.sampled_share), timing=_timing(trace),
        size_model=str(trace.meta.get("size_model", "")),
    )
    todo: list[tuple[str, RedisConfig]] = []
    if verify:
        todo.append(("recommended", RedisConfig(maxmemory=rec.maxmemory, maxmemory_policy=rec.policy)))  # type: ignore[arg-type]
        if current is not None:
            todo.append(("current", current))
    points: list[RedisConfig] = []
    if grid > 1:
        sizes = np.unique(np.geomspace(lo, hi, grid).round().astype(np.int64))
        points = [RedisConfig(maxmemory=int(s), maxmemory_policy=p) for p in cfg.policies for s in sizes]  # type: ignore[arg-type]
    total = len(todo) + len(points)
    for done, (label, config) in enumerate([*todo, *(("grid", c) for c in points)], start=1):
        r = replay(trace, config, rec, params, label)
        if label == "grid":
            rec.grid.append(r)
        else:
            rec.replays[label] = r
        if on_progress is not None:
            on_progress("replay", done, total)
    return rec


def replay(
    trace: Trace, config: RedisConfig, rec: Recommendation, params: SimParams, label: str, *, gets_per_hour: float | None = None
) -> Replayed:
    """Replay all of ``trace`` through the full simulator at ``config`` and price it as ``rec`` prices (at
    ``gets_per_hour``, default ``rec``'s: another stretch of traffic has its own rate)."""
    from cachetuner.sim import TieredCacheSim

    full = params.model_copy(update={"model_latency": False})
    counts = TieredCacheSim.for_trace(trace, config, full).run_counts(trace, 0, len(trace))
    hr = counts.hit_ratio
    mem = rec.memory_per_gib_hour * config.maxmemory / _GIB
    misses = (rec.gets_per_hour if gets_per_hour is None else gets_per_hour) * (1.0 - hr)
    pol = config.maxmemory_policy
    pred = float(rec.curves.monotone().hit_ratio(pol, config.maxmemory)) if pol in rec.curves.policies else float("nan")
    return Replayed(label, pol, int(config.maxmemory), float(hr), pred, mem, misses, mem + rec.per_miss * misses)


def _timing(trace: Trace) -> str:
    timing = str(trace.meta.get("timing", ""))
    rate = trace.meta.get("rate")
    return f"uniform at {float(rate):g} req/s" if timing.startswith("uniform") and rate else timing


def _largest_of_ties(costs: CostCurve) -> CostCurve:
    """Where several sizes cost the same (memory free under a budget, a flat curve's top) take the largest: the
    curve says it hits no less, and a sampled curve can only have missed reuses a larger cache would catch."""
    c = costs.cost[costs.best_policy]
    k = int(np.flatnonzero(c <= costs.best_cost + 1e-12 * max(abs(costs.best_cost), 1.0))[-1])
    return CostCurve(costs.sizes, costs.cost, costs.best_policy, int(costs.sizes[k]), float(c[k]))


def _band(costs: CostCurve, tolerance: float) -> tuple[int, int]:
    """The contiguous run of the best policy's sizes whose cost is within ``tolerance`` of the optimum."""
    c = costs.cost[costs.best_policy]
    k = int(np.argmin(c))
    ok = c <= costs.best_cost * (1.0 + tolerance) + 1e-12
    i = k
    while i > 0 and ok[i - 1]:
        i -= 1
    j = k
    while j < len(c) - 1 and ok[j + 1]:
        j += 1
    return int(costs.sizes[i]), int(costs.sizes[j])


def gets_per_hour(trace: Trace) -> float:
    """GETs per hour of ``trace`` on its own clock."""
    return int(np.count_nonzero(trace.ops == Op.GET)) / trace_hours(trace)


__all__ = ["Recommendation", "Replayed", "gets_per_hour", "recommend", "replay", "trace_hours"]
