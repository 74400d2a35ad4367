"""What one target's control loop writes: audit lines (decision, intent, outcome, reconciled, event)
and the decision counters.

Why a class of its own: every path of a step (hold, veto, rollback, apply, restart) must leave the
same shaped, uniquely identified audit line, and an apply must be bracketed by an *intent* and an
*outcome* line so that a daemon killed mid-``CONFIG SET`` can be reconciled at its next start. Kept
apart from :class:`~cachetuner.daemon.runner.TargetRunner`, the step logic reads as decisions, not
as record keeping.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field
from typing import Any

from cachetuner.config import RedisConfig
from cachetuner.daemon.audit import AuditLog
from cachetuner.daemon.slo import SLOReport, state_summary
from cachetuner.daemon.telemetry import DaemonMetrics
from cachetuner.metrics import MetricsSnapshot

log = logging.getLogger("cachetuner.daemon")

#: a decision's action -> its outcome in the audit line (an apply's outcome comes from its outcome line)
_OUTCOMES = {"hold": "held", "hold_stale": "held", "veto": "vetoed", "dry_run": "not_applied"}


def config_dict(c: RedisConfig | None) -> dict[str, Any] | None:
    return None if c is None else c.model_dump()


@dataclass
class StepReport:
    """What one step did, for the loop's MLflow metrics and health."""

    action: str = "none"
    fresh: bool = False
    applied: bool = False
    vetoed_by: str | None = None
    rollback: bool = False
    snapshot: MetricsSnapshot | None = None
    extra: dict[str, float] = field(default_factory=dict)


def new_session_id() -> str:
    """The audit session id: one per daemon process (decision ids are unique within it)."""
    return uuid.uuid4().hex[:8]


class TargetRecorder:
    """Audit lines and decision counters of one target; ``iteration`` is set by the runner each step."""

    def __init__(self, target: str, audit: AuditLog, metrics: DaemonMetrics, *, policy: str, dry_run: bool) -> None:
        self.target = target
        self.audit = audit
        self.metrics = metrics
        self.policy = policy
        self.dry_run = dry_run
        self.iteration = 0
        self._seq = 0

    def base(self, snap: MetricsSnapshot | None, slo: SLOReport, cur: RedisConfig) -> dict[str, Any]:
        """The fields every decision line of this step shares (proposal and verdict filled in later)."""
        return {
            "target": self.target,
            "iteration": self.iteration,
            "policy": self.policy,
            "dry_run": self.dry_run,
            "state": state_summary(snap),
            "slo": {"judged": slo.judged, "ok": slo.ok, "breaches": slo.breaches},
            "current": config_dict(cur),
            "proposal": None,
            "verdict": None,
        }

    def new_id(self) -> str:
        """A decision id unique within the session: ``session-target-iteration-seq``."""
        self._seq += 1
        return f"{self.audit.session}-{self.target}-{self.iteration}-{self._seq}"

    def decision(self, base: dict[str, Any], action: str, reason: str, applied: RedisConfig | None = None) -> None:
        """A decision that applied nothing itself (hold, veto, dry run, policy error)."""
        rec = {**base, "decision_id": self.new_id(), "phase": "decision", "action": action, "reason": reason}
        rec["applied"] = config_dict(applied)
        rec["outcome"] = _OUTCOMES.get(action, action)
        self.metrics.decisions.labels(self.target, action).inc()
        self.audit.write(rec)

    def intent(self, rec: dict[str, Any]) -> str:
        """The line written right before ``CONFIG SET``; returns its decision id."""
        did = self.new_id()
        self.audit.write({**rec, "decision_id": did, "phase": "intent"})
        self.metrics.decisions.labels(self.target, str(rec.get("action"))).inc()
        return did

    def outcome(self, decision_id: str, action: str, ok: bool, observed: RedisConfig, err: str | None) -> None:
        """The outcome line closing the intent ``decision_id``."""
        self.audit.write(
            {
                "target": self.target,
                "iteration": self.iteration,
                "decision_id": decision_id,
                "phase": "outcome",
                "action": action,
                "outcome": "applied" if ok else "failed",
                "applied": config_dict(observed),
                "error": err,
            }
        )

    def reconciled(self, intent: dict[str, Any], applied: bool, current: RedisConfig) -> None:
        """Closes an intent a killed daemon left open, by what the target actually runs."""
        self.audit.write(
            {
                "target": self.target,
                "iteration": self.iteration,
                "decision_id": intent["decision_id"],
                "phase": "reconciled",
                "action": intent.get("action"),
                "outcome": "applied" if applied else "not_applied",
                "applied": config_dict(current),
                "reason": "intent without outcome found at startup (daemon was killed mid-apply)",
            }
        )

    def event(self, event: str, **fields: Any) -> None:
        self.audit.write({"phase": "event", "event": event, "target": self.target, "iteration": self.iteration, **fields})
        log.info("target %s: %s %s", self.target, event, fields)


__all__ = ["StepReport", "TargetRecorder", "config_dict", "new_session_id"]
