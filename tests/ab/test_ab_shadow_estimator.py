"""The live shadow estimator against simulation mode on the same traffic (documented error bounds).

Shadow mode with ``control_backend: sim`` runs the control on the simulator and estimates the
treatment from the hash-sampled key stream exactly as on a live Redis; simulation mode runs the
treatment for real. docs/ab.md states the bounds asserted here for a 5 % key sample.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from abtest_support import LARGE, SMALL, ab_config

from cachetuner.ab.config import load_ab_config
from cachetuner.ab.runner import run_ab
from cachetuner.ab.shadow import ShadowEstimator
from cachetuner.ab.validation import validate_shadow
from cachetuner.backend import RequestSample
from cachetuner.config import RedisConfig

REPO = Path(__file__).resolve().parents[2]

#: Documented bounds on |estimated - exact| mean delta at a 5 % key sample (docs/ab.md).
MAX_HIT_PP = 1.0
MAX_BYTE_HIT_PP = 1.5
MAX_P95_MS = 25.0  # or 20 % of the exact p95 delta, whichever is larger
MAX_P95_SHARE = 0.20
MAX_COST_SHARE = 0.02  # of the control's mean cost per interval


def _check(report: dict, control_mean_cost: float) -> None:
    (r,) = report["rates"]
    e = r["errors"]
    assert r["sampled_keys"] >= 1000
    assert e["hit_ratio_delta_pp"]["abs_error"] <= MAX_HIT_PP
    assert e["byte_hit_ratio_delta_pp"]["abs_error"] <= MAX_BYTE_HIT_PP
    p95 = e["p95_delta_ms"]
    assert p95["abs_error"] <= max(MAX_P95_MS, MAX_P95_SHARE * abs(p95["exact"]))
    assert e["cost_delta"]["abs_error"] <= MAX_COST_SHARE * control_mean_cost


def test_shadow_estimate_matches_simulation_on_a_shared_real_trace(shared_traces: Path) -> None:
    cfg = load_ab_config(REPO / "experiments" / "ab_shadow_validation.yaml")
    spec = {"trace": str(shared_traces / "cloudphysics" / "cloudPhysicsIO.csv"), "name": "cloudphysics",
            "format": "libcachesim-csv"}
    cfg = cfg.model_copy(update={"workloads": [spec], "horizon_intervals": 80})
    exact = run_ab(cfg.model_copy(update={"mode": "sim"}))
    report = validate_shadow(cfg, [0.05])
    _check(report, float(exact.control.series("cost").mean()))
    assert report["rates"][0]["verdict"] == report["exact_verdict"]


def test_shadow_reaches_the_same_verdict_as_simulation_on_a_clear_case() -> None:
    cfg = ab_config({"config": SMALL}, {"config": LARGE})
    exact = run_ab(cfg)
    report = validate_shadow(cfg, [0.05])
    _check(report, float(exact.control.series("cost").mean()))
    assert report["exact_verdict"] == report["rates"][0]["verdict"] == "better"


def test_identical_configs_estimate_the_control_exactly() -> None:
    """Difference estimator: when the treatment runs the control's config, the minis agree and the
    estimate is the measured control (no sampling error at all)."""
    cfg = ab_config({"config": SMALL}, {"config": SMALL}, mode="shadow",
                    shadow={"control_backend": "sim", "sample_rate": 0.05, "min_keys": 0})
    res = run_ab(cfg)
    for name in ("hit_ratio", "byte_hit_ratio", "p95_ms", "cost"):
        np.testing.assert_allclose(res.treatment.series(name), res.control.series(name), rtol=1e-9, atol=1e-9)


def test_a_coarser_upstream_sample_is_used_as_is() -> None:
    """The live replayer publishes a 1 % sample: the estimator must not resample it at its own 5 %."""
    cfg = RedisConfig(maxmemory=10_000_000)
    est = ShadowEstimator(cfg, cfg.evolve(maxmemory=20_000_000), rate=0.05)
    keys = np.arange(100, dtype=np.int64)
    sample = RequestSample(keys=keys, sizes=np.full(100, 100), timestamps=np.linspace(0, 1, 100),
                           ops=np.zeros(100, np.uint8), ttls=np.zeros(100), rate=0.01)
    mirror, treat = est.update(sample, 1.0)
    assert est.rate == 0.01
    assert mirror.gets == treat.gets == 100
