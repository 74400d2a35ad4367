"""The one confidence interval of a mean that every report uses: Student's t over the finite values.

Why one helper: the suite summary used a normal 1.96 factor, the hotness ablation a rounded t table and the
paired comparison scipy's t quantile, so two tables of one run could disagree on the same cells. With a
suite's 8 or 26 cells the normal factor is 15 % or 5 % too narrow (t = 2.36 and 2.06).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np


def finite(xs: Iterable[float | None]) -> np.ndarray:
    """The values that are numbers (``None``, NaN and infinities dropped), as a float array."""
    return np.asarray([x for x in xs if x is not None and math.isfinite(x)], float)


def t_interval(xs: Iterable[float | None], alpha: float = 0.05) -> tuple[float, float] | None:
    """The ``1 − alpha`` Student's t interval of the mean of the finite values of ``xs``; ``None`` under two
    values. It treats the values as independent draws (see :mod:`cachetuner.reports.paired` for the by-trace
    interval that does not)."""
    a = finite(xs)
    if len(a) < 2:
        return None
    from scipy.stats import t as student_t

    half = float(student_t.ppf(1 - alpha / 2, len(a) - 1)) * float(a.std(ddof=1)) / math.sqrt(len(a))
    m = float(a.mean())
    return (m - half, m + half)
