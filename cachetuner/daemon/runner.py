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
from collections.abc import Callable
from typing import Any

from cachetuner.backend import ApplyResult, CacheBackend
from cachetuner.config import RedisConfig
from cachetuner.daemon.audit import AuditLog
from cachetuner.daemon.backoff import Backoff
from cachetuner.daemon.config import DaemonConfig, TargetConfig
from cachetuner.daemon.costs import ESTIMATED, CostMeter
from cachetuner.daemon.guardrails import (
    GuardChain,
    GuardContext,
    OutOfBoundsError,
    Verdict,
    assert_in_bounds,
    bounds_violations,
)
from cachetuner.daemon.policy import CostEstimator, Policy, PolicyInput
from cachetuner.daemon.probe import RedisProbe
from cachetuner.daemon.records import StepReport, TargetRecorder, config_dict
from cachetuner.daemon.secrets import scrub_text
from cachetuner.daemon.slo import SLOReport, evaluate_slo
from cachetuner.daemon.state import TargetState
from cachetuner.daemon.telemetry import DaemonMetrics
from cachetuner.metrics import MetricsSnapshot

log = logging.getLogger("cachetuner.daemon")


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
        costs: CostMeter | None = None,
    ) -> None:
        self.cfg = cfg
        self.target = target
        self.name = target.name
        self.backend_factory = backend_factory
        self.backend: CacheBackend | None = None  # built lazily: the daemon starts even when Redis is down
        self.policy = policy
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
        self.rec = TargetRecorder(self.name, audit, metrics, policy=cfg.policy.name, dry_run=cfg.dry_run)
        self.costs = costs
        self._switched = False  # a change was applied since the last measured interval (its switch price)

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

    # ------------------------------------------------------------------ step
    def step(self, iteration: int, override: RedisConfig | None = None, follower: bool = False) -> StepReport:
        """Decide and apply for this iteration (after :meth:`observe`), in the order of the module docstring."""
        self.iteration = self.rec.iteration = iteration
        rep = StepReport(snapshot=self.snapshot)
        now = time.time()
        restarted = self._read_target(now, rep)
        if restarted is None:
            return rep
        cur = self.current
        assert cur is not None
        slo = self._judge(rep)
        if slo.judged and not restarted:
            self._measure(rep)
        base = self.rec.base(self.snapshot, slo, cur)
        if restarted:
            self._reapply_after_restart(cur, base, rep)
        elif not slo.judged:
            self._hold_stale(base, rep)
        else:
            if self.status == "stale":
                self.status = "ok"
            self._track_known_good(cur, slo)
            if self._rollback_due(cur, slo):
                self._rollback(slo, base, rep)
            else:
                self._decide_and_apply(cur, slo, now, base, rep, override, follower)
        return rep

    # ------------------------------------------------------------------ step: read/probe
    def _read_target(self, now: float, rep: StepReport) -> bool | None:
        """Read the config in place and check the server identity; None when the target is unreachable
        (``rep`` is then complete), else whether Redis restarted since the last step."""
        if self.observe_error is not None:
            self._unreachable(self.observe_error, now, rep)
            return None
        try:
            self.current = self._read_config()
            restarted = self._check_identity()
        except Exception as e:  # noqa: BLE001
            self._unreachable(scrub_text(f"{type(e).__name__}: {e}"), now, rep)
            return None
        if self.status in ("unreachable", "backoff", "starting"):
            if self.status != "starting":
                self.rec.event("recovered", previous=self.status)
            self.status = "ok"
        self.conn_backoff.succeed()
        self.metrics.up.labels(self.name).set(1)
        if self.pending:
            self._reconcile()
        assert self.current is not None
        self.metrics.set_config(self.name, self.current)
        if self.state.baseline is None:
            self.state.baseline = self.current
            self._save_state()
        self.metrics.baseline_maxmemory.labels(self.name).set(self.state.baseline.maxmemory)
        return restarted

    def _measure(self, rep: StepReport) -> None:
        """The measured cost of the fresh interval just observed (with a switch price when it began with a change)."""
        if self.costs is not None and self.snapshot is not None:
            rep.extra["cost"] = self.costs.measure(self.snapshot, changed=self._switched)["total"]
        self._switched = False

    def _estimate(self, cur: RedisConfig, rep: StepReport) -> None:
        """The curves' cost of the config in force and of the baseline on the interval the decider just saw."""
        if self.costs is None or self.state.baseline is None or not isinstance(self.policy, CostEstimator):
            return
        try:
            predicted = self.policy.predicted_costs({"in_force": cur, "baseline": self.state.baseline})
        except Exception:  # noqa: BLE001 (an estimate is telemetry: it must never stop a decision)
            log.exception("cost estimate failed on target %s", self.name)
            return
        if self.costs.estimate(predicted):
            rep.extra.update({f"predicted_cost_{k}": predicted[k] for k in ESTIMATED})

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
        self.rec.event("redis_restart_detected", previous_run_id=prev, run_id=ident.run_id, uptime_s=ident.uptime_s)
        self.state.fresh_since_change = 0
        self.state.good_streak = 0
        self._save_state()
        return True

    def _unreachable(self, err: str, now: float, rep: StepReport) -> None:
        """Hold: mark the target down and back off (an event only when the error changes)."""
        rep.action = "unreachable"
        self.metrics.up.labels(self.name).set(0)
        if err == "backoff":
            self.status = "backoff"
            return
        self._mark_unreachable(err, now)

    def _mark_unreachable(self, err: str, now: float) -> float:
        """Status ``unreachable``, connection backoff, an ``unreachable`` event when the error is new;
        returns the backoff delay. Also reached from an apply the target did not answer."""
        self.metrics.up.labels(self.name).set(0)
        delay = self.conn_backoff.fail(now)
        if self.status != "unreachable" or self.last_error != err:
            self.rec.event("unreachable", error=err, retry_in_s=round(delay, 2))
        self.status, self.last_error = "unreachable", err
        return delay

    def _judge(self, rep: StepReport) -> SLOReport:
        """The SLO verdict on the interval just observed (not judged = stale or missing metrics)."""
        slo = evaluate_slo(self.target.slo, self.snapshot)
        rep.fresh = slo.judged
        self.metrics.stale.labels(self.name).set(0 if slo.judged else 1)
        return slo

    # ------------------------------------------------------------------ step: protective paths
    def _reapply_after_restart(self, cur: RedisConfig, base: dict[str, Any], rep: StepReport) -> None:
        rep.action = "reapply_after_restart"
        lkg = self.state.last_known_good
        if lkg is not None and lkg != cur:
            rep.applied = self._apply(lkg, "reapply_after_restart", base, reason="Redis restarted and forgot CONFIG SET")
        else:
            self.rec.decision(base, "hold", reason="Redis restarted; config already known-good or none known")

    def _hold_stale(self, base: dict[str, Any], rep: StepReport) -> None:
        self.status = "stale"
        rep.action, rep.vetoed_by = "hold_stale", "stale"
        self.metrics.vetoed.labels(self.name, "stale").inc()
        self.rec.decision(base, "hold_stale", reason="metrics stale or missing: config held")

    def _track_known_good(self, cur: RedisConfig, slo: SLOReport) -> None:
        """Count fresh intervals since the last change; promote ``cur`` to last known-good after
        ``known_good_after`` consecutive intervals within the SLO (and within bounds)."""
        st = self.state
        st.fresh_since_change += 1
        if not slo.ok:
            st.good_streak = 0
            return
        st.good_streak += 1
        # the first interval after a change may straddle it: trust a config only after it passed
        # the SLO for `known_good_after` consecutive fresh intervals
        if (
            st.good_streak >= self.target.rollback.known_good_after
            and not bounds_violations(cur, self.target.bounds)
            and st.last_known_good != cur
        ):
            st.last_known_good = cur
            self.rec.event("known_good", config=cur.model_dump(), good_streak=st.good_streak)
            self._maybe_rewrite(cur)

    def _rollback_due(self, cur: RedisConfig, slo: SLOReport) -> bool:
        """SLO breached within ``rollback.window_intervals`` fresh intervals after a change, with a
        different known-good config to go back to."""
        st, rb = self.state, self.target.rollback
        return (
            slo.breached
            and rb.enabled
            and st.last_change_at is not None
            and st.fresh_since_change <= rb.window_intervals
            and st.last_known_good is not None
            and st.last_known_good != cur
        )

    def _rollback(self, slo: SLOReport, base: dict[str, Any], rep: StepReport) -> None:
        lkg = self.state.last_known_good
        assert lkg is not None
        rep.action, rep.rollback = "rollback", True
        self.metrics.rollbacks.labels(self.name).inc()
        rep.applied = self._apply(lkg, "rollback", base, reason=f"SLO breached after change: {'; '.join(slo.breaches)}")

    # ------------------------------------------------------------------ step: decide, guard, apply
    def _decide_and_apply(
        self,
        cur: RedisConfig,
        slo: SLOReport,
        now: float,
        base: dict[str, Any],
        rep: StepReport,
        override: RedisConfig | None,
        follower: bool,
    ) -> None:
        proposal = self._propose(cur, base, rep, override, follower)
        if proposal is None:
            return
        verdict = self._guard(proposal, cur, slo, now, base, rep)
        if verdict is None:
            return
        assert verdict.config is not None
        action = "promote" if follower else "change"
        rep.action = action
        rep.applied = self._apply(verdict.config, action, base, verdict=verdict)

    def _propose(
        self, cur: RedisConfig, base: dict[str, Any], rep: StepReport, override: RedisConfig | None, follower: bool
    ) -> RedisConfig | None:
        """The policy's proposal (a follower's is the canary's ``override``); None when there is none
        or it is the current config (the hold is recorded)."""
        if follower:
            proposal = override
            if proposal is None:
                rep.action = "hold"
                self.rec.decision(base, "hold", reason="staged rollout: waiting for the canary")
                return None
        else:
            assert self.policy is not None
            try:
                proposal = self.policy.decide(PolicyInput(self.name, self.snapshot, cur))  # type: ignore[arg-type]
            except Exception as e:  # noqa: BLE001 (a policy bug must not stop the daemon)
                rep.action = "policy_error"
                self.rec.decision(base, "policy_error", reason=scrub_text(f"{type(e).__name__}: {e}"))
                log.exception("policy failed on target %s", self.name)
                return None
            self._estimate(cur, rep)
        base["proposal"] = config_dict(proposal)
        extra = getattr(self.policy, "last_info", None) if not follower else None
        if extra:
            base["policy_info"] = extra
        if proposal == cur:
            rep.action = "hold"
            self.rec.decision(base, "hold", reason="policy proposes the current config")
            return None
        return proposal

    def _guard(
        self, proposal: RedisConfig, cur: RedisConfig, slo: SLOReport, now: float, base: dict[str, Any], rep: StepReport
    ) -> Verdict | None:
        """The guard chain's verdict on ``proposal``, or None when it vetoed, reduced the proposal to the
        current config, or the apply backoff is running (the veto or hold is recorded)."""
        ctx = GuardContext(self.name, now, cur, self.snapshot, slo, self.state.last_change_at)
        verdict = self.chain.evaluate(proposal, ctx)
        base["verdict"] = verdict.to_dict()
        if not verdict.ok:
            rep.action, rep.vetoed_by = "veto", verdict.vetoed_by
            self.metrics.vetoed.labels(self.name, str(verdict.vetoed_by)).inc()
            self.rec.decision(base, "veto", reason=f"{verdict.vetoed_by}: {verdict.reason}")
            return None
        if verdict.config == cur:
            rep.action = "hold"
            self.rec.decision(base, "hold", reason="guardrails reduced the proposal to the current config")
            return None
        if not self.apply_backoff.ready(now):
            rep.action = "hold_apply_backoff"
            self.rec.decision(
                base, "hold_apply_backoff", reason=f"last CONFIG SET failed; retry in {self.apply_backoff.until - now:.1f} s"
            )
            return None
        return verdict

    # ------------------------------------------------------------------ step: apply + verify
    def _apply(
        self, config: RedisConfig, action: str, base: dict[str, Any], *, reason: str = "", verdict: Verdict | None = None
    ) -> bool:
        """Final bounds check, intent, CONFIG SET (+ verify), outcome. Returns True when applied."""
        rec = {**base, "action": action, "reason": reason, "to_apply": config_dict(config)}
        if not self._final_bounds_ok(config, rec):
            return False
        if self.cfg.dry_run:
            self.rec.decision(rec, "dry_run", reason=f"dry-run: would {action}")
            return False
        did = self.rec.intent(rec)
        self.state.last_decision_id = did
        observed, ok, err, down = self._set_and_verify(config)
        if ok:
            self._settle_applied(config)
        elif down:  # not a refusal of the config: the target is down, and the connection backoff holds
            delay = self._mark_unreachable(err or "no answer", time.time())
            err = f"{err} (target unreachable; next probe in >= {delay:.1f} s)"
        else:
            err = self._settle_refused(observed, err)
        self.rec.outcome(did, action, ok, observed, err)
        self._save_state()
        return ok

    def _final_bounds_ok(self, config: RedisConfig, rec: dict[str, Any]) -> bool:
        """The last line of defence right before ``CONFIG SET``; a refusal is recorded as a ``final_bounds`` veto."""
        try:
            assert_in_bounds(config, self.target.bounds, self.name)
        except OutOfBoundsError as e:
            self.metrics.vetoed.labels(self.name, "final_bounds").inc()
            self.rec.decision({**rec, "verdict": {"ok": False, "vetoed_by": "final_bounds", "reason": str(e)}}, "veto", str(e))
            return False
        return True

    def _set_and_verify(self, config: RedisConfig) -> tuple[RedisConfig, bool, str | None, bool]:
        """``CONFIG SET`` through the backend, then read back what the target runs (through the probe
        when there is one). Returns ``(observed, ok, error, unreachable)``; never raises. A target that
        did not answer is not read back here (another timeout): the next step's read finds what it runs."""
        try:
            assert self.backend is not None
            result = self.backend.apply(config)
        except Exception as e:  # noqa: BLE001 (connection lost mid-apply, ...)
            result = ApplyResult(ok=False, requested=config, applied=self.current or config, error=f"{type(e).__name__}: {e}")
        observed = result.applied
        if self.probe is not None and not result.unreachable:
            with contextlib.suppress(Exception):  # unreadable: the backend's own verify stands
                observed = self.probe.config()
        ok = bool(result.ok) and observed == config
        err = None if ok else scrub_text(result.error or f"verify: target runs {observed.model_dump()} not the requested config")
        return observed, ok, err, result.unreachable

    def _settle_applied(self, config: RedisConfig) -> None:
        """Bookkeeping after a verified change: the change clock restarts, the config is current."""
        self.metrics.applied.labels(self.name).inc()
        self.apply_backoff.succeed()
        self._switched = True
        st = self.state
        st.last_applied, st.last_change_at, st.last_change_iteration = config, time.time(), self.iteration
        st.fresh_since_change, st.good_streak = 0, 0
        self.current = config
        self.metrics.set_config(self.name, config)
        if self.status == "refused":
            self.status = "ok"

    def _settle_refused(self, observed: RedisConfig, err: str | None) -> str:
        """Bookkeeping after a refused or unverified change: apply backoff; returns the error for the outcome."""
        self.metrics.apply_errors.labels(self.name).inc()
        delay = self.apply_backoff.fail(time.time())
        self.status, self.last_error = "refused", err
        self.current = observed
        return f"{err} (next attempt in >= {delay:.1f} s)"

    # ------------------------------------------------------------------ restart, persistence, health
    def _reconcile(self) -> None:
        """Close intents a killed daemon left open: compare with what the target actually runs."""
        assert self.current is not None
        for intent in self.pending:
            want = RedisConfig(**intent["to_apply"])
            applied = self.current == want
            self.rec.reconciled(intent, applied, self.current)
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
            self.rec.event("config_rewrite", config=cfg.model_dump())
        except Exception as e:  # noqa: BLE001 (ACL without +config|rewrite, read-only redis.conf)
            self.rec.event("config_rewrite_failed", error=scrub_text(str(e)))

    def health(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "last_error": self.last_error,
            "config": config_dict(self.current),
            "last_known_good": config_dict(self.state.last_known_good),
            "good_streak": self.state.good_streak,
        }

    def close(self) -> None:
        for c in (self.policy, self.backend, self.probe):
            if c is None:
                continue
            with contextlib.suppress(Exception):
                c.close()
