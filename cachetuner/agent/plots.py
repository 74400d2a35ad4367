"""Time-series plots of evaluation episodes (one figure per quantity, one line per tuner)."""

from __future__ import annotations

from typing import Any

from cachetuner.config import REDIS_POLICIES, SIM_ONLY_POLICIES
from cachetuner.evaluation.episode import IntervalRecord

_POLICY_ORDER = list(REDIS_POLICIES) + list(SIM_ONLY_POLICIES)


def episode_figures(runs: dict[str, list[IntervalRecord]], title: str = "") -> dict[str, Any]:
    """``{"hit_ratio": fig, "maxmemory": fig, "policy": fig, "cost": fig}`` over the intervals of each run."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    used = sorted({r.policy for recs in runs.values() for r in recs}, key=_POLICY_ORDER.index)
    series = {
        "hit_ratio": ("hit ratio", lambda r: r.hit_ratio),
        "maxmemory": ("maxmemory (MiB)", lambda r: r.maxmemory / 2**20),
        "policy": ("maxmemory-policy", lambda r: used.index(r.policy)),
        "cost": ("cost per interval", lambda r: r.cost.get("total", 0.0)),
    }
    figs: dict[str, Any] = {}
    for key, (label, fn) in series.items():
        fig, ax = plt.subplots(figsize=(9, 3.2))
        for i, (name, recs) in enumerate(runs.items()):
            xs = [r.interval for r in recs]
            ys = [fn(r) for r in recs]
            if key == "policy":
                ax.step(xs, [y + 0.06 * (i - len(runs) / 2) for y in ys], where="post", label=name)
            else:
                ax.plot(xs, ys, label=name, lw=1.2)
        if key == "policy":
            ax.set_yticks(range(len(used)), used)
        ax.set_xlabel("interval")
        ax.set_ylabel(label)
        ax.set_title(f"{label}{' - ' + title if title else ''}")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="best")
        figs[key] = fig
    return figs
