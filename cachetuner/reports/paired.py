"""Paired comparison of two controllers over suite cells: which is the cheaper, in how many cells, by how much.

Why paired: both controllers run on the same cell (trace, prices, seed, key draw) and each cell's regret is priced
against the same best hindsight cost, so the per-cell difference of two regrets is the difference of their costs in
units of that cell's best cost; the cell's own difficulty cancels. Why a count and a sign test beside the mean: the
differences are mostly zero (both controllers make the same decisions) with a few large ones (a loop caught or
missed), so a mean can be decided by one cell while the count of cells each wins says how often, and the other way
round. The CI is Student's t on the cells' differences, which treats cells as independent draws: they are separate
runs, but a suite's cells share traces, so read it as the spread of these cells, not of all traffic. ``ci_by_trace``
resamples whole trace files instead (a cluster bootstrap), the interval those few traces support; the verdict still
reads the t interval.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from cachetuner.reports.intervals import t_interval

#: Two costs within this relative difference count as the same result (the same decisions up to float noise).
SAME_REL = 1e-6


def same_cost(a: float, b: float) -> bool:
    """Whether two costs count as the same result (within :data:`SAME_REL` of the larger)."""
    return abs(a - b) <= SAME_REL * max(abs(a), abs(b), 1e-300)

CHEAPER = "cheaper"
DEARER = "dearer"
NO_DIFFERENCE = "no significant difference"
#: The mean difference's CI spans zero but the sign test does not: one controller wins more of the cells that differ,
#: and a few large cells in the other direction even out the mean. Said, rather than folded into "no difference".
MORE_OFTEN_CHEAPER = "cheaper in more cells; mean not different"
MORE_OFTEN_DEARER = "dearer in more cells; mean not different"
#: The sign test's level for the two verdicts above (the CI is at 1 − alpha too).
SIGN_ALPHA = 0.05


@dataclass(frozen=True)
class PairedComparison:
    """Controller ``a`` against controller ``b`` over the cells both ran on (``diff`` = regret of a − regret of b)."""

    a: str
    b: str
    cells: int
    cheaper: int  # cells where a cost less than b
    dearer: int
    same: int
    mean_diff: float
    ci: tuple[float, float] | None  # None with fewer than two cells
    sign_p: float | None  # two-sided sign test on cheaper vs dearer (None when no cell differs)
    largest: dict[str, Any] | None  # the cell with the largest |diff|: trace, prices, seed, diff
    #: the mean difference's 95 % CI with whole traces resampled (cluster bootstrap), None with fewer than two traces:
    #: cells of one trace (its prices, seeds, rates, value sizes) are not independent draws, which the t interval
    #: assumes; this one treats each trace file as the unit
    ci_by_trace: tuple[float, float] | None = None
    traces: int = 0  # distinct trace files behind the cells

    @property
    def verdict(self) -> str:
        """``cheaper`` / ``dearer`` (a against b) when the mean difference's CI excludes zero; else, when the sign test
        on the cells that differ is significant, cheaper / dearer *in more cells* with the mean not different; else no
        significant difference."""
        if self.ci is not None and self.ci[1] < 0:
            return CHEAPER
        if self.ci is not None and self.ci[0] > 0:
            return DEARER
        if self.sign_p is not None and self.sign_p < SIGN_ALPHA:
            return MORE_OFTEN_CHEAPER if self.cheaper > self.dearer else MORE_OFTEN_DEARER
        return NO_DIFFERENCE

    def to_json(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, "cells": self.cells, "cheaper": self.cheaper, "dearer": self.dearer,
                "same": self.same, "mean_regret_diff": self.mean_diff,
                "ci": None if self.ci is None else [self.ci[0], self.ci[1]], "sign_test_p": self.sign_p,
                "verdict": self.verdict, "largest": self.largest,
                "ci_by_trace": None if self.ci_by_trace is None else [self.ci_by_trace[0], self.ci_by_trace[1]],
                "traces": self.traces}


#: Bootstrap resamples of the by-trace CI; seeded, so a result file always reads the same.
BOOTSTRAP_RESAMPLES = 4000


def trace_of(cell: dict[str, Any]) -> str:
    """The trace file behind a cell (``workload``, as ``evaluate`` writes it), else its label."""
    return str(cell.get("workload") or cell.get("trace"))


def _cluster_ci(diffs: np.ndarray, clusters: list[str], alpha: float, resamples: int = BOOTSTRAP_RESAMPLES,
                seed: int = 0) -> tuple[float, float] | None:
    """Percentile CI of the mean over cells when whole clusters (traces) are resampled with replacement."""
    names = list(dict.fromkeys(clusters))
    if len(names) < 2:
        return None
    index = {n: i for i, n in enumerate(names)}
    ids = np.array([index[c] for c in clusters])
    sums = np.bincount(ids, weights=diffs, minlength=len(names))
    counts = np.bincount(ids, minlength=len(names)).astype(float)
    pick = np.random.default_rng(seed).integers(0, len(names), size=(resamples, len(names)))
    means = sums[pick].sum(axis=1) / counts[pick].sum(axis=1)
    lo, hi = np.quantile(means, [alpha / 2, 1 - alpha / 2])
    return (float(lo), float(hi))


def compare_pair(cells: list[dict[str, Any]], a: str, b: str, *, alpha: float = 0.05) -> PairedComparison | None:
    """``a`` against ``b`` over the cells where both have a cost and a regret (None when there is no such cell)."""
    from scipy.stats import binomtest

    diffs: list[float] = []
    clusters: list[str] = []
    cheaper = dearer = same = 0
    largest: dict[str, Any] | None = None
    for c in cells:
        ta, tb = c["tuners"].get(a), c["tuners"].get(b)
        if ta is None or tb is None or ta.get("regret") is None or tb.get("regret") is None:
            continue
        d = float(ta["regret"]) - float(tb["regret"])
        if not math.isfinite(d):
            continue
        diffs.append(d)
        clusters.append(trace_of(c))
        ca, cb = float(ta["cost"]), float(tb["cost"])
        if same_cost(ca, cb):
            same += 1
        elif ca < cb:
            cheaper += 1
        else:
            dearer += 1
        if largest is None or abs(d) > abs(largest["diff"]):
            largest = {"trace": c.get("trace"), "prices": c.get("prices"), "seed": c.get("seed"), "diff": d,
                       **({"suite": c["suite"]} if "suite" in c else {})}
    if not diffs:
        return None
    arr = np.asarray(diffs)
    differ = cheaper + dearer
    sign_p = float(binomtest(cheaper, differ, 0.5).pvalue) if differ else None
    return PairedComparison(a, b, len(diffs), cheaper, dearer, same, float(arr.mean()), t_interval(arr, alpha), sign_p,
                            largest, _cluster_ci(arr, clusters, alpha), len(set(clusters)))


#: The references every suite result is paired against: the operator's config, and the daemon's default controller.
REFERENCES = ("static-default", "mrc")


def paired_against(cells: list[dict[str, Any]], references: str | tuple[str, ...] = REFERENCES) -> dict[str, dict[str, Any]]:
    """Every online controller in ``cells`` (not the hindsight references) against each of ``references`` it is not,
    keyed ``"A vs REFERENCE"`` (a pair already compared the other way round is not repeated); a reference no cell
    ran is skipped."""
    refs = (references,) if isinstance(references, str) else tuple(references)
    names = list(dict.fromkeys(t for c in cells for t in c["tuners"]))
    out: dict[str, dict[str, Any]] = {}
    for ref in refs:
        if ref not in names:
            continue
        for name in names:
            if name == ref or f"{ref} vs {name}" in out or any(c["tuners"].get(name, {}).get("hindsight") for c in cells):
                continue
            pc = compare_pair(cells, name, ref)
            if pc is not None:
                out[f"{name} vs {ref}"] = pc.to_json()
    return out


def log_paired_metrics(paired: dict[str, dict[str, Any]]) -> None:
    """The paired comparisons as metrics of the active MLflow run: ``paired.<a>_vs_<b>.{mean_regret_diff,cheaper,dearer}``."""
    import mlflow

    for k, v in paired.items():
        tag = k.replace(" vs ", "_vs_")
        mlflow.log_metrics({f"paired.{tag}.mean_regret_diff": v["mean_regret_diff"], f"paired.{tag}.cheaper": v["cheaper"],
                            f"paired.{tag}.dearer": v["dearer"]})


def paired_figure(cells: list[dict[str, Any]], pairs: list[str]) -> Any:
    """One panel per pair ``"A vs B"``: every cell's regret difference (A − B, pp), sorted, so the few cells that
    decide a mean stand out from the many where the two made the same decisions."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(pairs), 1, figsize=(7, 2.4 * max(len(pairs), 1)), squeeze=False)
    for ax, key in zip(axes[:, 0], pairs, strict=True):
        a, _, b = key.partition(" vs ")
        d = sorted(100 * (float(c["tuners"][a]["regret"]) - float(c["tuners"][b]["regret"])) for c in cells
                   if c["tuners"].get(a, {}).get("regret") is not None and c["tuners"].get(b, {}).get("regret") is not None)
        ax.bar(np.arange(len(d)), d, width=1.0, color=["tab:green" if x < 0 else "tab:red" for x in d])
        ax.axhline(0.0, color="k", lw=0.8)
        ax.set_ylabel("regret diff (pp)")
        ax.set_title(f"{key}: {len(d)} cells, below zero = {a} cheaper", fontsize=9)
    axes[-1, 0].set_xlabel("cells, sorted")
    fig.tight_layout()
    return fig


__all__ = ["BOOTSTRAP_RESAMPLES", "CHEAPER", "DEARER", "MORE_OFTEN_CHEAPER", "MORE_OFTEN_DEARER", "NO_DIFFERENCE", "REFERENCES",
           "PairedComparison", "compare_pair", "log_paired_metrics", "paired_against", "paired_figure", "same_cost", "trace_of"]
