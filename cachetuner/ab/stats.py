"""Paired statistics for A/B runs: per-interval differences, block-bootstrap CIs, an always-valid
sequential alternative (mSPRT), and the verdict.

Why paired: both arms see exactly the same request stream interval by interval, so the
difference ``treatment - control`` of interval *i* removes the workload's own variation (a burst
hits both arms). Why a *block* bootstrap: consecutive intervals share cache state and traffic
regime, so differences are autocorrelated; resampling single intervals would understate the
variance and make the CI too narrow. A circular block bootstrap (Politis & Romano 1992) resamples
runs of ``block_len`` consecutive intervals instead, keeping the short-range dependence inside
each block.

Peeking: with ``method="fixed-horizon"`` (the default) the verdict is only issued once the
declared number of intervals has been observed; any earlier look reports
``inconclusive (horizon not reached)`` whatever its CI says. ``method="msprt"`` replaces the
bootstrap CI by an always-valid confidence sequence (mixture SPRT, Johari et al. 2017), which may
be looked at after every interval without inflating the error rate; it stops early as soon as the
sequence excludes zero. Its normal model is applied to *block means* (not single intervals), which
makes the units approximately independent.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

Direction = Literal["higher", "lower"]

#: Metrics compared by the A/B harness, how they are reported, and which direction is better.
#: ``scale`` turns a per-interval value difference into the reported unit (ratios -> percentage points).
METRICS: dict[str, dict] = {
    "hit_ratio": {"better": "higher", "scale": 100.0, "unit": "pp", "key": "hit_ratio_delta_pp"},
    "byte_hit_ratio": {"better": "higher", "scale": 100.0, "unit": "pp", "key": "byte_hit_ratio_delta_pp"},
    "p95_ms": {"better": "lower", "scale": 1.0, "unit": "ms", "key": "p95_delta_ms"},
    "cost": {"better": "lower", "scale": 1.0, "unit": "cost units / interval", "key": "cost_delta"},
}

#: Units (block means) the mSPRT sequence needs before its first look (plug-in variance burn-in).
MSPRT_MIN_UNITS = 10

BETTER = "better"
WORSE = "worse"
NO_DIFFERENCE = "no significant difference"
INCONCLUSIVE = "inconclusive (horizon not reached)"
VERDICTS = (BETTER, WORSE, NO_DIFFERENCE, INCONCLUSIVE)


def paired_differences(control: np.ndarray, treatment: np.ndarray) -> np.ndarray:
    """``treatment - control`` per interval; both arrays must be aligned on the same intervals."""
    c = np.asarray(control, dtype=np.float64)
    t = np.asarray(treatment, dtype=np.float64)
    if c.shape != t.shape:
        raise ValueError(f"arms are not paired: control has {c.shape}, treatment {t.shape}")
    return t - c


def auto_block_len(d: np.ndarray | int) -> int:
    """Block length for the circular block bootstrap.

    Given a series: the automatic choice of Politis & White (2004), with the correction of Patton,
    Politis & White (2009), which grows the block with the series' autocorrelation (an
    uncorrelated series gets ~1, an AR(1) with phi=0.5 ~n^(1/3)·1.6). Given only a length: the
    rule-of-thumb ``ceil(n^(1/3))``. The result lies in ``[1, n // 3]`` (at least 3 blocks).
    """
    if isinstance(d, int | np.integer):
        n = int(d)
        return 1 if n <= 1 else int(min(max(1, n // 3), math.ceil(n ** (1.0 / 3.0))))
    x = np.asarray(d, dtype=np.float64)
    n = len(x)
    if n < 6:
        return 1
    x = x - x.mean()
    var0 = float(x @ x) / n
    if var0 <= 0:
        return 1
    k_n = max(5, math.ceil(math.sqrt(math.log10(n))))
    m_max = math.ceil(math.sqrt(n)) + k_n
    lags = min(n - 1, m_max + k_n)
    acov = np.array([float(x[: n - k] @ x[k:]) / n for k in range(lags + 1)])
    rho = acov / var0
    crit = 2.0 * math.sqrt(math.log10(n) / n)
    m_hat = m_max
    for m in range(lags - k_n + 1):
        if np.all(np.abs(rho[m + 1 : m + 1 + k_n]) < crit):
            m_hat = m
            break
    big_m = min(2 * max(m_hat, 1), lags)
    k = np.arange(1, big_m + 1)
    t = k / big_m
    lam = np.where(t <= 0.5, 1.0, 2.0 * (1.0 - t))
    g = 2.0 * float(np.sum(lam * k * acov[1 : big_m + 1]))
    spec0 = acov[0] + 2.0 * float(np.sum(lam * acov[1 : big_m + 1]))
    d_cb = (4.0 / 3.0) * spec0**2
    if d_cb <= 0 or g == 0:
        return 1
    b = (2.0 * g**2 / d_cb) ** (1.0 / 3.0) * n ** (1.0 / 3.0)
    return int(min(max(1, round(b)), max(1, n // 3)))


def default_block_len(d: np.ndarray) -> int:
    """Three times the Politis-White length, at most ``n // 4`` (at least four blocks).

    Politis-White minimises the MSE of the variance estimate, but on 60-120 autocorrelated
    intervals that variance is biased low enough to double the false-positive rate; longer blocks
    trade some power for calibration (measured in docs/ab.md, ``cachetuner bench ab-calibration``).
    """
    n = len(d)
    return min(max(1, n // 4), 3 * auto_block_len(d)) if n >= 8 else 1


def block_bootstrap_means(d: np.ndarray, *, block_len: int, n_resamples: int, seed: int) -> np.ndarray:
    """Means of ``n_resamples`` circular-block-bootstrap resamples of ``d`` (length preserved)."""
    d = np.asarray(d, dtype=np.float64)
    n = len(d)
    if n == 0:
        return np.full(n_resamples, np.nan)
    b = max(1, min(block_len, n))
    n_blocks = math.ceil(n / b)
    rng = np.random.default_rng(seed)
    starts = rng.integers(0, n, size=(n_resamples, n_blocks))
    idx = (starts[:, :, None] + np.arange(b)[None, None, :]).reshape(n_resamples, -1)[:, :n] % n
    return d[idx].mean(axis=1)


@dataclass
class DeltaCI:
    """Mean paired difference (treatment - control) in reporting units with its CI."""

    metric: str
    mean: float
    ci: tuple[float, float]
    n: int
    method: str
    alpha: float
    block_len: int = 1
    #: mSPRT only: the interval at which the confidence sequence first excluded zero (None: never).
    stopped_at: int | None = None

    @property
    def excludes_zero(self) -> bool:
        lo, hi = self.ci
        return bool(np.isfinite(lo) and np.isfinite(hi) and (lo > 0 or hi < 0))

    def to_json(self) -> dict:
        return {"mean": self.mean, "ci": [self.ci[0], self.ci[1]]}


def bootstrap_ci(
    d: np.ndarray,
    *,
    metric: str = "",
    alpha: float = 0.05,
    n_resamples: int = 2000,
    block_len: int | None = None,
    seed: int = 0,
    scale: float = 1.0,
) -> DeltaCI:
    """CI of the mean of ``d`` from a circular block bootstrap (seeded, so reproducible).

    The interval is ``mean ± t(1-α/2, blocks-1) · se*`` where ``se*`` is the standard deviation of
    the bootstrap means and ``blocks = n // block_len``. Plain percentile intervals under-cover
    badly on short autocorrelated series (measured: 30-56 % false positives at α=0.05 for AR(1)
    φ=0.5-0.8 with single-interval resampling); the Student-t quantile on the number of blocks and
    a block three times the Politis-White length bring that down (see ``docs/ab.md``).
    """
    from scipy.stats import t as student_t

    d = np.asarray(d, dtype=np.float64) * scale
    n = len(d)
    bl = default_block_len(d) if block_len is None else max(1, int(block_len))
    if n == 0:
        return DeltaCI(metric, float("nan"), (float("nan"), float("nan")), 0, "block-bootstrap", alpha, bl)
    mean = float(d.mean())
    if n == 1:
        return DeltaCI(metric, mean, (-math.inf, math.inf), 1, "block-bootstrap", alpha, bl)
    means = block_bootstrap_means(d, block_len=bl, n_resamples=n_resamples, seed=seed)
    se = float(means.std(ddof=1))
    q = float(student_t.ppf(1 - alpha / 2, max(1, n // bl - 1)))
    return DeltaCI(metric, mean, (mean - q * se, mean + q * se), n, "block-bootstrap", alpha, bl)


def msprt_sequence(
    d: np.ndarray, *, alpha: float = 0.05, block_len: int = 1, tau: float | None = None, min_units: int = 10
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Always-valid confidence sequence for the mean of ``d`` (normal mixture SPRT).

    Units are non-overlapping block means of ``block_len`` intervals. For ``m`` units with running
    mean ``x̄`` and variance ``σ²`` (plug-in, floored), the ``1-α`` confidence sequence is
    ``x̄ ± sqrt((σ²(σ² + m τ²) / (m² τ²)) · log((σ² + m τ²) / (σ² α²)))`` (Johari, Pekelis &
    Walsh 2017, eq. for the normal mixture). ``τ²`` defaults to ``σ²`` of the full series (a unit
    effect-size prior). The plug-in variance is an approximation of the known-variance theory.
    Returns (units seen, lower bounds, upper bounds), one entry per completed block.
    """
    d = np.asarray(d, dtype=np.float64)
    b = max(1, int(block_len))
    m_total = len(d) // b
    if m_total == 0:
        return np.zeros(0, int), np.zeros(0), np.zeros(0)
    units = d[: m_total * b].reshape(m_total, b).mean(axis=1)
    m = np.arange(1, m_total + 1, dtype=np.float64)
    csum = np.cumsum(units)
    csq = np.cumsum(units**2)
    mean = csum / m
    var = np.maximum(csq / m - mean**2, 0.0) * np.where(m > 1, m / np.maximum(m - 1, 1), 1.0)
    floor = max(1e-12, 1e-6 * float(np.var(units)) if m_total > 1 else 1e-12)
    var = np.maximum(var, floor)
    t2 = float(tau**2) if tau is not None else max(float(np.var(units)), floor)
    half = np.sqrt(var * (var + m * t2) / (m**2 * t2) * np.log((var + m * t2) / (var * alpha**2)))
    # A plug-in variance from a handful of units is too noisy to trust: burn in before any look.
    half[m < min_units] = np.inf
    lo = np.maximum.accumulate(mean - half)
    hi = np.minimum.accumulate(mean + half)  # intersection over time: still valid, never widens
    return (m * b).astype(int), lo, hi


def msprt_ci(
    d: np.ndarray, *, metric: str = "", alpha: float = 0.05, block_len: int | None = None, scale: float = 1.0
) -> DeltaCI:
    """The confidence sequence at its last look, plus the first interval at which it excluded zero."""
    d = np.asarray(d, dtype=np.float64) * scale
    if block_len is None:
        # Twice Politis-White, but leave at least MSPRT_MIN_UNITS units to look at.
        bl = min(max(1, len(d) // MSPRT_MIN_UNITS), 2 * auto_block_len(d)) if len(d) >= 8 else 1
    else:
        bl = max(1, int(block_len))
    seen, lo, hi = msprt_sequence(d, alpha=alpha, block_len=bl, min_units=MSPRT_MIN_UNITS)
    if len(seen) == 0:
        return DeltaCI(metric, float(np.mean(d)) if len(d) else float("nan"), (-math.inf, math.inf), len(d),
                       "msprt", alpha, bl)
    excl = np.nonzero((lo > 0) | (hi < 0))[0]
    stopped = int(seen[excl[0]]) if len(excl) else None
    return DeltaCI(metric, float(d.mean()), (float(lo[-1]), float(hi[-1])), len(d), "msprt", alpha, bl, stopped)


@dataclass
class Verdict:
    """Outcome on the primary metric (treatment vs control) and every metric's delta CI."""

    verdict: str
    primary_metric: str
    deltas: dict[str, DeltaCI] = field(default_factory=dict)
    intervals: int = 0
    horizon: int = 0
    method: str = "fixed-horizon"

    def to_json(self) -> dict:
        out: dict = {"verdict": self.verdict, "primary_metric": self.primary_metric}
        for name, ci in self.deltas.items():
            out[METRICS[name]["key"]] = ci.to_json()
        out.update(intervals=self.intervals, horizon=self.horizon, method=self.method)
        return out


def direction_of(delta: DeltaCI, better: Direction) -> str:
    """``better``/``worse``/``no significant difference`` from a CI and the metric's good direction."""
    if not delta.excludes_zero:
        return NO_DIFFERENCE
    positive = delta.ci[0] > 0
    return BETTER if positive == (better == "higher") else WORSE


def compare(
    control: dict[str, np.ndarray],
    treatment: dict[str, np.ndarray],
    *,
    primary_metric: str = "cost",
    horizon: int,
    alpha: float = 0.05,
    method: Literal["fixed-horizon", "msprt"] = "fixed-horizon",
    n_resamples: int = 2000,
    block_len: int | None = None,
    seed: int = 0,
) -> Verdict:
    """Delta CIs for every metric in :data:`METRICS` present in both arms, and the verdict.

    ``control[m]`` / ``treatment[m]`` are per-interval series aligned on the same intervals. The
    verdict concerns ``primary_metric`` only; the other CIs are reported, not tested (so no
    multiple-comparison correction is needed for the verdict).
    """
    if primary_metric not in METRICS:
        raise ValueError(f"unknown primary metric {primary_metric!r}; valid: {', '.join(METRICS)}")
    deltas: dict[str, DeltaCI] = {}
    n = 0
    for i, (name, spec) in enumerate(METRICS.items()):
        if name not in control or name not in treatment:
            continue
        d = paired_differences(control[name], treatment[name])
        n = len(d)
        if method == "msprt":
            deltas[name] = msprt_ci(d, metric=name, alpha=alpha, block_len=block_len, scale=spec["scale"])
        else:
            deltas[name] = bootstrap_ci(
                d, metric=name, alpha=alpha, n_resamples=n_resamples, block_len=block_len, seed=seed + i,
                scale=spec["scale"],
            )
    if primary_metric not in deltas:
        raise ValueError(f"primary metric {primary_metric!r} missing from the arms' series")
    primary = deltas[primary_metric]
    better: Direction = METRICS[primary_metric]["better"]
    if method == "msprt":
        if primary.stopped_at is not None:
            # Intersected sequences never widen: once zero is excluded it stays excluded.
            verdict = direction_of(primary, better)
        elif n >= horizon:
            verdict = NO_DIFFERENCE
        else:
            verdict = INCONCLUSIVE
    else:
        verdict = INCONCLUSIVE if n < horizon else direction_of(primary, better)
    return Verdict(verdict, primary_metric, deltas, n, horizon, method)

