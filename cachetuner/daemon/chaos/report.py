"""Evaluation of each fault window (audit log + CONFIG GET observations) and :func:`run_chaos`, the run
behind ``cachetuner chaos`` and its JSON report."""

from __future__ import annotations

import json
import math
import tempfile
import time
from pathlib import Path
from typing import Any

from cachetuner.config import RedisConfig
from cachetuner.daemon.audit import read_audit
from cachetuner.daemon.chaos.faults import FAULTS, FaultWindow, WindowEvidence, get_fault
from cachetuner.daemon.chaos.harness import CHAOS_BOUNDS, MIB, ChaosRun, Observation
from cachetuner.daemon.config import Bounds
from cachetuner.daemon.guardrails import bounds_violations
from cachetuner.errors import ConfigError, ServiceError


def _cfg(d: dict[str, Any] | None) -> RedisConfig | None:
    return None if d is None else RedisConfig(**d)


def _apply_spans(records: list[dict[str, Any]]) -> list[tuple[float, float, RedisConfig, RedisConfig]]:
    """(intent time, outcome time, config before, config requested) of every audited apply."""
    outcome_t = {r["decision_id"]: float(r["t"]) for r in records if r.get("phase") in ("outcome", "reconciled")}
    spans = []
    for r in records:
        if r.get("phase") == "intent" and r.get("current") and r.get("to_apply"):
            end = outcome_t.get(r["decision_id"], float("inf"))
            spans.append((float(r["t"]), end, RedisConfig(**r["current"]), RedisConfig(**r["to_apply"])))
    return spans


def _mid_apply(c: RedisConfig, t: float, spans: list[tuple[float, float, RedisConfig, RedisConfig]], slack: float = 0.5) -> bool:
    """True when ``c`` was seen while an audited apply was in flight and every parameter equals either the
    old or the requested value: the live backend sets parameters one ``CONFIG SET`` at a time, so a
    reader can catch the mix in between (not a lost decision)."""
    for t0, t1, old, new in spans:
        if t0 - slack <= t <= t1 + slack:
            a, b, x = old.model_dump(), new.model_dump(), c.model_dump()
            if all(x[k] in (a[k], b[k]) for k in x):
                return True
    return False


def _rollback_delay(rb: dict[str, Any], records: list[dict[str, Any]]) -> int:
    """Loop intervals from the first SLO-breaching interval after the change being undone to the rollback
    (0 = rolled back in the very interval whose metrics showed the breach)."""
    before = [r for r in records if r.get("target") == rb.get("target") and float(r["t"]) <= float(rb["t"])]
    changes = [r for r in before if r.get("phase") == "outcome" and r.get("outcome") == "applied" and r.get("action") != "rollback"]
    if not changes:
        return 0
    after_change = [r for r in before if float(r["t"]) > float(changes[-1]["t"]) and r.get("phase") in ("decision", "intent")]
    breached = [r for r in after_change if (r.get("slo") or {}).get("breaches")]
    if not breached:
        return 0
    return int(rb.get("iteration", 0)) - int(breached[0].get("iteration", 0))


def evaluate_window(
    w: FaultWindow, records: list[dict[str, Any]], obs: list[Observation], bounds: Bounds, interval_s: float, baseline: set[RedisConfig]
) -> dict[str, Any]:
    """Per-fault figures from the audit log and the CONFIG GET observations inside the window."""
    fault = get_fault(w.name)
    in_w = [r for r in records if w.start <= float(r.get("t", 0)) < w.end]
    seen = [o for o in obs if w.start <= o.t < w.end and o.config is not None]
    # out of bounds: audited applies + configs seen on Redis
    oob_audit = sum(
        1
        for r in in_w
        if r.get("phase") in ("outcome", "reconciled")
        and r.get("outcome") == "applied"
        and bounds_violations(RedisConfig(**r["applied"]), bounds)
    )
    oob_seen = {o.config for o in seen if o.config is not None and bounds_violations(o.config, bounds)}
    # lost decisions: intents never closed (anywhere in the log) + changes on Redis no audited apply explains
    closed = {r["decision_id"] for r in records if r.get("phase") in ("outcome", "reconciled")}
    open_intents = [r for r in in_w if r.get("phase") == "intent" and r["decision_id"] not in closed]
    explained = set(baseline)
    for r in records:
        if r.get("phase") in ("intent", "outcome", "reconciled"):
            for k in ("to_apply", "applied"):
                c = _cfg(r.get(k))
                if c is not None:
                    explained.add(c)
    applies = _apply_spans(records)
    unexplained = {
        o.config for o in seen if o.config not in explained and not _mid_apply(o.config, o.t, applies)  # type: ignore[arg-type]
    }
    rollbacks = [r for r in in_w if r.get("phase") == "intent" and r.get("action") == "rollback"]
    rb_after = [r for r in rollbacks if float(r["t"]) >= w.fault_start]
    to_first_rollback = math.ceil((float(rb_after[0]["t"]) - w.fault_start) / interval_s) if rb_after else None
    rollback_intervals = max((_rollback_delay(rb, records) for rb in rollbacks), default=0)
    fresh_after = [
        r
        for r in in_w
        if float(r["t"]) >= w.fault_end
        and r.get("phase") in ("decision", "intent")
        and (r.get("slo") or {}).get("judged")
    ]
    checks = dict(w.checks)
    if not fault.stops_daemon:
        checks["fresh_decision_after_fault"] = bool(fresh_after)
    # fault effects reach the audit log with the metrics pipeline's lag (scrape + settle): judge
    # fault-specific reactions from the fault's start to the end of the window
    actions = [r.get("action") for r in in_w if r.get("phase") in ("decision", "intent") and float(r["t"]) >= w.fault_start]
    events = [r.get("event") for r in in_w if r.get("phase") == "event"]
    checks.update(fault.judge(w, WindowEvidence(in_w, actions, events, rb_after, interval_s)))
    return {
        "survived": all(checks.values()),
        "out_of_bounds_applied": oob_audit + len(oob_seen),
        "rollback_intervals": rollback_intervals,
        "decisions_lost": len(open_intents) + len(unexplained),
        "rollbacks": len(rollbacks),
        "intervals_fault_to_rollback": to_first_rollback,
        "decisions": sum(1 for r in in_w if r.get("phase") in ("decision", "intent")),
        "applied": sum(1 for r in in_w if r.get("phase") == "outcome" and r.get("outcome") == "applied"),
        "recovery_s": w.recovery_s,
        "checks": checks,
        "notes": "; ".join(w.notes),
    }


def _last_log_line(path: Path) -> str:
    """The line of a daemon log that says why it stopped: the last ``error: ...`` line, else the last non-blank
    line that is not part of a traceback's frames (``<empty log>`` when there is none)."""
    try:
        lines = [ln.strip() for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return "<no log>"
    errors = [ln for ln in lines if ln.startswith("error:")]
    if errors:
        return errors[-1]
    plain = [ln for ln in lines if not ln.startswith(("File ", "Traceback ", "^", "~"))]
    return plain[-1] if plain else "<empty log>"


def check_chaos_options(
    faults: list[str], *, duration_per_fault: float, interval_s: float, workdir: Path | None = None
) -> None:
    """One-line :class:`ConfigError` (naming the CLI option) for chaos options that cannot run; nothing starts."""
    if not faults:
        raise ConfigError(f"--faults: no fault given; valid faults: {', '.join(FAULTS)}")
    for name in faults:
        get_fault(name)
    for option, value, least in (("--duration-per-fault", duration_per_fault, 2.0), ("--interval", interval_s, 1.0)):
        if not math.isfinite(value) or value < least:
            raise ConfigError(f"{option}: expected a finite number of seconds >= {least:g}, got {value!r}")
    if workdir is not None:
        from cachetuner.outputs import check_output_dir

        check_output_dir(workdir, "--workdir")


def run_chaos(
    faults: list[str],
    *,
    duration_per_fault: float = 6.0,
    interval_s: float = 1.0,
    workdir: Path | None = None,
    console: Any = None,
    tracking: bool = True,
) -> dict[str, Any]:
    """Run every fault of ``faults`` (in registry order, :data:`~.faults.FAULTS`) and return the report.

    An unknown name, an empty list, a non-finite duration or interval and a workdir that cannot be a folder raise
    :class:`~cachetuner.errors.ConfigError` before anything starts; a daemon that does not come up raises
    :class:`~cachetuner.errors.ServiceError` with the last line of its log."""
    check_chaos_options(faults, duration_per_fault=duration_per_fault, interval_s=interval_s, workdir=workdir)
    order = [name for name in FAULTS if name in faults]
    tmp = None
    if workdir is None:
        tmp = tempfile.TemporaryDirectory(prefix="cachetuner-chaos-")
        workdir = Path(tmp.name)
    workdir = Path(workdir).resolve()
    try:
        workdir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ConfigError(f"--workdir {workdir}: cannot create the folder ({e.strerror or e})") from None

    def log(msg: str) -> None:
        if console is not None:
            console.print(f"[dim]chaos[/] {msg}")

    run = ChaosRun(workdir, interval_s, duration_per_fault, log, tracking)
    t0 = time.time()
    windows: list[FaultWindow] = []
    try:
        log("starting redis-server, redis_exporter, prometheus, replayer")
        run.setup()
        run.start_daemon()
        if not run.wait_daemon_ready():
            raise ServiceError(f"chaos: the daemon did not start: {_last_log_line(workdir / 'daemon.log')} "
                               f"(full log: {workdir / 'daemon.log'})")
        baseline = {o.config for o in run.monitor.obs[:5] if o.config is not None}
        for name in order:
            windows.append(run.run_fault(name))
    finally:
        obs = list(run.monitor.obs) if hasattr(run, "monitor") else []
        run.teardown()
    records = read_audit(workdir / "daemon" / "audit.jsonl")
    with open(workdir / "monitor.jsonl", "w") as fh:  # the CONFIG GET observations, for re-auditing
        for o in obs:
            fh.write(json.dumps({"t": o.t, "config": o.config.model_dump() if o.config else None, "error": o.error}) + "\n")
    stack_conf = RedisConfig(maxmemory=64 * MIB, maxmemory_policy="allkeys-lru")
    baseline = baseline | {stack_conf, RedisConfig.from_redis({**stack_conf.to_redis()})}
    report = {
        w.name: evaluate_window(w, records, obs, CHAOS_BOUNDS, interval_s, baseline) for w in windows
    }
    final_exit = run.daemon_exit_codes[-1] if run.daemon_exit_codes else None
    out = {
        "faults": report,
        "all_survived": all(r["survived"] for r in report.values()),
        "out_of_bounds_applied": sum(r["out_of_bounds_applied"] for r in report.values()),
        "decisions_lost": sum(r["decisions_lost"] for r in report.values()),
        "daemon_final_exit_code": final_exit,
        "interval_s": interval_s,
        "duration_per_fault_s": duration_per_fault,
        "wall_s": round(time.time() - t0, 1),
        "monitor_observations": len(obs),
        "replayer_reconnects": run.replayer.restarts if hasattr(run, "replayer") else 0,
        "workdir": None if tmp is not None else str(workdir),
    }
    if tmp is not None:
        tmp.cleanup()
    return out
