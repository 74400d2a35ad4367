"""Per-class memory protection, measured: does gold keep its p95 under memory pressure?

Redis has no per-tenant memory quota. What it allows: ``volatile-*`` eviction policies evict only
keys that carry a TTL, so writing the protected classes' keys *without* a TTL (and the others with
one) keeps the protected keys resident while the others absorb the evictions. The experiment replays
one multi-tenant workload at one ``maxmemory`` in several scenarios (by default the shared baseline,
``allkeys-lru`` with TTLs on every class, and the protected one, ``volatile-lru`` with no TTL on
gold) and reports, per tenant, hit ratio, byte hit ratio, mean p95, stale share, its share of all
misses, and the share of intervals whose p95 met the class threshold (gold 80 ms, silver 120 ms,
bronze 200 ms).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from cachetuner.traces.trace import Trace
from cachetuner.tracking.mlflow_utils import log_figure_png, setup_tracking
from cachetuner.ttl.keyspace import QOS_CLASSES, keyspace_for
from cachetuner.ttl.run import (
    TTLRun,
    check_interval,
    check_warmup,
    maxmemory_for,
    simulate_ttl,
    ttl_redis_config,
)


@dataclass(frozen=True)
class QosScenario:
    name: str
    maxmemory_policy: str
    no_ttl_classes: tuple[str, ...] = ()


DEFAULT_SCENARIOS = (
    QosScenario("shared: allkeys-lru, TTL on every class", "allkeys-lru"),
    QosScenario("protected: volatile-lru, no TTL on gold", "volatile-lru", ("gold",)),
    QosScenario("volatile-ttl: TTL on every class, gold longest", "volatile-ttl"),
)


def p95_met(p95_ms: np.ndarray, gets: np.ndarray, warmup: int, threshold_ms: float) -> tuple[float, int]:
    """(share of intervals whose p95 met ``threshold_ms``, intervals counted): the intervals after the
    first ``warmup`` in which the tenant had GETs. The one definition of the simulated and the live
    experiment (:mod:`cachetuner.live.replay_qos`), whose intervals are the same trace-time intervals."""
    p = np.asarray(p95_ms, dtype=np.float64)[warmup:]
    ok = np.isfinite(p) & (np.asarray(gets, dtype=np.float64)[warmup:] > 0)
    return (float((p[ok] <= threshold_ms).mean()) if ok.any() else 0.0), int(ok.sum())


def tenant_summary(run: TTLRun, warmup: int) -> dict[str, dict[str, Any]]:
    """Per tenant, over the intervals after ``warmup``."""
    ks_classes = dict(zip(run.trace.meta.get("tenants", ["default"]),
                          run.trace.meta.get("tenant_classes", ["silver"]), strict=True))  # fmt: skip
    total_miss = sum(float((t["gets"] - t["hits"])[warmup:].sum()) for t in run.tenants.values())
    out: dict[str, dict[str, Any]] = {}
    for name, t in run.tenants.items():
        sl = slice(warmup, None)
        gets, hits = float(t["gets"][sl].sum()), float(t["hits"][sl].sum())
        breq, bhit = float(t["byte_requests"][sl].sum()), float(t["byte_hits"][sl].sum())
        cls = ks_classes.get(name, "silver")
        active = t["gets"][sl] > 0
        out[name] = {
            "qos": cls,
            "p95_threshold_ms": QOS_CLASSES[cls][1],
            "hit_ratio": hits / gets if gets else 0.0,
            "byte_hit_ratio": bhit / breq if breq else 0.0,
            "p95_ms_mean": float(t["p95_ms"][sl][active].mean()) if active.any() else 0.0,
            "p95_met_share": p95_met(t["p95_ms"], t["gets"], warmup, QOS_CLASSES[cls][1])[0],
            "stale_share": float(t["stale_hits"][sl].sum() / hits) if hits else 0.0,
            "miss_share": (gets - hits) / total_miss if total_miss else 0.0,
        }
    return out


def qos_experiment(
    trace: Trace,
    *,
    policy: str = "fixed:300",
    memory_share: float = 0.1,
    interval_s: float = 60.0,
    warmup: int = 10,
    scenarios: tuple[QosScenario, ...] = DEFAULT_SCENARIOS,
    seed: int = 0,
    on_scenario: Callable[[int, int, str], None] | None = None,
) -> tuple[dict[str, Any], dict[str, TTLRun]]:
    """Every scenario on ``trace`` at ``maxmemory = memory_share × working set``; (report, runs)."""
    check_warmup(warmup, trace, check_interval(interval_s))
    ks = keyspace_for(trace)
    maxmem = maxmemory_for(trace, memory_share)
    report: dict[str, Any] = {"workload": trace.name, "policy": policy, "maxmemory": maxmem, "memory_share": memory_share,
                              "interval_s": interval_s, "warmup_intervals": warmup, "scenarios": {}}  # fmt: skip
    runs: dict[str, TTLRun] = {}
    for i, sc in enumerate(scenarios):
        cfg = ttl_redis_config(maxmem, sc.maxmemory_policy)
        run = simulate_ttl(trace, policy, cfg, interval_s=interval_s, keyspace=ks, seed=seed,
                           no_ttl_classes=sc.no_ttl_classes)  # fmt: skip
        runs[sc.name] = run
        tot = run.totals()
        report["scenarios"][sc.name] = {
            "maxmemory_policy": sc.maxmemory_policy, "no_ttl_classes": list(sc.no_ttl_classes),
            "hit_ratio": tot["hit_ratio"], "evictions": tot["evictions"],
            "rejected_writes": float(sum(s.rejected_writes for s in run.snapshots)),
            "intervals": len(run.snapshots) - warmup, "tenants": tenant_summary(run, warmup),
        }  # fmt: skip
        if on_scenario is not None:
            on_scenario(i + 1, len(scenarios), sc.name)
    return report, runs


def qos_figure(runs: dict[str, TTLRun], warmup: int) -> Any:
    """Per scenario: each tenant's p95 per interval (log scale) against its class threshold."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(runs), figsize=(6 * len(runs), 4), sharey=True, squeeze=False)
    colors = {"gold": "#c9a227", "silver": "#7f8c8d", "bronze": "#a0522d"}
    for ax, (name, run) in zip(axes[0], runs.items(), strict=True):
        classes = dict(zip(run.trace.meta.get("tenants", ["default"]),
                           run.trace.meta.get("tenant_classes", ["silver"]), strict=True))  # fmt: skip
        for tenant, t in run.tenants.items():
            c = colors.get(classes[tenant])
            x = np.arange(len(t["p95_ms"]))
            ok = 100 * p95_met(t["p95_ms"], t["gets"], warmup, QOS_CLASSES[classes[tenant]][1])[0]
            ax.plot(x, np.maximum(t["p95_ms"], 0.1), color=c, lw=1.2, label=f"{tenant} ({ok:.0f} % of intervals met)")
            ax.axhline(QOS_CLASSES[classes[tenant]][1], color=c, ls="--", lw=0.8)
        ax.axvspan(0, warmup, color="0.9")
        ax.set_yscale("log")
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("interval")
        ax.legend(fontsize=7)
    axes[0][0].set_ylabel("p95 latency (ms), dashed: class threshold")
    fig.tight_layout()
    return fig


def log_qos(report: dict[str, Any], fig: Any, tracking_uri: str | None = None) -> str:
    """One MLflow run (experiment ``cachetuner-ttl``): per scenario and tenant figures, the report, the figure."""
    import mlflow

    setup_tracking(tracking_uri, experiment="cachetuner-ttl")
    with mlflow.start_run(run_name=f"ttl-tenants__{report['workload']}") as run:
        mlflow.log_params({k: str(report[k]) for k in ("workload", "policy", "maxmemory", "interval_s", "warmup_intervals")})
        for i, (_sc, d) in enumerate(report["scenarios"].items()):
            for t, v in d["tenants"].items():
                mlflow.log_metrics({f"s{i}.{t}.{k}": float(x) for k, x in v.items() if isinstance(x, int | float)})
        mlflow.log_dict(report, "ttl_tenants.json")
        log_figure_png(fig, "ttl_tenants")
        return str(run.info.run_id)
