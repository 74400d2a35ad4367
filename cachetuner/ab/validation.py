"""Validate the live shadow estimator against simulation mode on the same trace.

Simulation mode runs both arms exactly; shadow mode with ``control_backend: sim`` runs the same
control on the same simulator and *estimates* the treatment from the hash-sampled key stream, as it
would on a live Redis. The difference between the two treatment series is the estimator's error.
Use static treatments (a tuner or a fixed config) for a clean comparison: a learned treatment
decides from its (estimated) observations, so its decisions may legitimately differ.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from cachetuner.ab.config import ABConfig
from cachetuner.ab.result import ABResult
from cachetuner.ab.runner import run_ab
from cachetuner.ab.stats import METRICS
from cachetuner.errors import ConfigError

#: Shortest A/A series :func:`calibration` takes (an A/B run needs at least 2 intervals: ``horizon_intervals``).
MIN_LENGTH = 2
#: Longest one (each bootstrap draws an ``n_resamples x n`` index array; 10,000 x 1,000 is 80 MB).
MAX_LENGTH = 10_000


def check_rates(rates: list[float], name: str = "rates") -> list[float]:
    """Shadow sampling rates: at least one, each in (0, 1]; a one-line :class:`ConfigError` naming ``name``."""
    if not rates:
        raise ConfigError(f"{name}: give at least one sampling rate, e.g. 0.01,0.05")
    for r in rates:
        if not 0 < r <= 1:  # NaN fails too
            raise ConfigError(f"{name}: a sampling rate is a share of the key space in (0, 1], got {r!r}")
    return rates


def check_calibration(lengths: list[int], phis: list[float], prefix: str = "") -> None:
    """A/A calibration grid: lengths in [MIN_LENGTH, MAX_LENGTH] intervals, AR(1) coefficients finite with
    ``|phi| < 1`` (a stationary series); a one-line :class:`ConfigError` naming ``prefix + 'lengths'`` / ``'phis'``."""
    if not lengths:
        raise ConfigError(f"{prefix}lengths: give at least one number of intervals, e.g. 30,60")
    for n in lengths:
        if not MIN_LENGTH <= n <= MAX_LENGTH:
            raise ConfigError(f"{prefix}lengths: a number of intervals must be in [{MIN_LENGTH}, {MAX_LENGTH:,}], got {n}")
    if not phis:
        raise ConfigError(f"{prefix}phis: give at least one AR(1) coefficient, e.g. 0,0.5")
    for phi in phis:
        if not (math.isfinite(phi) and abs(phi) < 1):
            raise ConfigError(f"{prefix}phis: an AR(1) coefficient must be finite with |phi| < 1 (a stationary "
                              f"series), got {phi!r}")  # fmt: skip

_SCALE = {"hit_ratio": 100.0, "byte_hit_ratio": 100.0, "p95_ms": 1.0, "cost": 1.0}


def estimator_error(exact: ABResult, shadow: ABResult) -> dict[str, dict[str, float]]:
    """Per metric: exact and estimated mean delta (reporting units), their absolute difference, and
    the mean absolute per-interval error of the treatment series."""
    out: dict[str, dict[str, float]] = {}
    n = min(exact.intervals, shadow.intervals)
    for name, spec in METRICS.items():
        s = _SCALE[name]
        d_exact = exact.verdict.deltas[name].mean
        d_est = shadow.verdict.deltas[name].mean
        te = exact.treatment.series(name)[:n] * s
        ts = shadow.treatment.series(name)[:n] * s
        out[spec["key"]] = {
            "exact": d_exact,
            "estimated": d_est,
            "abs_error": abs(d_est - d_exact),
            "interval_mae": float(np.mean(np.abs(ts - te))) if n else float("nan"),
        }
    return out


def validate_shadow(
    cfg: ABConfig, rates: list[float], *, env_override: Callable[[Any], Any] | None = None
) -> dict[str, Any]:
    """Run ``cfg`` in simulation mode once and in sim-backed shadow mode at every sampling rate."""
    check_rates(rates)
    exact = run_ab(cfg.model_copy(update={"mode": "sim"}), env_override=env_override)
    report: dict[str, Any] = {
        "experiment": cfg.name,
        "control": exact.control.description,
        "treatment": exact.treatment.description,
        "workload": exact.meta.get("workload_label"),
        "intervals": exact.intervals,
        "exact_verdict": exact.verdict.verdict,
        "rates": [],
    }
    for rate in rates:
        shadow_cfg = cfg.shadow.model_copy(update={"control_backend": "sim", "sample_rate": rate, "min_keys": 0})
        est = run_ab(cfg.model_copy(update={"mode": "shadow", "shadow": shadow_cfg}), env_override=env_override)
        report["rates"].append(
            {
                "sample_rate": est.meta["shadow_sample_rate"],
                "sampled_keys": est.meta["shadow_sampled_keys"],
                "verdict": est.verdict.verdict,
                "errors": estimator_error(exact, est),
            }
        )
    return report


def calibration(
    lengths: list[int], phis: list[float], *, reps: int = 400, alpha: float = 0.05, seed: int = 0,
    n_resamples: int = 1000,
) -> list[dict[str, float]]:
    """False-positive rate of each CI method on A/A differences that are zero-mean AR(1) noise
    (``x_t = φ x_{t-1} + ε_t``), the autocorrelation interval metrics of a cache show.

    A calibrated method excludes zero in about ``alpha`` of the runs. Reported for the block
    bootstrap (as used for fixed-horizon verdicts), for a naive i.i.d. percentile bootstrap (what
    the block bootstrap replaces) and for the mSPRT confidence sequence at its last look.
    """
    from cachetuner.ab.stats import block_bootstrap_means, bootstrap_ci, msprt_ci

    check_calibration(lengths, phis)
    rows = []
    for n in lengths:
        for phi in phis:
            rng = np.random.default_rng(seed)
            fp = {"block_bootstrap": 0, "iid_percentile_bootstrap": 0, "msprt": 0}
            for r in range(reps):
                e = rng.normal(size=n)
                x = np.empty(n)
                x[0] = e[0] / np.sqrt(1 - phi**2)
                for i in range(1, n):
                    x[i] = phi * x[i - 1] + e[i]
                fp["block_bootstrap"] += bootstrap_ci(x, alpha=alpha, n_resamples=n_resamples, seed=r).excludes_zero
                means = block_bootstrap_means(x, block_len=1, n_resamples=n_resamples, seed=r)
                lo, hi = np.quantile(means, [alpha / 2, 1 - alpha / 2])
                fp["iid_percentile_bootstrap"] += bool(lo > 0 or hi < 0)
                fp["msprt"] += msprt_ci(x, alpha=alpha).excludes_zero
            rows.append({"n": n, "phi": phi, **{k: v / reps for k, v in fp.items()}})
    return rows
