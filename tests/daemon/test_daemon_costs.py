"""The daemon's cost telemetry (daemon/costs.py) on simulator-backed targets: the measured cost is the env's cost
terms of every fresh interval, the curves' estimate prices the config in force and the baseline on the same curves,
and the baseline (the config the daemon found) survives a restart."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_daemon_loop_sim import ENV, make_cfg

from cachetuner.config import RedisConfig
from cachetuner.daemon.audit import read_audit
from cachetuner.daemon.costs import CostMeter
from cachetuner.daemon.loop import Daemon
from cachetuner.daemon.telemetry import DaemonMetrics
from cachetuner.env.config import EnvConfig
from cachetuner.metrics import MetricsSnapshot

MB = 1_000_000
GIB = float(1024**3)


def sample(d: Daemon, name: str, **labels: str) -> float:
    v = d.metrics.registry.get_sample_value(name, labels)
    return 0.0 if v is None else float(v)


def run_recorded(cfg: Any) -> tuple[Daemon, list[tuple[MetricsSnapshot, bool]]]:
    """Run the daemon, keeping every snapshot the cost meter measured (and whether it began with a change)."""
    d = Daemon(cfg)
    seen: list[tuple[MetricsSnapshot, bool]] = []
    meter = d.runners[0].costs
    assert meter is not None
    inner = meter.measure

    def measure(snap: MetricsSnapshot, *, changed: bool) -> dict[str, float]:
        seen.append((snap, changed))
        return inner(snap, changed=changed)

    meter.measure = measure  # type: ignore[method-assign]
    d.run()
    return d, seen


def test_measured_cost_is_the_reward_terms_of_every_fresh_interval(tmp_path: Path) -> None:
    cfg = make_cfg(tmp_path, policy={"name": "mrc"}, max_iterations=30)
    d, seen = run_recorded(cfg)
    rw = EnvConfig().reward  # no policy.env_config: the env defaults' prices, in the reward's units
    assert len(seen) == 30 == sample(d, "cachetuner_daemon_costed_intervals_total", target="t0")
    memory = sum(rw.memory_cost_per_gb_hour * s.maxmemory / GIB * s.interval_s / 3600 for s, _ in seen)
    misses = sum(max(s.misses - s.l2_hits, 0) for s, _ in seen)
    assert sample(d, "cachetuner_daemon_cost_total", target="t0", part="memory") == pytest.approx(memory, rel=1e-9)
    assert sample(d, "cachetuner_daemon_cost_total", target="t0", part="miss") == pytest.approx(rw.miss_cost * misses)
    # one switch price per interval that began with an applied change: every change but possibly the last step's
    applied = [r for r in read_audit(cfg.audit_path) if r.get("phase") == "outcome" and r.get("outcome") == "applied"]
    switched = sum(c for _, c in seen)
    assert applied and switched in (len(applied), len(applied) - 1)
    assert sample(d, "cachetuner_daemon_cost_total", target="t0", part="switch") == pytest.approx(rw.switch_cost * switched)
    assert sample(d, "cachetuner_daemon_cost_in_dollars", target="t0") == 0.0
    assert sample(d, "cachetuner_daemon_price_miss", target="t0") == rw.miss_cost
    # the estimate against what the same traffic measured with the baseline held (a static-default daemon): here mrc's
    # changes cost a little more than they saved (measured -0.40 %), and the estimate says so (-0.47 %)
    base = sample(d, "cachetuner_daemon_predicted_cost_total", target="t0", config="baseline")
    in_force = sample(d, "cachetuner_daemon_predicted_cost_total", target="t0", config="in_force")
    held, _ = run_recorded(make_cfg(tmp_path / "held", policy={"name": "static-default"}, max_iterations=30))
    held_cost = held.runners[0].costs.summary()["measured_cost"]  # type: ignore[union-attr]
    measured = 1 - sum(c for c in (sample(d, "cachetuner_daemon_cost_total", target="t0", part=p)
                                   for p in ("memory", "miss", "slo", "switch"))) / held_cost
    assert base > 0 and in_force > 0
    assert abs((1 - in_force / base) - measured) < 0.01
    assert sample(d, "cachetuner_daemon_baseline_maxmemory_bytes", target="t0") == 24 * MB  # the env's initial size
    # the session's sums close the audit log
    stop = next(r for r in read_audit(cfg.audit_path) if r.get("event") == "stop")["costs"]["t0"]
    parts = sum(sample(d, "cachetuner_daemon_cost_total", target="t0", part=p) for p in ("memory", "miss", "slo", "switch"))
    assert stop["intervals"] == 30 and stop["measured_cost"] == pytest.approx(parts) and stop["dollars"] is False
    assert stop["estimated_saving"] == pytest.approx(1 - in_force / base)


def test_a_config_that_never_changes_is_estimated_at_the_baselines_cost(tmp_path: Path) -> None:
    """static-default holds the config it found: the two estimates are the same prices on the same curves."""
    d, seen = run_recorded(make_cfg(tmp_path, policy={"name": "static-default"}, max_iterations=25))
    base = sample(d, "cachetuner_daemon_predicted_cost_total", target="t0", config="baseline")
    assert base > 0
    assert sample(d, "cachetuner_daemon_predicted_cost_total", target="t0", config="in_force") == base
    assert sample(d, "cachetuner_daemon_cost_total", target="t0", part="switch") == 0.0
    assert not any(c for _, c in seen)


def test_prices_block_makes_the_costs_dollars(tmp_path: Path) -> None:
    env_yaml = tmp_path / "env.yaml"
    env_yaml.write_text(yaml.safe_dump({"env": {"prices": {"preset": "list"}}}))
    d, seen = run_recorded(make_cfg(tmp_path, policy={"name": "mrc", "env_config": str(env_yaml)}, max_iterations=5))
    assert sample(d, "cachetuner_daemon_cost_in_dollars", target="t0") == 1.0
    assert sample(d, "cachetuner_daemon_price_memory_gib_hour", target="t0") == 0.016
    misses = sum(max(s.misses - s.l2_hits, 0) for s, _ in seen)
    assert sample(d, "cachetuner_daemon_cost_total", target="t0", part="miss") == pytest.approx(0.002 * misses)


def test_the_baseline_survives_a_restart(tmp_path: Path) -> None:
    cfg = make_cfg(tmp_path, policy={"name": "static-default"}, max_iterations=2)
    Daemon(cfg).run()
    state = json.loads(cfg.state_path.read_text())
    assert state["targets"]["t0"]["baseline"]["maxmemory"] == 24 * MB
    state["targets"]["t0"]["baseline"]["maxmemory"] = 30 * MB  # what an earlier session found on the target
    cfg.state_path.write_text(json.dumps(state))
    d = Daemon(cfg)
    d.run()
    assert sample(d, "cachetuner_daemon_baseline_maxmemory_bytes", target="t0") == 30 * MB
    assert json.loads(cfg.state_path.read_text())["targets"]["t0"]["baseline"]["maxmemory"] == 30 * MB


def test_estimates_are_added_in_pairs_or_not_at_all() -> None:
    """Before the curves are ready (or for a config without a curve) neither estimate counts, so their difference
    stays a like-for-like saving."""
    m = DaemonMetrics()
    meter = CostMeter("t", EnvConfig().reward, 50.0, m, dollars=False)
    assert not meter.estimate({"in_force": 2.0, "baseline": math.nan})
    assert not meter.estimate({"in_force": 2.0})
    assert meter.estimate({"in_force": 2.0, "baseline": 3.0})
    got = {k: m.registry.get_sample_value("cachetuner_daemon_predicted_cost_total", {"target": "t", "config": k})
           for k in ("in_force", "baseline")}
    assert got == {"in_force": 2.0, "baseline": 3.0}


def test_a_cache_that_did_not_evict_prices_larger_configs_by_their_memory_only(tmp_path: Path) -> None:
    """While the cache in force is not full (no evictions: still filling, or mrc's fill cap), every config at least as
    large as the data held the same data: the estimate must not charge a fill cap misses it did not cause."""
    d, _ = run_recorded(make_cfg(tmp_path, policy={"name": "mrc"}, max_iterations=25))
    pol = d.runners[0].policy
    base = RedisConfig(maxmemory=24 * MB, maxmemory_policy="allkeys-lru", timeout=0)
    small, large = base.evolve(maxmemory=12 * MB), base.evolve(maxmemory=36 * MB)
    pol._filling = 10 * MB  # the interval ended with 10 MB in use and no eviction
    got = pol.predicted_costs({"small": small, "large": large})
    memory = pol.env.prices.memory_per_gib_hour * (24 * MB / GIB) * (ENV["interval_s"] / 3600)  # the measured interval
    assert got["large"] - got["small"] == pytest.approx(memory, rel=1e-9)
    pol._filling = None  # a full cache: the smaller config would have evicted, and the curves charge its misses
    full = pol.predicted_costs({"small": small, "large": large})
    assert full["large"] - full["small"] < memory


def test_bench_daemon_costs_reports_missing_traces_and_refuses_bad_prices(tmp_path: Path) -> None:
    import subprocess
    import sys

    from cachetuner.daemon.bench import WORKLOADS, bench_daemon_costs

    res = bench_daemon_costs(tmp_path, prices=("scaled",), intervals=10)  # no shared traces here: only synthetic run
    missing = [r for r in res["rows"] if "missing" in r]
    assert len(missing) == 3 and all(r["missing"].startswith(str(tmp_path)) for r in missing)
    ran = [r for r in res["rows"] if "missing" not in r]
    assert len(ran) == len(WORKLOADS) - 3 == res["summary"]["cells"]
    assert all(r["measured_saving"] is not None and -1 < r["measured_saving"] < 1 for r in ran)
    bad = subprocess.run([sys.executable, "-m", "cachetuner.cli.main", "bench", "daemon-costs", "--prices", "budget"],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and bad.stderr.strip().startswith("error: --prices: budget: not a priced preset")
    bad = subprocess.run([sys.executable, "-m", "cachetuner.cli.main", "bench", "daemon-costs", "--policy", "hill"],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and bad.stderr.strip() == "error: --policy 'hill': expected mrc or ppo"


def test_bench_daemon_costs_runs_the_shipped_policy(tmp_path: Path) -> None:
    """``--policy ppo``: the tuned daemon is the daemon's default decider, at the cell's prices."""
    from cachetuner.daemon.bench import bench_daemon_costs

    res = bench_daemon_costs(tmp_path, prices=("cheap-backend",), intervals=10, policy="ppo")
    ran = [r for r in res["rows"] if "missing" not in r]
    assert res["summary"]["policy"] == "ppo" and len(ran) == 2
    assert all(r["measured_saving"] is not None and -1 < r["measured_saving"] < 1 for r in ran)


def test_the_decider_prices_memory_over_the_interval_it_measured(tmp_path: Path) -> None:
    """The decider's env config says 60 s intervals (EnvConfig's default), the target's measure 5 s (the sim target's
    env; a live daemon's interval_s). The misses a rule weighs are the measured interval's, so memory must be priced
    over 5 s too: priced over 60 s it was twelve times too dear against them, and `mrc` held too little."""
    seen: list[float] = []
    cfg = make_cfg(tmp_path, policy={"name": "mrc"}, max_iterations=4)
    d = Daemon(cfg)
    policy = d.runners[0].policy
    assert policy.env.cfg.interval_s == 60  # type: ignore[union-attr]
    decide = policy.controller.decide  # type: ignore[union-attr]

    def watched(ctx: Any) -> RedisConfig:
        seen.append(ctx.prices.interval_s)
        return decide(ctx)

    policy.controller.decide = watched  # type: ignore[union-attr]
    d.run()
    assert seen == [5.0] * 4
