"""What an A/B run produces: per-interval records of both arms and the verdict.

Kept free of MLflow and matplotlib so that the runner, the tracking, the plots and the CLI can all
share it (and tests can build one by hand).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from cachetuner.ab.stats import Verdict
from cachetuner.metrics import MetricsSnapshot

#: Per-interval series logged for each arm (MLflow metric names, as steps).
SERIES = (
    "hit_ratio", "byte_hit_ratio", "p95_ms", "p99_ms", "cost", "maxmemory_mb", "used_memory_mb",
    "gets", "requests", "evictions", "backend_calls", "stale_share", "mean_ttl_s",
)


def record_of(snap: MetricsSnapshot, cost: dict[str, float] | float) -> dict[str, float]:
    """The figures of one interval that the statistics and plots use."""
    total = float(cost["total"]) if isinstance(cost, dict) else float(cost)
    return {
        "hit_ratio": snap.hit_ratio,
        "byte_hit_ratio": snap.byte_hit_ratio,
        "p95_ms": float(snap.latency_p95_ms),
        "p99_ms": float(snap.latency_p99_ms),
        "cost": total,
        "maxmemory_mb": snap.maxmemory / 2**20,
        "used_memory_mb": snap.used_memory / 2**20,
        "gets": float(snap.gets),
        "requests": float(snap.requests),
        "evictions": float(snap.evictions),
        "backend_calls": float(max(snap.misses - snap.l2_hits, 0)),
    }


@dataclass
class ArmSeries:
    """One arm's per-interval figures and the configuration it ran (or, in shadow mode, would have run)."""

    role: str  # "control" | "treatment"
    description: str
    records: list[dict[str, float]] = field(default_factory=list)
    configs: list[dict] = field(default_factory=list)
    estimated: bool = False  # shadow treatment: figures are estimates, not measurements
    initial: dict | None = None  # the config in force before the first interval, so its first move counts as a change

    def series(self, name: str) -> np.ndarray:
        return np.array([r[name] for r in self.records], dtype=np.float64)

    def arrays(self) -> dict[str, np.ndarray]:
        return {name: self.series(name) for name in SERIES if self.records and name in self.records[0]}

    def config_changes(self) -> int:
        """Intervals whose config differs from the one in force before (the initial one, when known, for the first)."""
        seq = ([self.initial] if self.initial is not None else []) + self.configs
        return sum(1 for x, y in zip(seq, seq[1:], strict=False) if x != y)

    def totals(self) -> dict[str, float]:
        """Episode summaries logged on the arm's run (means of ratios, sums of counts and cost)."""
        if not self.records:
            return {}
        a = self.arrays()
        gets = a["gets"].sum()
        return {
            "total_cost": float(a["cost"].sum()),
            "mean_hit_ratio": float((a["hit_ratio"] * a["gets"]).sum() / gets) if gets else 0.0,
            "mean_byte_hit_ratio": float(a["byte_hit_ratio"].mean()),
            "mean_p95_ms": float(a["p95_ms"].mean()),
            "mean_maxmemory_mb": float(a["maxmemory_mb"].mean()),
            "config_changes": float(self.config_changes()),
        }


@dataclass
class ABResult:
    """Both arms, aligned interval by interval, and the verdict on them."""

    name: str
    mode: str
    control: ArmSeries
    treatment: ArmSeries
    verdict: Verdict
    meta: dict = field(default_factory=dict)
    mlflow_run_id: str | None = None
    #: TTL A/B: ``mean_ttl_s``, ``stale_share_delta_pp`` and ``tenants`` (see cachetuner.ab.ttl_runner)
    extras: dict = field(default_factory=dict)

    @property
    def intervals(self) -> int:
        return len(self.control.records)

    def to_json(self) -> dict:
        """The ``--json`` object: verdict, the four delta CIs and the MLflow run id."""
        out = self.verdict.to_json()
        out["mlflow_run_id"] = self.mlflow_run_id
        out.update(
            name=self.name, mode=self.mode, control=self.control.description, treatment=self.treatment.description,
            control_totals=self.control.totals(), treatment_totals=self.treatment.totals(),
        )
        out.update(self.extras)
        out["meta"] = self.meta
        return out
