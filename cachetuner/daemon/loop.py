"""The daemon: build one :class:`TargetRunner` per target, then loop every ``interval_s`` until told to stop.

One loop = observe every target (in parallel threads: a live backend's ``step`` waits for the
interval's metrics), then decide and apply target by target (the canary first in a staged rollout),
then persist state, log metrics to MLflow and update ``/metrics`` and ``/healthz``.

Shutdown: SIGTERM / SIGINT set a flag; the loop finishes the step in progress (no half-applied
decision), flushes the audit log, ends the MLflow run and returns 0. ``kill -9`` is covered by the
write-ahead audit log and the atomically written state file (see :mod:`cachetuner.daemon.audit`).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from cachetuner.backend import CacheBackend
from cachetuner.config import RedisConfig
from cachetuner.daemon.audit import AuditLog, pending_intents, read_audit
from cachetuner.daemon.config import DaemonConfig, TargetConfig
from cachetuner.daemon.costs import CostMeter
from cachetuner.daemon.policy import ControllerPolicy, load_env_config, make_policy
from cachetuner.daemon.probe import RedisProbe
from cachetuner.daemon.records import StepReport, new_session_id
from cachetuner.daemon.runner import TargetRunner
from cachetuner.daemon.secrets import credentialed_url, scrub_text
from cachetuner.daemon.state import DaemonState, load_state, save_state
from cachetuner.daemon.targets import sim_env_config
from cachetuner.daemon.telemetry import DaemonHTTPServer, DaemonMetrics

log = logging.getLogger("cachetuner.daemon")


def make_backend(cfg: DaemonConfig, target: TargetConfig) -> CacheBackend:
    """The target's CacheBackend: ``live`` (LiveRedisBackend) or ``sim`` (SimBackend over an env config)."""
    opts = dict(target.backend_options)
    if target.backend == "live":
        from cachetuner.live.backend import LiveRedisBackend

        assert target.prometheus_url is not None
        return LiveRedisBackend(credentialed_url(target), target.prometheus_url, cfg.interval_s, **opts)
    from cachetuner.env import SimBackend

    return SimBackend(sim_env_config(target))


def resolved_config(cfg: DaemonConfig) -> dict[str, Any]:
    """The config as logged (MLflow params, audit start event): URLs scrubbed, no secrets."""
    d = cfg.model_dump(mode="json")
    for t in d["targets"]:
        t["redis_url"] = scrub_text(t["redis_url"]) if t.get("redis_url") else None
    return d


class Daemon:
    def __init__(self, cfg: DaemonConfig, *, dry_run: bool | None = None) -> None:
        if dry_run is not None and dry_run != cfg.dry_run:
            cfg = cfg.model_copy(update={"dry_run": dry_run})
        self.cfg = cfg
        self.session = new_session_id()
        Path(cfg.state_dir).mkdir(parents=True, exist_ok=True)
        self.state: DaemonState = load_state(cfg.state_path)
        self.state.sessions += 1
        pending = pending_intents(read_audit(cfg.audit_path))
        self.audit = AuditLog(cfg.audit_path, self.session)
        self.metrics = DaemonMetrics()
        self._stop = threading.Event()
        self._state_lock = threading.Lock()
        self.started_at = time.time()
        self.last_loop_at: float | None = None
        self.iteration = self.state.iteration
        self.runners: list[TargetRunner] = []
        self.http: DaemonHTTPServer | None = None
        self._scrape_file: Path | None = None  # the stack's file_sd entry for this daemon (http.stack_dir)
        self.tracker: Any = None
        try:
            for t in cfg.targets:
                probe = RedisProbe(credentialed_url(t)) if t.backend == "live" else None
                runner = TargetRunner(
                        cfg,
                        t,
                        functools.partial(make_backend, cfg, t),
                        None,
                        self.audit,
                        self.metrics,
                        self.state.target(t.name),
                        probe=probe,
                        pending=[p for p in pending.values() if p.get("target") == t.name],
                        on_state_change=self.save_state,
                )
                if t.backend == "sim":  # checked now: a bad env in backend_options stops the start, not every loop
                    sim_env_config(t)
                if cfg.rollout.mode == "independent" or t.name == cfg.rollout.canary:
                    runner.policy = make_policy(cfg, t, functools.partial(getattr, runner, "backend"))
                self.runners.append(runner)
            self._meter_costs()
        except BaseException:
            self.close()
            raise

    def _meter_costs(self) -> None:
        """Every target's cost meter, at the decider's prices (a trained policy's come from its training config)."""
        env_cfg = next((r.policy.env.cfg for r in self.runners if isinstance(r.policy, ControllerPolicy)), None)
        if env_cfg is None:
            env_cfg = load_env_config(self.cfg)
        for r in self.runners:
            r.costs = CostMeter(r.name, env_cfg.reward, env_cfg.slo_p95_ms, self.metrics, dollars=env_cfg.prices is not None)

    # ------------------------------------------------------------------ lifecycle
    def stop(self) -> None:
        self._stop.set()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def save_state(self) -> None:
        with self._state_lock:
            self.state.iteration = self.iteration
            save_state(self.cfg.state_path, self.state)

    def install_signal_handlers(self) -> None:
        def handler(signum: int, frame: object) -> None:
            log.info("signal %d: finishing the current step, then exiting", signum)
            self._stop.set()

        signal.signal(signal.SIGTERM, handler)
        signal.signal(signal.SIGINT, handler)

    def start_http(self) -> tuple[str, int] | None:
        if not self.cfg.http.enabled:
            return None
        self.http = DaemonHTTPServer(self.cfg.http.host, self.cfg.http.port, self.metrics, self.health)
        self.http.start()
        host, port = self.http.address
        tmp = self.cfg.addr_path.with_suffix(".tmp")
        tmp.write_text(f"{host}:{port}\n")
        os.replace(tmp, self.cfg.addr_path)
        log.info("serving /metrics and /healthz on http://%s:%d", host, port)
        if self.cfg.http.stack_dir:
            from cachetuner.live.stack import DAEMON_JOB, register_target

            self._scrape_file = register_target(self.cfg.http.stack_dir, f"daemon-{self.session}", port, job=DAEMON_JOB)
            log.info("registered with the stack's Prometheus as job %s (%s)", DAEMON_JOB, self._scrape_file)
        return host, port

    def health(self) -> dict[str, Any]:
        now = time.time()
        ref = self.last_loop_at or self.started_at
        grace = 3 * self.cfg.interval_s + 10.0
        return {
            "ok": (now - ref) < grace and not self.stopping,
            "session": self.session,
            "dry_run": self.cfg.dry_run,
            "iteration": self.iteration,
            "last_loop_time": self.last_loop_at,
            "seconds_since_last_loop": None if self.last_loop_at is None else round(now - self.last_loop_at, 3),
            "targets": {r.name: r.health() for r in self.runners},
        }

    # ------------------------------------------------------------------ loop
    def run(self) -> int:
        """Loop until stopped or ``max_iterations``; returns the process exit code (0)."""
        from cachetuner.daemon.session_tracking import SessionTracker

        cfg = self.cfg
        self.tracker = SessionTracker(
            cfg.tracking.enabled, cfg.tracking.tracking_uri, cfg.tracking.experiment, cfg.policy.name, self.session
        )
        resolved = resolved_config(cfg)
        self.tracker.log_params(resolved)
        self.audit.write(
            {
                "phase": "event",
                "event": "start",
                "pid": os.getpid(),
                "sessions": self.state.sessions,
                "mlflow_run_id": self.tracker.run_id,
                "config": resolved,
            }
        )
        self.save_state()
        status = "FINISHED"
        pool = ThreadPoolExecutor(max_workers=max(1, len(self.runners)), thread_name_prefix="observe")
        try:
            done = 0
            while not self.stopping:
                t0 = time.monotonic()
                self.run_once(pool)
                done += 1
                if cfg.max_iterations is not None and done >= cfg.max_iterations:
                    break
                self._stop.wait(max(0.0, cfg.interval_s - (time.monotonic() - t0)))
        except BaseException:
            status = "FAILED"
            raise
        finally:
            pool.shutdown(wait=True)
            costs = {r.name: r.costs.summary() for r in self.runners if r.costs is not None}
            for name, c in costs.items():
                saving = c["estimated_saving"]
                log.info("%s: measured cost %.6g over %d fresh intervals (%s); estimated saving against the baseline: %s",
                         name, c["measured_cost"], c["intervals"], "dollars" if c["dollars"] else "cost units",
                         "not estimated (curves not ready)" if saving is None else f"{saving:.1%}")
            self.audit.write({"phase": "event", "event": "stop", "iterations": self.iteration, "status": status,
                              "costs": costs})
            self.close(status)
        return 0

    def run_once(self, pool: ThreadPoolExecutor | None = None) -> dict[str, StepReport]:
        """One loop over every target."""
        t0 = time.monotonic()
        self.iteration += 1
        if pool is not None and len(self.runners) > 1:
            list(pool.map(lambda r: r.observe(), self.runners))
        else:
            for r in self.runners:
                r.observe()
        reports: dict[str, StepReport] = {}
        ordered = sorted(self.runners, key=lambda r: r.name != self.cfg.rollout.canary)
        canary = next((r for r in ordered if r.name == self.cfg.rollout.canary), None)
        for r in ordered:
            if self.cfg.rollout.mode == "staged" and r is not canary:
                reports[r.name] = r.step(self.iteration, override=self._promotable(canary, r), follower=True)
            else:
                reports[r.name] = r.step(self.iteration)
        self.save_state()
        self.last_loop_at = time.time()
        self.metrics.last_loop.set(self.last_loop_at)
        self.metrics.loop_seconds.observe(time.monotonic() - t0)
        self._log_interval(reports)
        return reports

    def _promotable(self, canary: TargetRunner | None, follower: TargetRunner) -> RedisConfig | None:
        """The canary's config, once it has passed the SLO for ``promote_after`` intervals in a row."""
        if canary is None or canary.current is None or canary.status != "ok":
            return None
        if canary.state.good_streak < self.cfg.rollout.promote_after or canary.current == follower.current:
            return None
        return canary.current

    def _log_interval(self, reports: dict[str, StepReport]) -> None:
        m: dict[str, float] = {}
        for name, rep in reports.items():
            s = rep.snapshot
            m[f"{name}.applied"] = float(rep.applied)
            m[f"{name}.vetoed"] = float(rep.vetoed_by is not None)
            m[f"{name}.rollback"] = float(rep.rollback)
            m[f"{name}.fresh"] = float(rep.fresh)
            if s is not None and rep.fresh:
                m[f"{name}.hit_ratio"] = s.hit_ratio
                m[f"{name}.p95_ms"] = s.latency_p95_ms
                m[f"{name}.evictions"] = float(s.evictions)
                m[f"{name}.used_memory"] = float(s.used_memory)
            m.update({f"{name}.{k}": v for k, v in rep.extra.items()})  # cost, predicted_cost_in_force/_baseline
            runner = next(r for r in self.runners if r.name == name)
            if runner.current is not None:
                m[f"{name}.maxmemory"] = float(runner.current.maxmemory)
        if self.tracker is not None:
            self.tracker.log_metrics(m, step=self.iteration)

    def close(self, status: str = "FINISHED") -> None:
        if self.http is not None:
            self.http.stop()
            self.http = None
        if self._scrape_file is not None:
            self._scrape_file.unlink(missing_ok=True)
            self._scrape_file = None
        for r in self.runners:
            r.close()
        with contextlib.suppress(OSError):
            self.save_state()
        self.audit.close()
        self._draw_timeline()
        if self.tracker is not None:
            self.tracker.close(status)
            self.tracker = None

    def _draw_timeline(self) -> None:
        """The session's timeline (:mod:`cachetuner.daemon.timeline`) to ``state_dir/timeline-<session>.png`` and the
        MLflow run. Best-effort: a picture must never keep the daemon from exiting cleanly."""
        from cachetuner.daemon.audit import read_audit
        from cachetuner.daemon.timeline import plot_timeline

        path = Path(self.cfg.state_dir) / f"timeline-{self.session}.png"
        try:
            slo = {t.name: t.slo.p95_latency_ms for t in self.cfg.targets if t.slo.p95_latency_ms}
            drawn = plot_timeline(read_audit(self.cfg.audit_path), self.session, path, slo_p95_ms=slo)
        except Exception as e:  # noqa: BLE001 (see the docstring)
            log.warning("could not draw the session's timeline: %s", e)
            return
        if drawn is not None:
            log.info("the session's timeline: %s", drawn)
            if self.tracker is not None:
                self.tracker.log_artifact(drawn, "plots")


