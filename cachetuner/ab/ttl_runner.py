"""TTL A/B in simulation: two arms that differ only in their client-side TTL policy.

Both arms replay the same workload window (the same requests, the same simulator seed, the same
``maxmemory`` and eviction policy); each arm's trace differs only in its TTL column, set by its
policy (:func:`cachetuner.ttl.apply_ttl_policy`). The paired per-interval figures feed the same
statistics as every A/B (:func:`cachetuner.ab.stats.compare`), and three more are reported:

* ``mean_ttl_s``: mean TTL of each arm's admitted writes;
* ``stale_share_delta_pp``: per-interval share of hits served stale, treatment - control, with a CI;
* ``p99_delta_ms``: interval p99 latency, treatment - control, with a CI;
* ``tenants``: per tenant, hit-ratio and p95 deltas with CIs (one ``default`` tenant when the trace
  has none).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from cachetuner.ab.config import ABConfig
from cachetuner.ab.result import ArmSeries, record_of
from cachetuner.ab.stats import bootstrap_ci, paired_differences
from cachetuner.env.reward import interval_cost
from cachetuner.env.sim_backend import load_workload
from cachetuner.tenants.workload import load_tenant_workload
from cachetuner.traces.trace import Trace
from cachetuner.ttl import keyspace_for, simulate_ttl
from cachetuner.ttl.run import TTLRun

StepFn = Callable[[int, int], None]


def workload_trace(cfg: ABConfig, env_cfg: Any) -> Trace:
    """The TTL A/B's workload: the tenant YAML, else the env's (chosen) workload."""
    if cfg.tenants is not None:
        return load_tenant_workload(cfg.tenants)
    specs = env_cfg.workloads
    if cfg.workload is not None:
        specs = [w for w in specs if w.label == cfg.workload] or specs
    return load_workload(specs[0])


def _series(run: TTLRun, env_cfg: Any, warm: int, role: str, description: str) -> ArmSeries:
    arm = ArmSeries(role, description)
    for j, snap in enumerate(run.snapshots[warm:], start=warm):
        cost = interval_cost(snap, changed=False, cfg=env_cfg.reward, slo_p95_ms=env_cfg.slo_p95_ms)
        rec = record_of(snap, cost)
        rec["stale_share"] = float(run.series["stale_share"][j])
        rec["mean_ttl_s"] = float(run.series["mean_ttl_s"][j])
        arm.records.append(rec)
        arm.configs.append(snap.config.model_dump(mode="json"))
    return arm


def ci_json(c: np.ndarray, t: np.ndarray, cfg: ABConfig, scale: float, seed: int) -> dict[str, Any]:
    """Block-bootstrap CI of the paired treatment - control differences, times ``scale``."""
    d = bootstrap_ci(
        paired_differences(c, t), alpha=cfg.stats.alpha, n_resamples=cfg.stats.n_resamples,
        block_len=cfg.stats.block_len, seed=cfg.stats.seed + seed, scale=scale,
    )  # fmt: skip
    return d.to_json()


def run_ttl_sim(
    cfg: ABConfig, env_cfg: Any, n: int, on_step: StepFn | None
) -> tuple[ArmSeries, ArmSeries, dict[str, Any], dict[str, Any]]:
    """Both arms on the simulator; returns (control, treatment, meta, extras for the JSON report)."""
    trace = workload_trace(cfg, env_cfg)
    ks = keyspace_for(trace, cfg.freshness)
    warm = cfg.warmup_intervals
    runs: dict[str, TTLRun] = {}
    for k, (role, arm) in enumerate((("control", cfg.control), ("treatment", cfg.treatment))):
        assert arm.config is not None
        config = arm.config
        if cfg.memory_share is not None:
            config = config.model_copy(update={"maxmemory": int(cfg.memory_share * trace.working_set_bytes())})

        def progress(done: int, _all: int, k: int = k) -> None:
            if on_step is not None and done > warm:
                on_step(min(n, (k * (n + warm) + done - warm) // 2), n)

        runs[role] = simulate_ttl(
            trace, arm.ttl or "trace", config, interval_s=env_cfg.interval_s, params=env_cfg.sim, keyspace=ks,
            seed=cfg.seed, max_intervals=n + warm, progress=progress,
        )  # fmt: skip
    rc, rt = runs["control"], runs["treatment"]
    if [s.requests for s in rc.snapshots] != [s.requests for s in rt.snapshots]:
        raise AssertionError("TTL A/B arms are not paired (different requests per interval)")
    control = _series(rc, env_cfg, warm, "control", cfg.control.describe())
    treatment = _series(rt, env_cfg, warm, "treatment", cfg.treatment.describe())
    tenants: dict[str, Any] = {}
    for i, name in enumerate(rc.tenants):
        c, t = rc.tenants[name], rt.tenants[name]
        tenants[name] = {
            "hit_ratio_delta_pp": ci_json(c["hit_ratio"][warm:], t["hit_ratio"][warm:], cfg, 100.0, 10 + 2 * i),
            "p95_delta_ms": ci_json(c["p95_ms"][warm:], t["p95_ms"][warm:], cfg, 1.0, 11 + 2 * i),
            "p95_ok_share": {"control": float(c["p95_ok"][warm:].mean()), "treatment": float(t["p95_ok"][warm:].mean())},
        }
    extras = {
        "mean_ttl_s": {"control": rc.totals()["mean_ttl_s"], "treatment": rt.totals()["mean_ttl_s"]},
        "stale_share_delta_pp": ci_json(control.series("stale_share"), treatment.series("stale_share"), cfg, 100.0, 7),
        "stale_share": {"control": rc.totals()["stale_share"], "treatment": rt.totals()["stale_share"]},
        "p99_delta_ms": ci_json(control.series("p99_ms"), treatment.series("p99_ms"), cfg, 1.0, 8),
        "tenants": tenants,
    }
    meta = {"workload_label": trace.name, "ttl": {"control": rc.policy, "treatment": rt.policy},
            "warmup_intervals": warm, "tenant_names": list(rc.tenants)}  # fmt: skip
    return control, treatment, meta, extras
