"""`mrc-history` and the mrc checkpoint in the daemon against a real redis-server + redis_exporter + Prometheus, with
the replayer sending the traffic and publishing its hash-sampled stream (`cachetuner:sampled`).

What only a live target shows: the history is watched at the live stream's sampling rate and the stream's key ids
are the history's, so the live intervals add to the curves' evidence instead of rebuilding the miniature caches;
the first decision is the config `recommend` sized on the history; and the checkpoint a daemon writes is what the
next daemon on the same Redis resumes from.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from live_traffic import replaying

from cachetuner.config import RedisConfig
from cachetuner.daemon.audit import read_audit
from cachetuner.daemon.config import DaemonConfig
from cachetuner.daemon.guardrails import bounds_violations
from cachetuner.daemon.loop import Daemon
from cachetuner.live.replay import ReplayOptions
from cachetuner.live.stack import LocalStack, pid_alive
from cachetuner.traces import read_trace

MiB = 1 << 20
RATE = 0.1  # the replayer's stream sampling rate, and so the rate the history is watched at
PARAMS = {"n_requests": 400_000, "n_keys": 5000, "rate": 1000, "alpha": 1.0}
HISTORY = {"trace": "synthetic:zipf", "params": PARAMS, "limit": 30_000}
BOUNDS = {"maxmemory_min": 4 * MiB, "maxmemory_max": 48 * MiB, "policies": ["allkeys-lru", "allkeys-lfu"],
          "timeouts": [0]}


@pytest.fixture()
def traffic(tmp_path: Path) -> Iterator[LocalStack]:
    """A stack of its own (the daemon changes Redis's config) and the replayer sending the trace's requests after
    the history, at 2,000 req/s, in a background thread for the test's duration."""
    stack = LocalStack(tmp_path / "stack", maxmemory=32 * MiB)
    with stack:
        pids = dict(stack.info.pids)
        opts = ReplayOptions(rate=2000, start=HISTORY["limit"], duration_s=600, sample_rate=RATE, stack_dir=str(stack.dir))
        with replaying(stack, read_trace("synthetic:zipf", params=PARAMS), opts):
            yield stack
    assert not [pid for pid in pids.values() if pid_alive(pid)], f"processes left behind: {pids}"


def _daemon(stack: LocalStack, state: Path, policy: dict[str, Any], iterations: int) -> Daemon:
    cfg = DaemonConfig.model_validate({
        "interval_s": 2.0,
        "state_dir": str(state),
        "http": {"port": 0},
        "tracking": {"enabled": False},
        "hotness": {"enabled": False},
        "policy": policy,
        "max_iterations": iterations,
        "targets": [{"name": "main", "backend": "live", "redis_url": stack.redis_url,
                     "prometheus_url": stack.info.prometheus_url, "password_env": None, "bounds": BOUNDS}],
    })
    d = Daemon(cfg)
    d.run()
    return d


def _evidence(d: Daemon) -> float:
    """The GETs the curves account for at their sparsest size point."""
    curves = d.runners[0].policy.env.curves  # type: ignore[union-attr]
    return min(float(e.min()) for e in curves.evidence.values())


@pytest.mark.integration
@pytest.mark.slow
def test_mrc_history_and_checkpoint_on_a_live_redis(traffic: LocalStack, tmp_path: Path) -> None:
    from cachetuner.daemon.config import Bounds
    from cachetuner.env import EnvConfig, WorkloadSpec
    from cachetuner.env.sim_backend import load_workload
    from cachetuner.mrc.config import MRCConfig
    from cachetuner.mrc.recommend import recommend

    policy = {"name": "mrc-history", "history": HISTORY, "history_sample_rate": RATE, "checkpoint_intervals": 2}
    first = _daemon(traffic, tmp_path / "state", policy, iterations=4)
    cold = _daemon(traffic, tmp_path / "cold", {"name": "mrc"}, iterations=4)
    # the history's evidence survived the live intervals (same keys, same rate): well above a cold mrc's four
    # intervals (measured 385 vs 156 GETs); rebuilt miniature caches would leave about the cold figure
    assert _evidence(first) > 1.5 * _evidence(cold)

    audit = read_audit(first.cfg.audit_path)
    decided = [r for r in audit if r.get("phase") in ("decision", "intent") and r.get("proposal")]
    assert decided, "the daemon decided nothing on live traffic"
    reward = EnvConfig().reward
    rec = recommend(load_workload(WorkloadSpec(**HISTORY)), memory_per_gib_hour=reward.memory_cost_per_gb_hour,
                    per_miss=reward.miss_cost, cfg=MRCConfig(policies=BOUNDS["policies"]), verify=False,
                    bounds=(BOUNDS["maxmemory_min"], BOUNDS["maxmemory_max"]))
    start = RedisConfig(**decided[0]["proposal"])
    assert start.maxmemory_policy == rec.policy and BOUNDS["maxmemory_min"] <= start.maxmemory <= rec.maxmemory
    bounds = Bounds.model_validate(BOUNDS)
    for r in audit:  # nothing outside the bounds reached Redis
        if r.get("phase") == "outcome" and r.get("outcome") == "applied":
            assert not bounds_violations(RedisConfig(**r["applied"]), bounds), r

    # the checkpoint: the next daemon on the same Redis goes on from the curves and the rule's count
    assert (tmp_path / "state" / "policy-main.pkl").is_file()
    seen = first.runners[0].policy.controller.decider._seen  # type: ignore[union-attr]
    again = _daemon(traffic, tmp_path / "state", policy, iterations=2)
    assert again.runners[0].policy.controller.decider._seen == seen + 2  # type: ignore[union-attr]
    assert _evidence(again) > _evidence(first)
