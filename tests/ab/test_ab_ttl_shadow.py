"""Shadow-mode TTL A/B: the control serves (simulator, or the replayer into a real Redis read back with
PromQL), both TTL policies run on mini caches fed the same hash-sampled mirrored stream."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from abtest_support import TTL_CFG as CFG
from abtest_support import TTL_ENV as ENV

from cachetuner.ab.config import ABConfig, load_ab_config
from cachetuner.ab.runner import run_ab
from cachetuner.live.stack import LocalStack


def shadow_ab(control: str, treatment: str, mode: str = "shadow", **shadow: object) -> ABConfig:
    return ABConfig.model_validate({
        "name": "ttl-shadow", "mode": mode, "horizon_intervals": 30, "warmup_intervals": 2, "primary_metric": "hit_ratio",
        "env": ENV, "control": {"config": CFG, "ttl": control}, "treatment": {"config": CFG, "ttl": treatment},
        "shadow": {"control_backend": "sim", "sample_rate": 0.1, "min_keys": 0, **shadow}, "tracking": {"enabled": False},
    })  # fmt: skip


def test_sim_control_shadow_ttl_ab_matches_sim_mode() -> None:
    """Served control = the sim-mode control exactly; the estimated delta is close to sim mode's."""
    shadow = run_ab(shadow_ab("fixed:3600", "fixed:10")).to_json()
    sim = run_ab(shadow_ab("fixed:3600", "fixed:10", mode="sim")).to_json()
    for key in ("hit_ratio_delta_pp", "p95_delta_ms", "p99_delta_ms", "stale_share_delta_pp"):
        lo, hi = shadow[key]["ci"]
        assert lo <= shadow[key]["mean"] <= hi, key
    assert shadow["mode"] == "shadow" and shadow["intervals"] == 30
    # the served control is the very run sim mode makes of its control
    assert shadow["control_totals"] == sim["control_totals"]
    assert shadow["mean_ttl_s"] == {"control": 3600.0, "treatment": 10.0}
    # a 10 s TTL on keys that return after minutes costs hits, seen by the minis as by sim mode
    assert shadow["hit_ratio_delta_pp"]["ci"][1] < 0 and shadow["verdict"] == "worse"
    assert abs(shadow["hit_ratio_delta_pp"]["mean"] - sim["hit_ratio_delta_pp"]["mean"]) < 3.0
    sh = shadow["shadow"]
    assert sh["control_backend"] == "sim" and sh["sample_rate"] == 0.1 and sh["sampled_keys"] > 500
    assert abs(sh["estimator_error"]["control"]["hit_ratio_pp"]) < 5.0
    assert sh["estimator_error"]["control"]["mean_ttl_s"] == 0.0
    t = shadow["tenants"]["default"]
    assert set(t) == {"hit_ratio_delta_pp", "p95_delta_ms", "p95_ok_share"} and len(t["p95_delta_ms"]["ci"]) == 2


def test_aa_shadow_ttl_is_exactly_zero() -> None:
    """Same policy in both minis: every delta is exactly 0 (common random numbers, same stream)."""
    out = run_ab(shadow_ab("rules", "rules")).to_json()
    assert out["hit_ratio_delta_pp"]["mean"] == 0.0 and out["p99_delta_ms"]["mean"] == 0.0
    assert out["stale_share_delta_pp"]["mean"] == 0.0
    assert out["verdict"] == "no significant difference"


def test_example_config_is_a_live_shadow_ttl_ab() -> None:
    cfg = load_ab_config("experiments/ab_ttl_shadow.yaml")
    assert cfg.is_ttl and cfg.mode == "shadow" and cfg.shadow.control_backend == "live"


TINY = {
    "name": "tiny-ab",
    "duration_s": 240,
    "tenants": [
        {"name": "gold", "qos": "gold", "trace": "synthetic:zipf", "rate": 40, "seed": 1, "n_biz": 2,
         "params": {"n_requests": 9600, "n_keys": 400, "alpha": 1.1, "sizes": "fixed:1000"}},
        {"name": "bronze", "qos": "bronze", "trace": "synthetic:zipf", "rate": 40, "seed": 3,
         "params": {"n_requests": 9600, "n_keys": 6000, "alpha": 0.8, "sizes": "fixed:1000"}},
    ],
}  # fmt: skip


@pytest.fixture()
def stack(tmp_path: Path) -> Iterator[LocalStack]:
    with LocalStack(tmp_path / "stack", maxmemory=64 * 1024 * 1024) as s:
        yield s


@pytest.mark.integration
def test_live_control_shadow_ttl_ab(stack: LocalStack, tmp_path: Path) -> None:
    """The control's replay serves a real Redis (read back with PromQL); fixed:5 vs fixed:600 on the minis."""
    import yaml

    workload = tmp_path / "tiny.yaml"
    workload.write_text(yaml.safe_dump(TINY))
    cfg = ABConfig.model_validate({
        "name": "ttl-shadow-live", "mode": "shadow", "horizon_intervals": 14, "warmup_intervals": 2,
        "primary_metric": "hit_ratio", "tenants": str(workload), "memory_share": 0.5,
        "control": {"config": CFG, "ttl": "fixed:600"}, "treatment": {"config": CFG, "ttl": "fixed:5"},
        "env": {"interval_s": 15, "whatif": {"enabled": False}},
        "shadow": {"control_backend": "live", "sample_rate": 0.25, "min_keys": 0, "stack_dir": str(stack.dir),
                   "speedup": 15},
        "tracking": {"enabled": False},
    })  # fmt: skip
    out = run_ab(cfg).to_json()
    assert out["intervals"] == 14
    live = out["shadow"]["live"]
    assert live["scrape_aligned"] and live["wall_interval_s"] == 1.0
    # the mirror came back (near) whole: the drain loses at most a poll's entries when Redis evicts the stream
    assert live["mirrored_requests_expected"] >= live["mirrored_requests"] >= 0.97 * live["mirrored_requests_expected"] > 1000
    served, err = out["shadow"]["served_control"], out["shadow"]["estimator_error"]["control"]
    assert 0.3 < served["hit_ratio"] < 1.0 and served["p95_ms"] > 0
    assert abs(err["hit_ratio_pp"]) < 10.0, out["shadow"]  # measured +3 to +8 pp (Redis memory vs the model)
    # the served mean TTL is measured from the stream (what the real writes carried): 600 s x the class
    # factor (gold 1.5, bronze 0.7) of each write; the treatment's is 5 s x the same mix, 120 times less
    assert 0.7 * 600 < served["mean_ttl_s"] < 1.5 * 600 and abs(err["mean_ttl_s"]) < 0.1 * served["mean_ttl_s"]
    assert out["mean_ttl_s"]["treatment"] == pytest.approx(served["mean_ttl_s"] / 120, rel=0.1)
    assert out["hit_ratio_delta_pp"]["ci"][1] < -5.0 and out["verdict"] == "worse"
    for name in ("gold", "bronze"):
        t = out["tenants"][name]
        assert len(t["hit_ratio_delta_pp"]["ci"]) == 2 and len(t["p95_delta_ms"]["ci"]) == 2
    assert out["tenants"]["gold"]["hit_ratio_delta_pp"]["mean"] < 0
    assert len(out["p99_delta_ms"]["ci"]) == 2 and len(out["stale_share_delta_pp"]["ci"]) == 2
