"""``cachetuner recommend`` as a function: price the trace's curves, check the answer, log it to MLflow.

The arithmetic is :mod:`cachetuner.mrc.recommend`; this module turns the price options into dollars,
draws the figure (curves, cost per hour, the recommendation and its tolerance band, the replays) and
records the run (params, metrics, the JSON and the PNG).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from cachetuner.config import RedisConfig
from cachetuner.env.prices import PricesConfig
from cachetuner.mrc.config import MRCConfig
from cachetuner.mrc.recommend import ProgressFn, Recommendation, recommend
from cachetuner.sim.params import SimParams
from cachetuner.sim.sizing import full_size
from cachetuner.traces.trace import Trace

_MIB = float(1 << 20)


def run_recommend(
    trace: Trace,
    prices: PricesConfig,
    *,
    cfg: MRCConfig | None = None,
    bounds: tuple[int, int] | None = None,
    tolerance: float = 0.03,
    current: RedisConfig | None = None,
    verify: bool = True,
    grid: int = 0,
    tracking_uri: str | None = None,
    log: bool = True,
    plot: Path | None = None,
    on_progress: ProgressFn | None = None,
) -> tuple[dict[str, Any], Recommendation]:
    """Recommend, then (``log``) record an MLflow run ``recommend`` with the figure; the JSON-ready result
    (with ``mlflow_run_id`` when logged) and the :class:`Recommendation`."""
    params = SimParams()
    mem, miss = prices.resolve()
    budget = prices.budget_cap(full_size(trace, params))
    rec = recommend(trace, memory_per_gib_hour=mem, per_miss=miss, budget_bytes=budget, cfg=cfg, params=params,
                    bounds=bounds, tolerance=tolerance, current=current, verify=verify, grid=grid,
                    on_progress=on_progress)
    result = rec.to_json()
    result["prices"]["preset"] = prices.preset
    fig = recommendation_figure(rec)
    if plot is not None:
        fig.savefig(plot, dpi=110, bbox_inches="tight")
    if not log:
        import matplotlib.pyplot as plt

        plt.close(fig)
        return result, rec
    import mlflow

    from cachetuner.tracking import log_figure_png, run_name, setup_tracking

    setup_tracking(tracking_uri, experiment="recommend")
    with mlflow.start_run(run_name=run_name(trace.name, "recommend", 0)) as run:
        mlflow.set_tags({"kind": "recommend", "trace": trace.name})
        mlflow.log_params({"trace": trace.name, "requests": rec.requests, "prices": prices.preset,
                           "memory_per_gib_hour": mem, "per_miss": miss, "budget_bytes": str(budget),
                           "bounds": f"{rec.bounds[0]}..{rec.bounds[1]}", "tolerance": tolerance, "grid": grid,
                           "sample_rate": (cfg or MRCConfig()).rate,
                           "current": "" if current is None else f"{current.maxmemory}:{current.maxmemory_policy}"})
        metrics = {"recommended.maxmemory": rec.maxmemory, "recommended.predicted_hit_ratio": rec.predicted_hit_ratio,
                   "recommended.predicted_cost_per_hour": rec.cost.best_cost}
        for label, r in rec.replays.items():
            metrics.update({f"{label}.hit_ratio": r.hit_ratio, f"{label}.cost_per_hour": r.cost_per_hour})
        check = result.get("grid_check")
        if check and check["recommended_regret"] is not None:
            metrics["recommended.regret_vs_grid"] = check["recommended_regret"]
        mlflow.log_metrics({k: float(v) for k, v in metrics.items()})
        with tempfile.TemporaryDirectory() as d:
            p = Path(d) / "recommendation.json"
            p.write_text(json.dumps(result))
            mlflow.log_artifact(str(p), artifact_path="recommend")
        log_figure_png(fig, "recommend")
        result["mlflow_run_id"] = run.info.run_id
    return result, rec


def recommendation_figure(rec: Recommendation) -> Any:
    """Two panels over maxmemory (log): predicted hit ratio per policy, and cost per hour per policy, with the
    recommendation, its tolerance band and every replayed config (measured, so the prediction's error shows)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_h, ax_c) = plt.subplots(1, 2, figsize=(11, 4.2))
    mono = rec.curves.monotone()
    colours = {}
    for p in mono.policies:
        (line,) = ax_h.plot(rec.curves.sizes / _MIB, mono.hit[p], label=f"{p} (sampled curve)")
        colours[p] = line.get_color()
    for p, c in rec.cost.cost.items():
        ax_c.plot(rec.cost.sizes / _MIB, c, color=colours.get(p), label=p)
    for ax in (ax_h, ax_c):
        ax.axvspan(rec.band[0] / _MIB, rec.band[1] / _MIB, color="0.85", zorder=0,
                   label=f"within {rec.tolerance:.0%} of the optimum")
        ax.axvline(rec.maxmemory / _MIB, color="k", ls="--", lw=1, label=f"recommended: {rec.policy}")
        ax.set_xscale("log")
        ax.set_xlabel("maxmemory (MiB)")
    markers = {"recommended": "*", "current": "s", "grid": "."}
    shown: set[str] = set()
    for r in [*rec.replays.values(), *rec.grid]:
        lab = None if r.label in shown else f"{r.label} (replayed)"
        shown.add(r.label)
        ax_h.scatter([r.maxmemory / _MIB], [r.hit_ratio], marker=markers.get(r.label, "o"),
                     color=colours.get(r.policy, "k"), s=90 if r.label != "grid" else 25, zorder=3, label=lab)
        ax_c.scatter([r.maxmemory / _MIB], [r.cost_per_hour], marker=markers.get(r.label, "o"),
                     color=colours.get(r.policy, "k"), s=90 if r.label != "grid" else 25, zorder=3)
    ax_h.set_ylabel("GET hit ratio")
    ax_c.set_ylabel("$ per hour (memory + misses)")
    ax_h.legend(fontsize=7, loc="lower right")
    ax_c.legend(fontsize=7)
    fig.suptitle(f"{rec.trace}: {rec.policy} at {rec.maxmemory / _MIB:,.1f} MiB, "
                 f"predicted ${rec.cost.best_cost:,.4g}/h")
    fig.tight_layout()
    return fig


__all__ = ["recommendation_figure", "run_recommend"]
