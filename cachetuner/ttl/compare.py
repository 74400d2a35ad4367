"""``cachetuner ttl compare``: several TTL policies on several traces at one maxmemory each.

Every policy of a trace runs on the same requests, the same simulator seed and the same
``maxmemory`` (a share of the trace's working set), so the rows differ only in TTLs. Figures: hit
ratio, byte hit ratio, stale share, mean interval p95, mean TTL of the writes, and their difference
from the first (reference) policy. Logged to MLflow (experiment ``cachetuner-ttl``) with a PNG.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from cachetuner.traces.trace import Trace
from cachetuner.tracking.mlflow_utils import log_figure_png, setup_tracking
from cachetuner.ttl.keyspace import FreshnessConfig, keyspace_for
from cachetuner.ttl.run import check_interval, maxmemory_for, simulate_ttl, ttl_redis_config

#: Called after each (trace, policy) cell with (cells done, cells in all, label).
CellFn = Callable[[int, int, str], None]

FIGURES = ("hit_ratio", "byte_hit_ratio", "stale_share", "p95_ms", "mean_ttl_s")


def compare_ttl(
    traces: list[tuple[str, Trace]],
    policies: list[str],
    *,
    memory_share: float = 0.1,
    maxmemory_policy: str = "allkeys-lru",
    interval_s: float = 60.0,
    freshness: FreshnessConfig | None = None,
    seed: int = 0,
    on_cell: CellFn | None = None,
) -> list[dict[str, Any]]:
    """One row per (trace, policy); ``delta_*`` are against ``policies[0]`` on the same trace
    (ratios in percentage points, p95 in ms)."""
    check_interval(interval_s)
    rows: list[dict[str, Any]] = []
    total, done = len(traces) * len(policies), 0
    for label, trace in traces:
        ks = keyspace_for(trace, freshness)
        maxmem = maxmemory_for(trace, memory_share)
        cfg = ttl_redis_config(maxmem, maxmemory_policy)
        ref: dict[str, float] | None = None
        for pol in policies:
            tot = simulate_ttl(trace, pol, cfg, interval_s=interval_s, keyspace=ks, seed=seed).totals()
            ref = ref or tot
            row: dict[str, Any] = {"trace": label, "policy": pol, "maxmemory": maxmem, "requests": len(trace)}
            row.update({k: tot[k] for k in FIGURES})
            for k in ("hit_ratio", "byte_hit_ratio", "stale_share"):
                row[f"delta_{k}_pp"] = 100.0 * (tot[k] - ref[k])
            row["delta_p95_ms"] = tot["p95_ms"] - ref["p95_ms"]
            rows.append(row)
            done += 1
            if on_cell is not None:
                on_cell(done, total, f"{label} {pol}")
    return rows


def plot_compare(rows: list[dict[str, Any]]) -> Any:
    """Hit ratio and stale share per policy, one group of bars per trace."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    traces = list(dict.fromkeys(r["trace"] for r in rows))
    policies = list(dict.fromkeys(r["policy"] for r in rows))
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    w = 0.8 / len(policies)
    for ax, key, title in ((axes[0], "hit_ratio", "hit ratio"), (axes[1], "stale_share", "share of hits served stale")):
        for i, pol in enumerate(policies):
            vals = [next((r[key] for r in rows if r["trace"] == t and r["policy"] == pol), np.nan) for t in traces]
            ax.bar(np.arange(len(traces)) + i * w, vals, w, label=pol)
        ax.set_xticks(np.arange(len(traces)) + w * (len(policies) - 1) / 2, traces, fontsize=8)
        ax.set_title(title)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    return fig


def log_compare(rows: list[dict[str, Any]], settings: dict[str, Any], tracking_uri: str | None = None) -> str:
    """One MLflow run: the settings as params, every row's figures as metrics, the plot. Returns the run id."""
    import mlflow

    setup_tracking(tracking_uri, experiment="cachetuner-ttl")
    with mlflow.start_run(run_name=f"ttl-compare__{len(rows)}cells") as run:
        mlflow.log_params({k: str(v)[:250] for k, v in settings.items()})
        for r in rows:
            tag = f"{r['trace']}.{r['policy']}".replace(":", "_").replace(",", "_").replace("=", "_")
            mlflow.log_metrics({f"{tag}.{k}": float(r[k]) for k in FIGURES})
        mlflow.log_dict({"rows": rows}, "ttl_compare.json")
        log_figure_png(plot_compare(rows), "ttl_compare")
        return str(run.info.run_id)
