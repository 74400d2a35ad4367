"""``cachetuner bench knobs``: what Redis's eviction knobs could buy under a memory budget, in hindsight.

Under the ``budget`` price regime ``maxmemory`` sits at the cap and only the eviction policy and its knobs
(``maxmemory-samples``; ``lfu-log-factor`` and ``lfu-decay-time`` for LFU) can move the hit ratio. ``mrc`` chooses
the policy on its curves and leaves the knobs at Redis's defaults. This benchmark measures what that leaves on the
table: for every shared trace and budget it replays the whole trace through the full simulator once per knob
setting of :data:`KNOB_GRID` and reports the best setting's hit ratio against the better of LRU and LFU at the
defaults. It is a hindsight upper bound for one static choice per trace (the best of 22, picked after seeing the
whole trace), not what an online tuner would reach; it also reports how each setting does as one choice for every
trace, which is what a new default would have to survive. With ``predicted`` it also measures what an online choice
would rest on: the curves' prediction of each arm ``mrc``'s opt-in knob rule (:mod:`cachetuner.mrc.knobs`) chooses
among, against the full simulations.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from cachetuner.config import RedisConfig
from cachetuner.sim.params import SimParams
from cachetuner.sim.simulator import TieredCacheSim
from cachetuner.sim.sizing import parse_size
from cachetuner.traces.trace import Trace

#: (policy, maxmemory-samples, lfu-log-factor, lfu-decay-time): Redis's defaults for both policies first, then
#: LRU with other sample counts and LFU over samples x log factor x decay time (the LFU knobs do nothing to LRU).
KNOB_GRID: tuple[tuple[str, int, int, int], ...] = (
    ("allkeys-lru", 5, 10, 1),
    ("allkeys-lfu", 5, 10, 1),
    *(("allkeys-lru", s, 10, 1) for s in (3, 10, 20)),
    *(("allkeys-lfu", s, lf, dt) for s in (5, 10) for lf in (1, 10, 100) for dt in (0, 1, 10) if (s, lf, dt) != (5, 10, 1)),
)
def knob_label(policy: str, samples: int, log_factor: int, decay: int) -> str:
    """``allkeys-lfu samples=10 log-factor=1 decay=1``; LRU settings name only the samples."""
    if policy == "allkeys-lru":
        return f"{policy} samples={samples}"
    return f"{policy} samples={samples} log-factor={log_factor} decay={decay}"


#: The two settings a knob-blind controller chooses between (the grid's first two).
DEFAULTS: tuple[str, str] = (knob_label(*KNOB_GRID[0]), knob_label(*KNOB_GRID[1]))


def knob_hit_ratios(trace: Trace, maxmemory: int, params: SimParams) -> dict[str, float]:
    """Whole-trace hit ratio of every :data:`KNOB_GRID` setting at ``maxmemory`` bytes."""
    out: dict[str, float] = {}
    for policy, samples, log_factor, decay in KNOB_GRID:
        cfg = RedisConfig(maxmemory=maxmemory, maxmemory_policy=policy,  # type: ignore[arg-type]
                          maxmemory_samples=samples, lfu_log_factor=log_factor, lfu_decay_time=decay)
        out[knob_label(policy, samples, log_factor, decay)] = TieredCacheSim.for_trace(trace, cfg, params).run_counts(
            trace, 0, len(trace)).hit_ratio
    return out


def bench_knobs(
    traces: list[tuple[str, str]] | None = None,
    *,
    budgets: tuple[str, ...] = ("5%", "20%"),
    limit: int | None = 300_000,
    size_model: str | None = "fixed:4096",
    on_trace: Callable[[str], None] | None = None,
    predicted: bool = False,
) -> dict[str, Any]:
    """The ``bench knobs --json`` report: per (trace, budget) cell the defaults' and the best setting's hit ratio
    and the headroom in pp; a summary of the headroom, and of every setting as one choice for all cells.
    ``predicted``: also what the curves predict for ``mrc``'s knob variants (:func:`predicted_arms`)."""
    from cachetuner.mrc.bench import read_shared

    params = SimParams().model_copy(update={"model_latency": False})
    cells: list[dict[str, Any]] = []
    for rel, trace in read_shared(traces, size_model=size_model, limit=limit, on_trace=on_trace):
        for budget in budgets:
            mm = parse_size(budget, trace, params, what="--budgets")
            hr = knob_hit_ratios(trace, mm, params)
            base_name = max(DEFAULTS, key=lambda k: hr[k])
            best_name = max(hr, key=lambda k: hr[k])
            cells.append({
                "trace": rel, "budget": budget, "maxmemory": mm,
                "default_lru": round(hr[DEFAULTS[0]], 5), "default_lfu": round(hr[DEFAULTS[1]], 5),
                "best": best_name, "best_hit_ratio": round(hr[best_name], 5),
                "headroom_pp": round(100 * (hr[best_name] - hr[base_name]), 3),
                "hit_ratio": {k: round(v, 5) for k, v in hr.items()},
            })  # fmt: skip
            if predicted:
                cells[-1]["predicted"] = predicted_arms(trace, mm, params, hr)
    summary = knob_summary(cells)
    if predicted and cells:
        summary["predicted"] = predicted_summary(cells)
    return {"budgets": list(budgets), "size_model": size_model or "native", "limit": limit,
            "grid": [knob_label(*k) for k in KNOB_GRID], "cells": cells, "summary": summary}


def _arm_label(cfg: RedisConfig) -> str:
    return knob_label(cfg.maxmemory_policy, cfg.maxmemory_samples, cfg.lfu_log_factor, cfg.lfu_decay_time)


def predicted_arms(trace: Trace, maxmemory: int, params: SimParams, true_hr: dict[str, float]) -> dict[str, Any]:
    """What ``mrc``'s curves say of the arms at the cap (both policies at the defaults and every one of
    :func:`~cachetuner.mrc.knobs.default_variants`), read over the whole trace from the 1 % key sample, against the
    full simulations of ``true_hr``: per arm predicted and true hit ratio, the arm the curves would pick and what it
    truly hits against the better default. Why: a choice among arms is only as good as the curves' error of the
    *differences* between arms, which this measures."""
    from cachetuner.mrc.config import MRCConfig
    from cachetuner.mrc.knobs import default_variants
    from cachetuner.mrc.offline import default_bounds, whole_trace_curves

    lo = min(default_bounds(trace, params)[0], max(maxmemory // 4, 1))
    cfg = MRCConfig(knob_variants=default_variants())
    curves, _ = whole_trace_curves(trace, cfg, params, (lo, maxmemory), knob_size=maxmemory)
    mono = curves.monotone()
    base = RedisConfig(maxmemory=maxmemory)
    pred: dict[str, float] = {_arm_label(base.evolve(maxmemory_policy=p)): float(mono.hit_ratio(p, maxmemory))
                              for p in cfg.policies}
    pred.update({_arm_label(k.config): float(k.hit) for k in curves.knobs})
    pick = max(pred, key=lambda a: pred[a])
    better_default = max(DEFAULTS, key=lambda k: true_hr[k])
    return {
        "arms": {a: {"predicted": round(v, 5), "true": round(true_hr[a], 5)} for a, v in pred.items()},
        "pick": pick, "pick_vs_better_default_pp": round(100 * (true_hr[pick] - true_hr[better_default]), 3),
        "predicted_defaults_pick_vs_better_default_pp": round(
            100 * (true_hr[max(DEFAULTS, key=lambda k: pred[k])] - true_hr[better_default]), 3),
    }


def predicted_summary(cells: list[dict[str, Any]]) -> dict[str, Any]:
    """Over the cells: the error of the predicted difference between each variant and its policy's default (pp), how
    often a predicted gain of 1 pp or more points the wrong way, and the true gain of the curves' pick over the
    better default (what a static choice from the curves would buy), next to the pick between the two defaults."""
    errs: list[float] = []
    wrong = big = 0
    for c in cells:
        arms = c["predicted"]["arms"]
        for a, v in arms.items():
            if a in DEFAULTS:
                continue
            ref = DEFAULTS[0] if a.startswith("allkeys-lru") else DEFAULTS[1]
            dp, dt = v["predicted"] - arms[ref]["predicted"], v["true"] - arms[ref]["true"]
            errs.append(100 * abs(dp - dt))
            if abs(dp) >= 0.01:
                big += 1
                wrong += int(np.sign(dp) != np.sign(dt))
    picks = np.array([c["predicted"]["pick_vs_better_default_pp"] for c in cells])
    plain = np.array([c["predicted"]["predicted_defaults_pick_vs_better_default_pp"] for c in cells])
    return {
        "knob_gap_error_pp": {"mean": round(float(np.mean(errs)), 3), "max": round(float(np.max(errs)), 3)},
        "knob_gaps_over_1pp": big, "knob_gaps_over_1pp_wrong_way": wrong,
        "pick_vs_better_default_pp": {"mean": round(float(picks.mean()), 3), "worst": round(float(picks.min()), 3),
                                      "cells_below_minus_0.5pp": int((picks < -0.5).sum())},
        "defaults_pick_vs_better_default_pp": {"mean": round(float(plain.mean()), 3), "worst": round(float(plain.min()), 3)},
    }


def knob_summary(cells: list[dict[str, Any]]) -> dict[str, Any]:
    """Headroom over the cells (mean, max, how many cells have ≥ 0.5 pp) and, for every setting used in every cell,
    its mean and worst difference (pp) to the better default of that cell, and its mean difference to LRU's default
    (what static-default runs)."""
    if not cells:
        return {}
    head = np.array([c["headroom_pp"] for c in cells])
    base = np.array([max(c["default_lru"], c["default_lfu"]) for c in cells])
    lru = np.array([c["default_lru"] for c in cells])
    as_default: dict[str, dict[str, float]] = {}
    for name in cells[0]["hit_ratio"]:
        hr = np.array([c["hit_ratio"][name] for c in cells])
        d = 100 * (hr - base)
        as_default[name] = {"mean_pp": round(float(d.mean()), 3), "worst_pp": round(float(d.min()), 3),
                            "mean_pp_vs_lru": round(float(100 * (hr - lru).mean()), 3)}
    best_single = max(as_default, key=lambda k: as_default[k]["mean_pp"])
    wins: dict[str, int] = {}
    for c in cells:
        wins[c["best"]] = wins.get(c["best"], 0) + 1
    return {
        "cells": len(cells),
        "headroom_pp": {"mean": round(float(head.mean()), 3), "max": round(float(head.max()), 3)},
        "cells_with_headroom_over_0.5pp": int((head >= 0.5).sum()),
        "wins": dict(sorted(wins.items(), key=lambda kv: -kv[1])),
        "as_one_choice_for_all": as_default,
        "best_one_choice": {"setting": best_single, **as_default[best_single]},
    }


__all__ = ["DEFAULTS", "KNOB_GRID", "bench_knobs", "knob_hit_ratios", "knob_label", "knob_summary", "predicted_arms",
           "predicted_summary"]
