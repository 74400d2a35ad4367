"""One t interval for every report (cachetuner.reports.intervals)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from cachetuner.reports.hotness_ablation import mean_ci
from cachetuner.reports.intervals import t_interval
from cachetuner.reports.suite import summarise_cells


def test_it_is_students_t_and_drops_what_is_not_a_number() -> None:
    xs = [0.01, 0.03, -0.02, 0.05, 0.00, 0.02, 0.04, 0.01]
    lo, hi = t_interval([*xs, None, float("nan"), float("inf")])
    half = 2.364624 * np.std(xs, ddof=1) / math.sqrt(8)  # t(0.975, 7 df), from a printed table
    assert (lo, hi) == pytest.approx((np.mean(xs) - half, np.mean(xs) + half), abs=1e-7)
    assert t_interval([1.0]) is None and t_interval([]) is None


def test_suite_summary_and_hotness_ablation_give_the_same_interval() -> None:
    """The suite summary used a normal 1.96 factor (15 % narrower at 8 cells) and the ablation a rounded table:
    both now read the same interval from the same values."""
    regrets = [0.002, 0.041, 0.0, 0.013, 0.007, -0.001, 0.025, 0.004]
    cells = [{"tuners": {"mrc": {"regret": r, "savings_vs_default": 0.1 + r, "hit_ratio": 0.5,
                                 "mean_maxmemory_bytes": 1.0}}} for r in regrets]
    ci = summarise_cells(cells)["mrc"]["regret"]["ci"]
    assert ci == pytest.approx(list(t_interval(regrets)))
    assert mean_ci(regrets)["ci"] == pytest.approx(ci)
    normal_half = 1.96 * np.std(regrets, ddof=1) / math.sqrt(8)
    assert (ci[1] - ci[0]) / 2 > 1.2 * normal_half


def test_suite_summary_regret_from_first_decision_needs_every_cell() -> None:
    """The mean and worst regret from the first decision on, over cells that all carry it; results written before it
    existed (no field in some cell) give None rather than a mean over a subset."""
    def cell(r: float, rfd: float | None) -> dict:
        t = {"regret": r, "savings_vs_default": 0.1, "hit_ratio": 0.5, "mean_maxmemory_bytes": 1.0}
        if rfd is not None:
            t["regret_from_first_decision"] = rfd
        return {"tuners": {"mrc": t}}

    s = summarise_cells([cell(0.03, 0.01), cell(0.05, 0.04), cell(0.00, -0.01)])["mrc"]
    assert s["regret_from_first_decision"] == pytest.approx({"mean": 0.04 / 3, "max": 0.04})
    assert s["regret"]["mean"] == pytest.approx(0.08 / 3)
    assert summarise_cells([cell(0.03, 0.01), cell(0.05, None)])["mrc"]["regret_from_first_decision"] is None
