"""What the tuned cache costs while the daemon runs: measured every fresh interval, and the
curves' estimate of the config the daemon found on the target (its *baseline*).

Why: the tuning exists to lower what the cache costs, so an operator should read that cost next to the
config in force, on the same Prometheus as the cache, not only in an offline evaluation. Two figures,
kept apart because they are not the same kind of number:

Units: dollars when the decider's env config has a ``prices:`` block (the shipped general policy's does;
``cachetuner_daemon_cost_in_dollars`` is then 1), else the reward's own cost units (a miss costs 1).
The prices are exported too (``cachetuner_daemon_price_memory_gib_hour``, ``cachetuner_daemon_price_miss``).

* **measured** (``cachetuner_daemon_cost_total{target, part}``): the env's own
  :func:`~cachetuner.env.reward.interval_cost` on each fresh snapshot, at the policy env's prices —
  memory held (``maxmemory``, or ``used_memory`` when unlimited), backend calls (misses) times the
  price of one, the SLO penalty and one switch price per interval that began with a config change.
  These are the terms ``cachetuner evaluate`` adds up, so a live cost and a simulated one compare.
* **estimated** (``cachetuner_daemon_predicted_cost_total{target, config}``, ``config`` =
  ``in_force`` or ``baseline``): both configs priced on the *same* miss-ratio curves of the interval
  (the decider's, once ready), so the difference — the estimated saving — is not biased by how far the
  curves are off in absolute terms. Approximation: the curves give a config's steady state, so the
  baseline's figure ignores what reaching it would cost (a refill) and the in-force figure the refill
  after a change; both ignore switches. No interval is estimated before the curves are ready, for a
  policy without a curve, or on a step the decider did not see (stale metrics, rollback, a follower).

The baseline is the first config this daemon's state read on the target (``TargetState.baseline``): it
survives daemon restarts; deleting the state directory makes the config found next the baseline.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from cachetuner.daemon.telemetry import DaemonMetrics
from cachetuner.env.config import RewardConfig
from cachetuner.env.reward import interval_cost
from cachetuner.metrics import MetricsSnapshot

#: the predicted-cost counter's ``config`` label values
ESTIMATED = ("in_force", "baseline")


class CostMeter:
    """Counts one target's measured and estimated cost into the daemon's metrics."""

    def __init__(
        self, target: str, reward: RewardConfig, slo_p95_ms: float, metrics: DaemonMetrics, *, dollars: bool
    ) -> None:
        self.target = target
        self.reward = reward
        self.slo_p95_ms = slo_p95_ms
        self.metrics = metrics
        metrics.price_memory.labels(target).set(reward.memory_cost_per_gb_hour)
        metrics.price_miss.labels(target).set(reward.miss_cost)
        metrics.in_dollars.labels(target).set(1.0 if dollars else 0.0)
        self.dollars = dollars
        #: this session's sums, for the stop line of the audit log and the daemon's log
        self.measured, self.intervals = 0.0, 0
        self.predicted = dict.fromkeys(ESTIMATED, 0.0)

    def measure(self, snap: MetricsSnapshot, *, changed: bool) -> dict[str, float]:
        """Add one fresh interval's cost terms to the counters; returns them."""
        cost = interval_cost(snap, changed=changed, cfg=self.reward, slo_p95_ms=self.slo_p95_ms)
        for part, dollars in cost.items():
            if part != "total" and math.isfinite(dollars) and dollars > 0:
                self.metrics.cost.labels(self.target, part).inc(dollars)
        self.metrics.costed.labels(self.target).inc()
        if math.isfinite(cost["total"]):
            self.measured += cost["total"]
        self.intervals += 1
        return cost

    def estimate(self, predicted: Mapping[str, float]) -> bool:
        """Add the curves' predicted cost of the config in force and of the baseline; only when both are
        finite (else neither, so that their difference stays a like-for-like saving). Returns whether added."""
        vals = [predicted.get(k, math.nan) for k in ESTIMATED]
        if not all(math.isfinite(v) and v >= 0 for v in vals):
            return False
        for k, v in zip(ESTIMATED, vals, strict=True):
            self.metrics.predicted.labels(self.target, k).inc(v)
            self.predicted[k] += v
        return True

    def summary(self) -> dict[str, float | int | bool | None]:
        """This session's measured cost and the estimated saving against the baseline (None before any estimate)."""
        base = self.predicted["baseline"]
        saving = 1.0 - self.predicted["in_force"] / base if base > 0 else None
        return {"intervals": self.intervals, "measured_cost": self.measured, "dollars": self.dollars,
                "predicted_cost_in_force": self.predicted["in_force"], "predicted_cost_baseline": base,
                "estimated_saving": saving}


__all__ = ["ESTIMATED", "CostMeter"]
