"""One target's control loop step: observe, (re-)verify, decide, guard, apply, record.

Order of precedence within a step, most protective first:

1. unreachable Redis / Prometheus error  -> hold, exponential backoff, resume later;
2. Redis restarted (``run_id`` changed)   -> re-apply the last known-good config (Redis forgot it);
3. stale metrics                          -> hold (no decision is applied on stale data);
4. SLO breached within ``rollback.window_intervals`` fresh intervals after a change -> rollback to
   the last known-good config;
5. the policy's proposal through the guard chain, then the final bounds check, then ``CONFIG SET``.

Every path writes the audit log; every ``CONFIG SET`` is bracketed by an intent and an outcome line.
Rollbacks and restart re-applies bypass the chain (they go back to a config that already ran
well) but never the final bounds check; in dry-run nothing is ever applied.
"""

from __future__ import annotations

import contextlib
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cachetuner.backend import ApplyResult, CacheBackend
from cachetuner.config import RedisConfig
from cachetuner.daemon.audit import AuditLog
from cachetuner.daemon.backoff import Backoff
from cachetuner.daemon.config import DaemonConfig, TargetConfig
from cachetuner.daemon.guardrails import (
    GuardChain,
    GuardContext,
    OutOfBoundsError,
    Verdict,
    assert_in_bounds,
    bounds_violations,
)
from cachetuner.daemon.policy import Policy, PolicyInput
from cachetuner.daemon.probe import RedisProbe
from cachetuner.daemon.secrets import scrub_text
from cachetuner.daemon.slo import SLOReport, evaluate_slo, state_summary
from cachetuner.daemon.state import TargetState
from cachetuner.daemon.telemetry import DaemonMetrics
from cachetuner.metrics import MetricsSnapshot

log = logging.getLogger("cachetuner.daemon")


def _cfg(c: RedisConfig | None) -> dict[str, Any] | None:
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


class TargetRunner:
    """Owns one target's backend, probe, policy, guard chain, backoffs and persisted state."""

    def __init__(
        self,
        cfg: DaemonConfig,
        target: TargetConfig,
        backend_factory: Callable[[], CacheBackend],
        policy: Policy | None,
        audit: AuditLog,
        metrics: DaemonMetrics,
        state: TargetState,
        probe: RedisProbe | None = None,
        pending: list[dict[str, Any]] | None = None,
        on_state_change: Any = None,
    ) -> None:
        self.cfg = cfg
        self.target = target
        self.name = target.name
        self.backend_factory = backend_factory
        self.backend: CacheBackend | None = None  # built lazily: the daemon starts even when Redis is down
        self.policy = policy
        self.audit = audit
        self.metrics = metrics
        self.state = state
        self.probe = probe
        self.chain = GuardChain.for_target(target)
        b = cfg.backoff
        self.conn_backoff = Backoff(b.initial_s, b.max_s, b.factor)
        self.apply_backoff = Backoff(b.initial_s, b.max_s, b.factor)
        self.pending = list(pending or [])
        self._save_state = on_state_change or (lambda: None)
        self._started = False
        self.status = "starting"
        self.last_error: str | None = None
        self.snapshot: MetricsSnapshot | None = None
        self.current: RedisConfig | None = None
        self.observe_error: str | None = None
        self.iteration = 0
        self._seq = 0

    # ------------------------------------------------------------------ observe (may run in a thread)
    def observe(self) -> None:
        """Let one interval pass on the backend and keep its snapshot (or the failure)."""
        self.snapshot, self.observe_error = None, None
        now = time.time()
        if not self.conn_backoff.ready(now):
            self.observe_error = "backoff"
            return
        try:
            if self.backend is None:
                self.backend = self.backend_factory()
            if not self._started or self.backend.exhausted:
                self.backend.reset(seed=self.cfg.policy.seed)
                self._started = True
            self.snapshot = self.backend.step()
        except Exception as e:  # noqa: BLE001 (any backend failure: hold and back off)
            self.observe_error = scrub_text(f"{type(e).__name__}: {e}")

    # ------------------------------------------------------------------ decide + apply
    def step(self, iteration: int, override: RedisConfig | None = None, follower: bool = False) -> StepReport:
        """Decide and apply for this iteration (after :meth:`observe`)."""
        self.iteration = iteration
        rep = StepReport(snapshot=self.snapshot)
        now = time.time()
        if self.observe_error is not None:
            return self._unreachable(self.observe_error, now, rep)
        try:
            self.current = self._read_config()
            restarted = self._check_identity()
        except Exception as e:  # noqa: BLE001
            return self._unreachable(scrub_text(f"{type(e).__name__}: {e}"), now, rep)
        if self.status in ("unreachable", "backoff", "starting"):
            if self.status != "starting":
                self._event("recovered", previous=self.status)
            self.status = "ok"
        self.conn_backoff.succeed()
        self.metrics.up.labels(self.name).set(1)
        if self.pending:
            self._reconcile()
        cur = self.current
        assert cur is not None
        self.metrics.set_config(self.name, cur)
        snap = self.snapshot
        slo = evaluate_slo(self.target.slo, snap)
        rep.fresh = slo.judged
        self.metrics.stale.labels(self.name).set(0 if slo.judged else 1)
        base = self._record_base(snap, slo, cur)

        if restarted:
            rep.action = "reapply_after_restart"
            lkg = self.state.last_known_good
            if lkg is not None and lkg != cur:
                rep.applied = self._apply(lkg, "reapply_after_restart", base, reason="Redis restarted and forgot CONFIG SET")
            else:
                self._decision(base, "hold", reason="Redis restarted; config already known-good or none known")
            return rep

        if not slo.judged:
            self.status = "stale"
            rep.action, rep.vetoed_by = "hold_stale", "stale"
            self.metrics.vetoed.labels(self.name, "stale").inc()
            self._decision(base, "hold_stale", reason="metrics stale or missing: config held")
            return rep

        if self.status == "stale":
            self.status = "ok"
        st = self.state
        st.fresh_since_change += 1
        if slo.ok:
            st.good_streak += 1
            # the first interval after a change may straddle it: trust a config only after it passed
            # the SLO for `known_good_after` consecutive fresh intervals
            if (
                st.good_streak >= self.target.rollback.known_good_after
                and not bounds_violations(cur, self.target.bounds)
                and st.last_known_good != cur
            ):
                st.last_known_good = cur
                self._event("known_good", config=cur.model_dump(), good_streak=st.good_streak)
                self._maybe_rewrite(cur)
        else:
            st.good_streak = 0

        if (
            slo.breached
            and self.target.rollback.enabled
            and st.last_change_at is not None
            and st.fresh_since_change <= self.target.rollback.window_intervals
            and st.last_known_good is not None
            and st.last_known_good != cur
        ):
            rep.action, rep.rollback = "rollback", True
            self.metrics.rollbacks.labels(self.name).inc()
            rep.applied = self._apply(
                st.last_known_good, "rollback", base, reason=f"SLO breached after change: {'; '.join(slo.breaches)}"
            )
            return rep

        if follower:
            proposal = override
            if proposal is None:
                rep.action = "hold"
                self._decision(base, "hold", reason="staged rollout: waiting for the canary")
                return rep
        else:
            assert self.policy is not None
            try:
                proposal = self.policy.decide(PolicyInput(self.name, snap, cur))  # type: ignore[arg-type]
            except Exception as e:  # noqa: BLE001 (a policy bug must not stop the daemon)
                rep.action = "policy_error"
                self._decision(base, "policy_error", reason=scrub_text(f"{type(e).__name__}: {e}"))
                log.exception("policy failed on target %s", self.name)
                return rep
        base["proposal"] = _cfg(proposal)
        extra = getattr(self.policy, "last_info", None) if not follower else None
        if extra:
            base["policy_info"] = extra
        if proposal == cur:
            rep.action = "hold"
            self._decision(base, "hold", reason="policy proposes the current config")
            return rep
        ctx = GuardContext(self.name, now, cur, snap, slo, st.last_change_at)
        verdict = self.chain.evaluate(proposal, ctx)
        base["verdict"] = verdict.to_dict()
        if not verdict.ok:
            rep.action, rep.vetoed_by = "veto", verdict.vetoed_by
            self.metrics.vetoed.labels(self.name, str(verdict.vetoed_by)).inc()
            self._decision(base, "veto", reason=f"{verdict.vetoed_by}: {verdict.reason}")
            return rep
        assert verdict.config is not None
        if verdict.config == cur:
            rep.action = "hold"
            self._decision(base, "hold", reason="guardrails reduced the proposal to the current config")
            return rep
        if not self.apply_backoff.ready(now):
            rep.action = "hold_apply_backoff"
            self._decision(
                base, "hold_apply_backoff", reason=f"last CONFIG SET failed; retry in {self.apply_backoff.until - now:.1f} s"
            )
            return rep
        action = "promote" if follower else "change"
        rep.action = action
        rep.applied = self._apply(verdict.config, action, base, verdict=verdict)
        return rep

    # ------------------------------------------------------------------ pieces
    def _read_config(self) -> RedisConfig:
        if self.probe is not None:
            return self.probe.config()
        assert self.backend is not None
        return self.backend.config

    def _check_identity(self) -> bool:
        """True when Redis restarted since the run id we saw last (persisted across daemon restarts)."""
        if self.probe is None:
            return False
        ident = self.probe.identity()
        prev = self.state.run_id
        self.state.run_id = ident.run_id
        if prev is None or prev == ident.run_id:
            if prev is None:
                self._save_state()
            return False
        self.metrics.restarts.labels(self.name).inc()
        self._event("redis_restart_detected", previous_run_id=prev, run_id=ident.run_id, uptime_s=ident.uptime_s)
        self.state.fresh_since_change = 0
        self.state.good_streak = 0
        self._save_state()
        return True

    def _unreachable(self, err: str, now: float, rep: StepReport) -> StepReport:
        rep.action = "unreachable"
        self.metrics.up.labels(self.name).set(0)
        if err == "backoff":
            self.status = "backoff"
            return rep
        delay = self.conn_backoff.fail(now)
        if self.status != "unreachable" or self.last_error != err:
            self._event("unreachable", error=err, retry_in_s=round(delay, 2))
        self.status, self.last_error = "unreachable", err
        return rep

    def _record_base(self, snap: MetricsSnapshot | None, slo: SLOReport, cur: RedisConfig) -> dict[str, Any]:
        return {
            "target": self.name,
            "iteration": self.iteration,
            "policy": self.cfg.policy.name,
            "dry_run": self.cfg.dry_run,
            "state": state_summary(snap),
            "slo": {"judged": slo.judged, "ok": slo.ok, "breaches": slo.breaches},
            "current": _cfg(cur),
            "proposal": None,
            "verdict": None,
        }

    def _new_id(self) -> str:
        self._seq += 1
        return f"{self.audit.session}-{self.name}-{self.iteration}-{self._seq}"

    def _decision(self, base: dict[str, Any], action: str, reason: str, applied: RedisConfig | None = None) -> None:
        rec = {**base, "decision_id": self._new_id(), "phase": "decision", "action": action, "reason": reason}
        rec["applied"] = _cfg(applied)
        rec["outcome"] = {"hold": "held", "hold_stale": "held", "veto": "vetoed", "dry_run": "not_applied"}.get(
            action, action
        )
        self.metrics.decisions.labels(self.name, action).inc()
        self.audit.write(rec)

    def _event(self, event: str, **fields: Any) -> None:
        self.audit.write({"phase": "event", "event": event, "target": self.name, "iteration": self.iteration, **fields})
        log.info("target %s: %s %s", self.name, event, fields)

    def _apply(
        self, config: RedisConfig, action: str, base: dict[str, Any], *, reason: str = "", verdict: Verdict | None = None
    ) -> bool:
        """Final bounds check, intent, CONFIG SET (+ verify), outcome. Returns True when applied."""
        rec = {**base, "action": action, "reason": reason, "to_apply": _cfg(config)}
        try:
            assert_in_bounds(config, self.target.bounds, self.name)
        except OutOfBoundsError as e:
            self.metrics.vetoed.labels(self.name, "final_bounds").inc()
            self._decision({**rec, "verdict": {"ok": False, "vetoed_by": "final_bounds", "reason": str(e)}}, "veto", str(e))
            return False
        if self.cfg.dry_run:
            self._decision(rec, "dry_run", reason=f"dry-run: would {action}")
            return False
        did = self._new_id()
        self.state.last_decision_id = did
        self.audit.write({**rec, "decision_id": did, "phase": "intent"})
        try:
            assert self.backend is not None
            result = self.backend.apply(config)
        except Exception as e:  # noqa: BLE001 (connection lost mid-apply, ...)
            result = ApplyResult(ok=False, requested=config, applied=self.current or config, error=f"{type(e).__name__}: {e}")
        observed = result.applied
        if self.probe is not None:
            with contextlib.suppress(Exception):  # unreadable: the backend's own verify stands
                observed = self.probe.config()
        ok = bool(result.ok) and observed == config
        err = None if ok else scrub_text(result.error or f"verify: target runs {observed.model_dump()} not the requested config")
        self.metrics.decisions.labels(self.name, action).inc()
        now = time.time()
        if ok:
            self.metrics.applied.labels(self.name).inc()
            self.apply_backoff.succeed()
            st = self.state
            st.last_applied, st.last_change_at, st.last_change_iteration = config, now, self.iteration
            st.fresh_since_change, st.good_streak = 0, 0
            self.current = config
            self.metrics.set_config(self.name, config)
            if self.status == "refused":
                self.status = "ok"
        else:
            self.metrics.apply_errors.labels(self.name).inc()
            delay = self.apply_backoff.fail(now)
            self.status, self.last_error = "refused", err
            err = f"{err} (next attempt in >= {delay:.1f} s)"
            self.current = observed
        self.audit.write(
            {
                "target": self.name,
                "iteration": self.iteration,
                "decision_id": did,
                "phase": "outcome",
                "action": action,
                "outcome": "applied" if ok else "failed",
                "applied": _cfg(observed),
                "error": err,
            }
        )
        self._save_state()
        return ok

    def _reconcile(self) -> None:
        """Close intents a killed daemon left open: compare with what the target actually runs."""
        assert self.current is not None
        for intent in self.pending:
            want = RedisConfig(**intent["to_apply"])
            applied = self.current == want
            self.audit.write(
                {
                    "target": self.name,
                    "iteration": self.iteration,
                    "decision_id": intent["decision_id"],
                    "phase": "reconciled",
                    "action": intent.get("action"),
                    "outcome": "applied" if applied else "not_applied",
                    "applied": _cfg(self.current),
                    "reason": "intent without outcome found at startup (daemon was killed mid-apply)",
                }
            )
            if applied:
                st = self.state
                st.last_applied, st.last_change_at = want, float(intent.get("t", time.time()))
                st.fresh_since_change, st.good_streak = 0, 0
        self.pending = []
        self._save_state()

    def _maybe_rewrite(self, cfg: RedisConfig) -> None:
        """``persist: rewrite``: CONFIG REWRITE once a config has proven known-good, so a Redis restart
        while the daemon is down comes back to it (only known-good configs ever reach redis.conf)."""
        if self.cfg.persist != "rewrite" or self.cfg.dry_run or self.probe is None or self.state.rewritten == cfg:
            return
        try:
            self.probe.rewrite()
            self.state.rewritten = cfg
            self._event("config_rewrite", config=cfg.model_dump())
        except Exception as e:  # noqa: BLE001 (ACL without +config|rewrite, read-only redis.conf)
            self._event("config_rewrite_failed", error=scrub_text(str(e)))

    def health(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "last_error": self.last_error,
            "config": _cfg(self.current),
            "last_known_good": _cfg(self.state.last_known_good),
            "good_streak": self.state.good_streak,
        }

    def close(self) -> None:
        for c in (self.policy, self.backend, self.probe):
            if c is None:
                continue
            with contextlib.suppress(Exception):
                c.close()


def new_session_id() -> str:
    return uuid.uuid4().hex[:8]
