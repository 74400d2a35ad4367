"""``cachetuner bench recommend``: how good the offline recommendation is, on every shared trace.

Per trace: ``recommend`` from the sampled curves, then full replays of the recommended config, of the
env's static default (25 % of the working set, ``allkeys-lru``) and of a log grid of sizes x every policy
(the hindsight check). Reported: the recommendation's cost relative to the cheapest replayed grid point
(``regret``: negative when it beats the grid), its savings against the static default, how far the
predicted cost was from the replayed one, and its time next to one full replay (timed side by side).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from cachetuner.config import RedisConfig
from cachetuner.mrc.bench import read_shared, warm_up
from cachetuner.mrc.config import MRCConfig
from cachetuner.mrc.offline import default_bounds
from cachetuner.mrc.recommend import gets_per_hour, recommend, replay
from cachetuner.sim.params import SimParams
from cachetuner.sim.sizing import full_size

#: The env's static default: ``bounds.initial_fraction`` of the working set under ``allkeys-lru``.
DEFAULT_FRACTION = 0.25


def bench_recommend(
    traces: list[tuple[str, str]] | None = None,
    *,
    memory_per_gib_hour: float,
    per_miss: float,
    rate: float = 100.0,
    size_model: str | None = "fixed:4096",
    limit: int | None = 300_000,
    grid: int = 16,
    split: float | None = None,
    cfg: MRCConfig | None = None,
    on_trace: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """One JSON-ready dict: per trace and summarised (mean and worst regret, savings, prediction error).

    ``split`` (in (0, 1)): recommend from the first ``split`` of each trace and judge it on the rest (the
    static default, the grid and the replays all on the rest): an operator sizing from last week's traffic."""
    params = SimParams()
    rows: list[dict[str, Any]] = []
    for rel, trace in read_shared(traces, size_model=size_model, limit=limit, rate=rate, on_trace=on_trace):
        learn, judge = trace, trace
        if split is not None:
            k = int(split * len(trace))
            learn, judge = trace.slice(0, k), trace.slice(k, len(trace))
        default = RedisConfig(maxmemory=int(DEFAULT_FRACTION * full_size(judge, params)))
        warm_up(trace, cfg or MRCConfig(), params)
        t0 = time.perf_counter()
        rec = recommend(learn, memory_per_gib_hour=memory_per_gib_hour, per_miss=per_miss, cfg=cfg, params=params,
                        verify=False)
        t_rec = time.perf_counter() - t0
        gph = gets_per_hour(judge)
        t1 = time.perf_counter()
        got = replay(judge, RedisConfig(maxmemory=rec.maxmemory, maxmemory_policy=rec.policy), rec, params,  # type: ignore[arg-type]
                     "recommended", gets_per_hour=gph)
        t_one = time.perf_counter() - t1
        base = replay(judge, default, rec, params, "static-default", gets_per_hour=gph)
        lo, hi = rec.bounds if split is None else default_bounds(judge, params)
        sizes = np.unique(np.geomspace(lo, hi, grid).round().astype(np.int64))
        points = [replay(judge, RedisConfig(maxmemory=int(s), maxmemory_policy=p), rec, params, "grid", gets_per_hour=gph)  # type: ignore[arg-type]
                  for p in rec.cost.cost for s in sizes]
        best = min(points, key=lambda r: r.cost_per_hour)
        rows.append({
            "trace": rel,
            "requests": rec.requests,
            "recommended": {"maxmemory": rec.maxmemory, "maxmemory_policy": rec.policy},
            "best_on_grid": {"maxmemory": best.maxmemory, "maxmemory_policy": best.policy},
            "regret": round(got.cost_per_hour / best.cost_per_hour - 1, 6),
            "savings_vs_default": round(1 - got.cost_per_hour / base.cost_per_hour, 6),
            "grid_savings_vs_default": round(1 - best.cost_per_hour / base.cost_per_hour, 6),
            "predicted_cost_error": round(rec.cost.best_cost / got.cost_per_hour - 1, 6),  # with split: learned vs judged
            "hit_ratio": {"predicted": round(rec.predicted_hit_ratio, 6), "replayed": round(got.hit_ratio, 6)},
            "recommend_cost_vs_one_replay": round(t_rec / max(t_one, 1e-9), 3),
        })
    reg = np.array([r["regret"] for r in rows])
    err = np.abs([r["predicted_cost_error"] for r in rows])
    return {
        "prices": {"memory_per_gib_hour": memory_per_gib_hour, "per_miss": per_miss},
        "rate": rate, "size_model": size_model or "native", "limit": limit, "grid": grid, "split": split,
        "sample_rate": (cfg or MRCConfig()).rate,
        "traces": rows,
        "summary": {
            "regret": {"mean": round(float(reg.mean()), 6), "max": round(float(reg.max()), 6),
                       "beat_the_grid": int(np.sum(reg < 0))},
            "savings_vs_default": {"mean": round(float(np.mean([r["savings_vs_default"] for r in rows])), 6),
                                   "grid_mean": round(float(np.mean([r["grid_savings_vs_default"] for r in rows])), 6)},
            "predicted_cost_error": {"mean_abs": round(float(err.mean()), 6), "max_abs": round(float(err.max()), 6)},
            "recommend_cost_vs_one_replay_mean": round(float(np.mean([r["recommend_cost_vs_one_replay"] for r in rows])), 3),
        },
    }


__all__ = ["DEFAULT_FRACTION", "bench_recommend"]
