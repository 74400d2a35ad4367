"""Figures of an A/B run: both arms over time, and the CI of every delta."""

from __future__ import annotations

from typing import Any

import numpy as np

from cachetuner.ab.result import ABResult
from cachetuner.ab.stats import METRICS

_PANELS = (
    ("hit_ratio", "hit ratio", 1.0),
    ("p95_ms", "p95 latency (ms)", 1.0),
    ("maxmemory_mb", "maxmemory (MiB)", 1.0),
    ("cost", "cost per interval", 1.0),
)
_COLORS = {"control": "#4c72b0", "treatment": "#dd8452"}


def timeseries_figure(result: ABResult) -> Any:
    """Hit ratio, p95, memory and cost per interval, both arms on each panel."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(11, 6.5), sharex=True)
    for ax, (name, label, scale) in zip(axes.flat, _PANELS, strict=True):
        for arm in (result.control, result.treatment):
            y = arm.series(name) * scale
            x = np.arange(1, len(y) + 1)
            style = "--" if arm.estimated else "-"
            suffix = " (estimated)" if arm.estimated else ""
            ax.plot(x, y, style, color=_COLORS[arm.role], lw=1.4, label=f"{arm.role}: {arm.description}{suffix}")
            if name == "maxmemory_mb":
                ax.plot(x, arm.series("used_memory_mb"), ":", color=_COLORS[arm.role], lw=1.0)
        ax.set_title(label + (" (dotted: used_memory)" if name == "maxmemory_mb" else ""), fontsize=10)
        ax.grid(alpha=0.3)
    for ax in axes[1]:
        ax.set_xlabel("interval")
    axes[0, 0].legend(fontsize=7, loc="lower right")
    fig.suptitle(f"A/B {result.name} ({result.mode} mode): verdict on {result.verdict.primary_metric}: "
                 f"{result.verdict.verdict}", fontsize=11)
    fig.tight_layout()
    return fig


def delta_ci_figure(result: ABResult) -> Any:
    """Mean paired difference (treatment - control) and its CI for each metric, one panel each
    (units differ), zero marked; the primary metric's panel is titled with the verdict."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    deltas = result.verdict.deltas
    fig, axes = plt.subplots(1, len(deltas), figsize=(3.0 * max(len(deltas), 1), 3.2), squeeze=False)
    for ax, (name, ci) in zip(axes[0], deltas.items(), strict=True):
        spec = METRICS[name]
        lo, hi = ci.ci
        good = (lo > 0) if spec["better"] == "higher" else (hi < 0)
        bad = (hi < 0) if spec["better"] == "higher" else (lo > 0)
        color = "#2ca02c" if good else "#d62728" if bad else "#7f7f7f"
        finite = np.isfinite([lo, hi]).all()
        if finite:
            ax.errorbar([0], [ci.mean], yerr=[[ci.mean - lo], [hi - ci.mean]], fmt="o", color=color, capsize=8, lw=2)
        else:
            ax.plot([0], [ci.mean], "o", color=color)
        ax.axhline(0, color="black", lw=0.8)
        ax.set_xticks([])
        ax.set_xlim(-1, 1)
        title = f"{spec['key']}\n({spec['better']} is better)"
        if name == result.verdict.primary_metric:
            title = f"PRIMARY: {title}"
        ax.set_title(title, fontsize=9)
        ax.set_ylabel(spec["unit"], fontsize=8)
        ax.grid(alpha=0.3, axis="y")
    method = "always-valid mSPRT" if result.verdict.method == "msprt" else "block bootstrap"
    fig.suptitle(f"treatment - control, {100 * (1 - next(iter(deltas.values())).alpha):.0f}% CI ({method}), "
                 f"{result.verdict.intervals}/{result.verdict.horizon} intervals", fontsize=10)
    fig.tight_layout()
    return fig


def cumulative_cost_figure(result: ABResult) -> Any:
    """Running total of the cost difference: where the treatment gains or loses over the run."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    d = np.cumsum(result.treatment.series("cost") - result.control.series("cost"))
    fig, ax = plt.subplots(figsize=(7, 3))
    ax.plot(np.arange(1, len(d) + 1), d, color="#8172b3")
    ax.axhline(0, color="black", lw=0.8)
    ax.set_xlabel("interval")
    ax.set_ylabel("cumulative cost delta")
    ax.set_title("treatment - control, cumulative cost (negative = treatment cheaper)", fontsize=10)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def ttl_figure(result: ABResult) -> Any:
    """TTL A/B: hit ratio, share of hits served stale and mean TTL of the writes, per interval."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(3, 1, figsize=(9, 7), sharex=True)
    for arm in (result.control, result.treatment):
        for ax, key in zip(axes, ("hit_ratio", "stale_share", "mean_ttl_s"), strict=True):
            ax.plot(arm.series(key), label=arm.description, lw=1)
            ax.set_ylabel(key)
    axes[0].legend(fontsize=7)
    axes[-1].set_xlabel("interval")
    fig.tight_layout()
    return fig


def ab_figures(result: ABResult) -> dict[str, Any]:
    """Every figure logged with a run, by artifact name."""
    figs = {
        "ab_timeseries": timeseries_figure(result),
        "ab_delta_ci": delta_ci_figure(result),
        "ab_cumulative_cost": cumulative_cost_figure(result),
    }
    if result.control.records and "stale_share" in result.control.records[0]:
        figs["ab_ttl"] = ttl_figure(result)
    return figs
