"""Re-timing a trace under a diurnal load shape (``rate_profile: diurnal:PERIOD_S,AMPLITUDE``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cachetuner.errors import ConfigError, TraceError
from cachetuner.traces import read_trace
from cachetuner.traces.rate_profile import parse_rate_profile

SHARED = Path(__file__).resolve().parents[3] / "shared" / "traces"


def test_arrivals_follow_the_shape_and_keep_the_mean_rate() -> None:
    p = parse_rate_profile("diurnal:600,0.8")
    rate, n = 50.0, 120_000  # 2,400 s at the mean rate: four whole periods
    t = p.timestamps(n, rate)
    assert t[0] == 0.0 and np.all(np.diff(t) >= 0)
    assert np.abs(p.count_until(rate, t) - np.arange(n)).max() < 1e-3  # the inversion of N(t) is exact to 1/1000
    # requests per minute against the integral of the rate over that minute
    edges = np.arange(0.0, 2400.0 + 1, 60.0)
    counts, _ = np.histogram(t, bins=edges)
    want = np.diff(p.count_until(rate, edges))
    assert np.abs(counts - want).max() <= 1.0
    assert counts.max() > 1.7 * 60 * rate * 0.95 and counts.min() < 0.3 * 60 * rate * 1.05  # peak 1.8x, trough 0.2x
    # over whole periods the mean rate is the rate: the 120,000th request arrives at 2,400 s
    assert p.count_until(rate, np.array([2400.0]))[0] == pytest.approx(n)
    # amplitude 0 is the uniform timing
    assert np.allclose(parse_rate_profile("diurnal:600,0").timestamps(1000, rate), np.arange(1000) / rate)
    # a period much shorter than the trace (the grid guess is coarse there) is still exact after the Newton steps
    q = parse_rate_profile("diurnal:0.5,0.6")
    tq = q.timestamps(200_000, 100.0)
    assert np.abs(q.count_until(100.0, tq) - np.arange(len(tq))).max() < 1e-3 and np.all(np.diff(tq) >= 0)


def test_bursts_put_the_requests_in_each_periods_burst_and_keep_the_mean() -> None:
    """``bursts:P,D[,L]``: the share D of each period at (1 - L (1 - D)) / D times the mean rate, then L times it."""
    rate, n = 20.0, 72_000  # 3,600 s at the mean rate: six periods of 600 s
    quiet = parse_rate_profile("bursts:600,0.25")
    t = quiet.timestamps(n, rate)
    assert np.all(np.diff(t) >= 0) and t[0] == 0.0
    phase = np.mod(t, 600.0)
    assert phase.max() <= 150.0 + 1e-9  # nothing in the lulls
    counts, _ = np.histogram(t, bins=np.arange(0.0, 3600.0 + 1, 600.0))
    assert np.all(counts == 600 * rate)  # each period holds its mean share
    burst_rate = np.histogram(t, bins=np.arange(0.0, 150.0 + 1, 30.0))[0] / 30.0
    assert np.allclose(burst_rate, 4 * rate, atol=1 / 30)  # 1 / 0.25 = 4x the mean
    some = parse_rate_profile("bursts:600,0.25,0.2")
    assert some.spec == "bursts:600,0.25,0.2" and some.high == pytest.approx(3.4)  # (1 - 0.2 * 0.75) / 0.25
    ts = some.timestamps(n, rate)
    assert np.all(np.diff(ts) >= 0)
    in_lull = (np.mod(ts, 600.0) >= 150.0).sum() / 6  # per period: 450 s at 0.2 x 20 req/s
    assert in_lull == pytest.approx(450 * 0.2 * rate, abs=1)
    assert np.array_equal(parse_rate_profile("bursts:600,1").timestamps(100, rate), np.arange(100) / rate)


@pytest.mark.parametrize(("spec", "needle"), [
    ("diurnal:300", "PERIOD_S,AMPLITUDE"),
    ("weekly:300,0.5", "unknown rate profile kind 'weekly'; valid: diurnal, bursts"),
    ("diurnal", "expected KIND:ARGS"),
    ("diurnal:300,1", "[0, 1)"),
    ("diurnal:300,-0.1", "[0, 1)"),
    ("diurnal:0,0.5", "period"),
    ("diurnal:inf,0.5", "finite"),
    ("bursts:600", "takes PERIOD_S,DUTY[,LOW]"),
    ("bursts:600,0", "DUTY"),
    ("bursts:600,0.5,1", "LOW"),
    ("diurnal:x,0.5", "must be numbers"),
])  # fmt: skip
def test_a_bad_profile_is_one_line_naming_it(spec: str, needle: str) -> None:
    with pytest.raises(TraceError, match=r"rate profile") as e:
        parse_rate_profile(spec)
    assert needle in str(e.value) and "\n" not in str(e.value) and spec in str(e.value)


def test_read_trace_moves_only_the_arrival_times() -> None:
    plain = read_trace("bundled:web07", rate=100.0)
    swung = read_trace("bundled:web07", rate=100.0, rate_profile="diurnal:300,0.8")
    assert np.array_equal(plain.keys, swung.keys) and np.array_equal(plain.sizes, swung.sizes)
    assert swung.meta["rate_profile"] == "diurnal:300,0.8" and "diurnal:300,0.8" in swung.meta["timing"]
    assert np.allclose(swung.timestamps, parse_rate_profile("diurnal:300,0.8").timestamps(len(plain), 100.0))
    # a trace with its own clock is re-timed only with a mean rate given; a generated workload has its own arrivals
    csv = SHARED / "cloudphysics" / "cloudPhysicsIO.csv"
    with pytest.raises(TraceError, match="has its own timestamps: give a mean rate"):
        read_trace(csv, rate_profile="diurnal:300,0.5")
    timed = read_trace(csv, rate=200.0, rate_profile="diurnal:300,0.5", limit=20_000)
    assert timed.meta["rate_profile"] == "diurnal:300,0.5"
    with pytest.raises(TraceError, match="generated workload has its own arrivals"):
        read_trace("synthetic:zipf", rate_profile="diurnal:300,0.5")


def test_workloads_and_suites_take_the_profile() -> None:
    from cachetuner.agent.config import TrainConfig
    from cachetuner.env.config import WorkloadSpec
    from cachetuner.env.sim_backend import load_workload
    from cachetuner.reports.evaluate import evaluation_env
    from cachetuner.reports.suite import SuiteTrace
    from cachetuner.yamlconfig import validate

    spec = WorkloadSpec(trace="bundled:web07", rate=100.0, rate_profile="diurnal:300,0.8")
    assert load_workload(spec).meta["rate_profile"] == "diurnal:300,0.8"
    assert "rate_profile" not in load_workload(WorkloadSpec(trace="bundled:web07", rate=100.0)).meta
    with pytest.raises(ConfigError, match=r"env\.workloads\.0\.rate_profile.*amplitude"):
        validate(TrainConfig, {"experiment": "x", "total_timesteps": 1, "env": {"workloads": [
            {"trace": "bundled:web07", "rate_profile": "diurnal:300,1.5"}]}}, "exp.yaml")
    tr = SuiteTrace(trace="bundled:web07", rate=100.0, rate_profile="diurnal:300,0.8")
    cfg = TrainConfig.model_validate({"experiment": "x", "total_timesteps": 1})
    env_cfg, _ = evaluation_env(cfg, trace=tr.trace, rate=tr.rate, rate_profile=tr.rate_profile)
    assert env_cfg.workloads[0].rate_profile == "diurnal:300,0.8"
    with pytest.raises(ConfigError, match="--rate-profile"):
        evaluation_env(cfg, trace="bundled:web07", rate_profile="diurnal:300")
    with pytest.raises(ConfigError, match="--rate-profile: only with --trace"):
        evaluation_env(cfg, rate_profile="diurnal:300,0.5")


def test_the_cli_option_is_checked_before_the_trace_is_read() -> None:
    p = subprocess.run([sys.executable, "-m", "cachetuner.cli.main", "trace", "info", "--trace", "bundled:web07",
                        "--rate", "100", "--rate-profile", "diurnal:300,0.8", "--json"], capture_output=True, text=True,
                       timeout=120, check=False)
    assert p.returncode == 0, p.stderr
    assert "diurnal:300,0.8" in p.stdout
    p = subprocess.run([sys.executable, "-m", "cachetuner.cli.main", "simulate", "--rate-profile", "diurnal:1,2"],
                       capture_output=True, text=True, timeout=120, check=False)
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert p.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: --rate-profile: ")
