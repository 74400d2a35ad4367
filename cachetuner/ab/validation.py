"""Validate the live shadow estimator against simulation mode on the same trace.

Simulation mode runs both arms exactly; shadow mode with ``control_backend: sim`` runs the same
control on the same simulator and *estimates* the treatment from the hash-sampled key stream, as it
would on a live Redis. The difference between the two treatment series is the estimator's error.
Use static treatments (a tuner or a fixed config) for a clean comparison: a learned treatment
decides from its (estimated) observations, so its decisions may legitimately differ.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from cachetuner.ab.config import ABConfig
from cachetuner.ab.result import ABResult
from cachetuner.ab.runner import run_ab
from cachetuner.ab.stats import METRICS

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
