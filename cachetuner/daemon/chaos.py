"""Fault injection: the real daemon (a subprocess) against a local stack, one fault after another.

Setup: :class:`~cachetuner.live.stack.LocalStack` (redis-server + redis_exporter + Prometheus), a
least-privilege ACL user for the daemon (also written to the stack's ``redis.conf`` so it survives
a Redis restart, as an ``aclfile`` would in production), a supervised trace replayer in a thread
(restarted when Redis drops its connection) and a monitor thread that reads ``CONFIG GET`` ten times
a second with the admin user. The daemon runs the deliberately adversarial ``random`` policy, so
every fault happens while proposals far outside the bounds keep arriving.

Each fault gets a window ``[start, end)``: ``settle`` seconds of normal operation, the fault for
``duration_per_fault`` seconds, then ``settle`` seconds of recovery. Figures per fault, from the
audit log and the monitor's observations inside the window:

* ``out_of_bounds_applied``: distinct out-of-bounds configs the monitor saw on Redis plus audited
  applies of an out-of-bounds config (must be 0);
* ``decisions_lost``: intents without outcome or reconciliation, plus configs seen on Redis that no
  audited apply explains (must be 0);
* ``rollback_intervals``: intervals from the fault's start to the first rollback (0 when the fault
  caused none);
* ``survived``: the daemon process is alive (or exited 0 where that is the point), took a fresh
  decision after the fault, and the fault's own check passed (see ``notes``).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis
import yaml

from cachetuner.config import RedisConfig
from cachetuner.daemon.audit import read_audit
from cachetuner.daemon.config import Bounds
from cachetuner.daemon.guardrails import bounds_violations
from cachetuner.daemon.probe import CONFIG_NAMES

FAULT_NAMES: tuple[str, ...] = (
    "redis_restart",
    "redis_unreachable",
    "prometheus_down",
    "prometheus_nan",
    "triton_down",
    "config_refused",
    "latency_injection",
    "workload_shift",
    "kill9_restart",
    "sigterm",
)

MIB = 1024 * 1024
ACL_USER = "tuner"
#: The least-privilege ACL the daemon needs (docs/daemon.md): read/write config, INFO, PING, and
#: XRANGE on the sampled-request stream only.
ACL_RULES = "on resetkeys resetchannels -@all +config|get +config|set +info +ping +xrange ~cachetuner:sampled"
CHAOS_BOUNDS = Bounds(
    maxmemory_min=16 * MIB,
    maxmemory_max=128 * MIB,
    policies=["allkeys-lru", "allkeys-lfu", "volatile-lru"],
    timeouts=[0, 300],
)


@dataclass
class Observation:
    t: float
    config: RedisConfig | None
    error: str | None = None


@dataclass
class FaultWindow:
    name: str
    start: float
    fault_start: float = 0.0
    fault_end: float = 0.0
    end: float = 0.0
    recovery_s: float | None = None  # fault end -> first fresh decision
    notes: list[str] = field(default_factory=list)
    checks: dict[str, bool] = field(default_factory=dict)


class Monitor(threading.Thread):
    """CONFIG GET every ``period_s`` with the admin (default) user; keeps every observation."""

    def __init__(self, redis_url: str, period_s: float = 0.1) -> None:
        super().__init__(name="chaos-monitor", daemon=True)
        self.url, self.period_s = redis_url, period_s
        self.obs: list[Observation] = []
        self.stop_event = threading.Event()

    def run(self) -> None:
        client = redis.Redis.from_url(self.url, socket_timeout=0.5, socket_connect_timeout=0.5, decode_responses=True)
        while not self.stop_event.is_set():
            try:
                values = client.config_get(*CONFIG_NAMES)
                self.obs.append(Observation(time.time(), RedisConfig.from_redis({str(k): str(v) for k, v in values.items()})))
            except Exception as e:  # noqa: BLE001 (Redis down / paused is what we inject)
                self.obs.append(Observation(time.time(), None, type(e).__name__))
            self.stop_event.wait(self.period_s)
        client.close()


class Replayer(threading.Thread):
    """Replays a synthetic Zipf trace in a loop; reconnects when Redis drops the connection.

    The client-side metrics are served once, on one port, for the whole run (so Prometheus keeps
    one series across reconnects and workload switches).
    """

    def __init__(self, stack_dir: str, prometheus_url: str, redis_url: str) -> None:
        super().__init__(name="chaos-replayer", daemon=True)
        self.stack_dir, self.prometheus_url, self.redis_url = stack_dir, prometheus_url, redis_url
        self.params: dict[str, Any] = {"n_requests": 200_000, "n_keys": 40_000, "alpha": 1.0}
        self.seed = 0
        self.stop_event = threading.Event()
        self._switch = threading.Event()
        self.restarts = 0
        self.ready = threading.Event()

    def switch(self, params: dict[str, Any], seed: int) -> None:
        """Workload shift: a different key universe and skew from the next replay on."""
        self.params, self.seed = {**self.params, **params}, seed
        self._switch.set()

    def run(self) -> None:
        from cachetuner.live.replay import ReplayMetrics, ReplayOptions, replay
        from cachetuner.live.stack import register_target
        from cachetuner.traces import read_trace

        metrics = ReplayMetrics()
        server, port = metrics.serve(0)
        target = register_target(self.stack_dir, f"chaos-replay-{os.getpid()}", port)
        q = urllib.parse.quote(f'up{{instance="127.0.0.1:{port}"}} == 1')
        for _ in range(100):
            body = _http_json(f"{self.prometheus_url}/api/v1/query?query={q}")
            if body and body.get("data", {}).get("result"):
                break
            time.sleep(0.2)
        self.ready.set()
        try:
            while not self.stop_event.is_set():
                params = {**self.params, "rate": 1500.0, "sizes": "fixed:2048"}
                trace = read_trace("synthetic:zipf", seed=self.seed, params=params)
                self._switch.clear()
                stop = threading.Event()

                def relay(stop: threading.Event = stop) -> None:
                    while not (self.stop_event.is_set() or self._switch.is_set() or stop.is_set()):
                        time.sleep(0.05)
                    stop.set()

                watcher = threading.Thread(target=relay, daemon=True)
                watcher.start()
                try:
                    opts = ReplayOptions(
                        rate=1500.0, loop=True, duration_s=3600, miss_latency_ms=2.0, miss_sigma=0.3, metrics_port=None
                    )
                    replay(trace, self.redis_url, opts, metrics=metrics, stop=stop)
                except Exception:  # noqa: BLE001 (Redis restarted / paused: reconnect)
                    self.restarts += 1
                    self.stop_event.wait(0.3)
                finally:
                    stop.set()
                    watcher.join()
        finally:
            Path(target).unlink(missing_ok=True)
            server.shutdown()  # type: ignore[attr-defined]
            server.server_close()  # type: ignore[attr-defined]


def _http_json(url: str, timeout: float = 2.0) -> dict[str, Any] | None:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:  # noqa: S310 (loopback)
            return json.loads(r.read())
    except Exception:  # noqa: BLE001
        return None


class ChaosRun:
    """Owns the stack, the helper threads and the daemon subprocess for one ``cachetuner chaos`` run."""

    def __init__(
        self, workdir: Path, interval_s: float, duration_per_fault: float, log: Callable[[str], None], tracking: bool = True
    ) -> None:
        self.workdir = workdir
        self.tracking = tracking
        self.interval_s = interval_s
        self.duration = duration_per_fault
        self.settle = max(3.0 * interval_s, 3.0)
        self.recovery_timeout = max(30.0, 10 * interval_s)
        self.log = log
        self.password = os.urandom(12).hex()
        self.daemon: subprocess.Popen[bytes] | None = None
        self._audit_mark = 0
        self.daemon_exit_codes: list[int] = []
        self.stack: Any = None
        self.admin: redis.Redis | None = None

    # ------------------------------------------------------------------ setup / teardown
    def setup(self) -> None:
        from cachetuner.live.stack import LocalStack

        self.stack = LocalStack(self.workdir / "stack", maxmemory=64 * MIB, maxmemory_policy="allkeys-lru")
        self.stack.__enter__()
        info = self.stack.info
        self.redis_url = info.redis_url
        self.admin = redis.Redis.from_url(self.redis_url, socket_timeout=2, decode_responses=True)
        rules = ACL_RULES.split()
        self.admin.execute_command("ACL", "SETUSER", ACL_USER, *rules, f">{self.password}")
        with open(self.workdir / "stack" / "redis.conf", "a") as fh:  # survive restarts, like an aclfile
            fh.write(f"user {ACL_USER} {ACL_RULES} >{self.password}\n")
        self.monitor = Monitor(self.redis_url)
        self.monitor.start()
        self.replayer = Replayer(str(self.workdir / "stack"), info.prometheus_url, self.redis_url)
        self.replayer.start()
        self.replayer.ready.wait(30)
        self.config_path = self.workdir / "daemon.yaml"
        self.config_path.write_text(yaml.safe_dump(self.daemon_config(), sort_keys=False))

    def daemon_config(self) -> dict[str, Any]:
        port = self.stack.info.redis_port
        return {
            "interval_s": self.interval_s,
            "state_dir": str(self.workdir / "daemon"),
            # adversarial, but often enough inside the lists that changes (and rollbacks) happen
            "policy": {
                "name": "random",
                "seed": 7,
                "params": {"policies": ["allkeys-lru", "allkeys-lfu", "volatile-lru", "allkeys-random"], "timeouts": [0, 300, 1]},
            },
            "http": {"host": "127.0.0.1", "port": 0},
            "tracking": {"enabled": self.tracking, "tracking_uri": f"sqlite:///{self.workdir / 'mlflow.db'}"},
            "backoff": {"initial_s": 1.0, "max_s": 4.0},
            "hotness": {"enabled": False},
            "targets": [
                {
                    "name": "main",
                    "backend": "live",
                    "redis_url": f"redis://{ACL_USER}@127.0.0.1:{port}/0",
                    "prometheus_url": self.stack.info.prometheus_url,
                    "password_env": "CACHETUNER_REDIS_PASSWORD",
                    "bounds": CHAOS_BOUNDS.model_dump(),
                    "slo": {"p95_latency_ms": 40.0},
                    "rollback": {"enabled": True, "window_intervals": 2},
                    "max_relative_change": 0.5,
                    "cooldown_s": 0.0,
                }
            ],
        }

    def start_daemon(self) -> None:
        self._audit_mark = len(read_audit(self.workdir / "daemon" / "audit.jsonl"))
        env = {**os.environ, "CACHETUNER_REDIS_PASSWORD": self.password, "PYTHONUNBUFFERED": "1"}
        logf = open(self.workdir / "daemon.log", "ab")  # noqa: SIM115 (the child keeps it)
        self.daemon = subprocess.Popen(
            [sys.executable, "-m", "cachetuner.cli.main", "daemon", "--config", str(self.config_path)],
            stdout=logf,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            cwd=self.workdir,
            start_new_session=True,
        )
        logf.close()

    def wait_daemon_ready(self, timeout_s: float = 90.0) -> bool:
        """Until the daemon just started has written its start event and a first decision."""
        deadline = time.time() + timeout_s
        while time.time() < deadline:
            if self.daemon is not None and self.daemon.poll() is not None:
                return False
            pid = self.daemon.pid if self.daemon is not None else None
            recs = read_audit(self.workdir / "daemon" / "audit.jsonl")[self._audit_mark :]
            starts = [i for i, r in enumerate(recs) if r.get("event") == "start" and r.get("pid") == pid]
            if starts and any(r.get("phase") in ("decision", "intent") for r in recs[starts[-1] :]):
                return True
            time.sleep(0.2)
        return False

    def stop_daemon(self, sig: int = signal.SIGTERM, timeout_s: float = 30.0) -> int | None:
        p = self.daemon
        if p is None:
            return None
        if p.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(p.pid, sig)
            try:
                p.wait(timeout_s)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGKILL)
                p.wait(10)
        self.daemon = None
        self.daemon_exit_codes.append(p.returncode)
        return p.returncode

    def teardown(self) -> None:
        with contextlib.suppress(Exception):
            self.stop_daemon(signal.SIGTERM, 20)
        for t in (getattr(self, "replayer", None), getattr(self, "monitor", None)):
            if t is not None:
                t.stop_event.set()
        for name in ("redis", "prometheus", "exporter"):  # never leave a SIGSTOPped process behind
            self._signal(name, signal.SIGCONT)
        for t in (getattr(self, "replayer", None), getattr(self, "monitor", None)):
            if t is not None:
                t.join(15)
        if self.stack is not None:
            self.stack.__exit__(None, None, None)

    # ------------------------------------------------------------------ fault helpers
    def _signal(self, name: str, sig: int) -> None:
        if self.stack is None:
            return
        pid = self.stack.info.pids.get(name)
        if pid:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)

    def restart_redis(self) -> None:
        """Crash Redis (SIGKILL) and start it again from the same redis.conf (CONFIG SET is forgotten)."""
        # LocalStack.restart records the new PID in stack.json, so `stack down` still finds it.
        self.stack.restart("redis", sig=signal.SIGKILL)

    def acl(self, allow_config_set: bool) -> None:
        assert self.admin is not None
        self.admin.execute_command("ACL", "SETUSER", ACL_USER, "+config|set" if allow_config_set else "-config|set")

    # ------------------------------------------------------------------ scenarios
    def run_fault(self, name: str) -> FaultWindow:
        w = FaultWindow(name, time.time())
        time.sleep(self.settle)
        w.fault_start = time.time()
        self.log(f"fault {name}: injecting for {self.duration:g}s")
        getattr(self, f"_fault_{name}")(w)
        w.fault_end = time.time()
        if name == "sigterm":
            w.end = time.time()
            return w
        w.recovery_s = self.wait_fresh_decision(w.fault_end, timeout_s=self.recovery_timeout)
        time.sleep(self.interval_s)
        w.end = time.time()
        w.checks["daemon_alive"] = self.daemon is not None and self.daemon.poll() is None
        h = self.health()
        w.checks["healthz_ok"] = bool(h and h.get("ok"))
        return w

    def wait_fresh_decision(self, since: float, timeout_s: float) -> float | None:
        """Seconds from ``since`` to the first decision on fresh metrics (None: none within ``timeout_s``)."""
        deadline = time.time() + timeout_s
        while time.time() < deadline:
            for r in read_audit(self.workdir / "daemon" / "audit.jsonl"):
                if (
                    float(r.get("t", 0)) >= since
                    and r.get("phase") in ("decision", "intent")
                    and (r.get("slo") or {}).get("judged")
                ):
                    return round(float(r["t"]) - since, 2)
            time.sleep(0.2)
        return None

    def health(self) -> dict[str, Any] | None:
        addr = self.workdir / "daemon" / "daemon.addr"
        if not addr.exists():
            return None
        return _http_json(f"http://{addr.read_text().strip()}/healthz")

    def _fault_redis_restart(self, w: FaultWindow) -> None:
        self.restart_redis()
        time.sleep(self.duration)

    def _fault_redis_unreachable(self, w: FaultWindow) -> None:
        self._signal("redis", signal.SIGSTOP)
        try:
            time.sleep(self.duration)
        finally:
            self._signal("redis", signal.SIGCONT)

    def _fault_prometheus_down(self, w: FaultWindow) -> None:
        self._signal("prometheus", signal.SIGSTOP)
        try:
            time.sleep(self.duration)
        finally:
            self._signal("prometheus", signal.SIGCONT)

    def _fault_prometheus_nan(self, w: FaultWindow) -> None:
        """Exporter frozen: scrapes fail, Prometheus writes staleness markers, queries return no data."""
        self._signal("exporter", signal.SIGSTOP)
        try:
            time.sleep(self.duration)
        finally:
            self._signal("exporter", signal.SIGCONT)

    def _fault_triton_down(self, w: FaultWindow) -> None:
        """Swap to a daemon whose policy (hill-climb) uses hotness features served by a Triton that is
        not there; the in-process fallback must answer every interval. The fallback model has untrained
        weights unless CACHETUNER_HOTNESS_MODEL names a trained model.pt: only the path is under test."""
        from cachetuner.live.stack import free_port

        model = os.environ.get("CACHETUNER_HOTNESS_MODEL") or str(write_untrained_hotness_model(self.workdir / "hotness"))
        cfg = self.daemon_config()
        cfg["policy"] = {"name": "hill-climb"}
        cfg["hotness"] = {
            "enabled": True,
            "model_path": model,
            "triton_url": f"127.0.0.1:{free_port()}",  # nothing listens there
            "timeout_s": 0.3,
            "retry_after_s": 2.0,
            "options": {"max_keys": 256},
        }
        alt = self.workdir / "daemon-hotness.yaml"
        alt.write_text(yaml.safe_dump(cfg, sort_keys=False))
        code = self.stop_daemon(signal.SIGTERM)
        w.checks["swap_exit_0"] = code == 0
        main_cfg, self.config_path = self.config_path, alt
        try:
            self.start_daemon()
            w.checks["hotness_daemon_started"] = self.wait_daemon_ready()
            time.sleep(self.duration)
            recs = read_audit(self.workdir / "daemon" / "audit.jsonl")
            used = [
                (r.get("policy_info") or {}).get("hotness", {}).get("backend")
                for r in recs
                if float(r.get("t", 0)) >= w.fault_start and r.get("policy_info")
            ]
            w.checks["fallback_answered"] = bool(used) and all(b == "in_process" for b in used)
            w.notes.append(f"{len(used)} decisions with hotness features, backends {sorted(set(map(str, used)))}")
            w.checks["swap_back_exit_0"] = self.stop_daemon(signal.SIGTERM) == 0
        finally:
            self.config_path = main_cfg
            if self.daemon is None:
                self.start_daemon()
                w.checks["main_daemon_restarted"] = self.wait_daemon_ready()

    def _fault_config_refused(self, w: FaultWindow) -> None:
        self.acl(False)
        try:
            time.sleep(self.duration)
        finally:
            self.acl(True)

    def _fault_latency_injection(self, w: FaultWindow) -> None:
        """CLIENT PAUSE ALL 150 ms every 200 ms: every client's round trips stall -> p95 SLO breach.

        A rollback needs a breach within two intervals of a change, and metrics arrive one to three
        intervals late, so a short window can end before the daemon has had the chance: the pauses go
        on past ``duration`` until the audit log shows a rollback, bounded by ``max(4 x duration, 20 s)``.
        """
        assert self.admin is not None
        audit = self.workdir / "daemon" / "audit.jsonl"
        start = time.time()
        end, cap = start + self.duration, start + max(4 * self.duration, 20.0)

        def rolled_back() -> bool:
            return any(
                r.get("phase") == "intent" and r.get("action") == "rollback" and float(r.get("t", 0)) >= start
                for r in read_audit(audit)
            )

        while time.time() < end or (time.time() < cap and not rolled_back()):
            with contextlib.suppress(redis.RedisError):
                self.admin.execute_command("CLIENT", "PAUSE", "150", "ALL")
            time.sleep(0.2)
        with contextlib.suppress(redis.RedisError):
            self.admin.execute_command("CLIENT", "UNPAUSE")

    def _fault_workload_shift(self, w: FaultWindow) -> None:
        self.replayer.switch({"n_keys": 150_000, "alpha": 0.7}, seed=3)
        time.sleep(self.duration)

    def _fault_kill9_restart(self, w: FaultWindow) -> None:
        """SIGKILL the daemon right after it wrote an intent if possible (mid-apply), then restart it."""
        audit = self.workdir / "daemon" / "audit.jsonl"
        deadline = time.time() + self.duration / 2
        n0 = len(read_audit(audit))
        while time.time() < deadline:
            recs = read_audit(audit)
            if any(r.get("phase") == "intent" for r in recs[n0:]):
                break
            time.sleep(0.01)
        self.stop_daemon(signal.SIGKILL)
        w.notes.append(f"killed with {len(read_audit(audit)) - n0} new audit lines since the fault began")
        self.start_daemon()
        w.checks["restarted"] = self.wait_daemon_ready()
        time.sleep(max(0.0, w.fault_start + self.duration - time.time()))

    def _fault_sigterm(self, w: FaultWindow) -> None:
        code = self.stop_daemon(signal.SIGTERM, timeout_s=max(30.0, 4 * self.interval_s))
        w.checks["exit_0"] = code == 0
        recs = read_audit(self.workdir / "daemon" / "audit.jsonl")
        w.checks["stop_event"] = bool(recs) and recs[-1].get("event") == "stop"
        w.notes.append(f"exit code {code}")


def write_untrained_hotness_model(out_dir: Path) -> Path:
    """A small TorchScript HotnessLSTM with random weights (fallback-path tests only)."""
    path = out_dir / "model.pt"
    if path.is_file():
        return path
    import torch

    from cachetuner.hotness_model.model import HotnessLSTM, LSTMConfig
    from cachetuner.hotness_model.train import save_model

    torch.manual_seed(0)
    return save_model(HotnessLSTM(LSTMConfig(seq_len=8, hidden=8, layers=1)), out_dir, {"note": "untrained, chaos only"})


# ---------------------------------------------------------------------- evaluation
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
    if w.name != "sigterm":
        checks["fresh_decision_after_fault"] = bool(fresh_after)
    # fault effects reach the audit log with the metrics pipeline's lag (scrape + settle): judge
    # fault-specific reactions from the fault's start to the end of the window
    actions = [r.get("action") for r in in_w if r.get("phase") in ("decision", "intent") and float(r["t"]) >= w.fault_start]
    events = [r.get("event") for r in in_w if r.get("phase") == "event"]
    if w.name == "redis_restart":
        checks["restart_detected"] = "redis_restart_detected" in events
    if w.name in ("prometheus_down", "prometheus_nan"):
        checks["held_on_stale"] = "hold_stale" in actions
    if w.name == "redis_unreachable":
        checks["unreachable_reported"] = "unreachable" in events
    if w.name == "config_refused":
        failed = [r for r in in_w if r.get("phase") == "outcome" and r.get("outcome") == "failed"]
        checks["refusal_reported"] = bool(failed)
        budget = math.ceil((w.fault_end - w.fault_start) / interval_s) + 1
        checks["no_hot_loop"] = len(failed) <= budget
        w.notes.append(f"{len(failed)} refused CONFIG SET in {w.fault_end - w.fault_start:.0f}s")
    if w.name == "latency_injection":
        checks["rolled_back"] = bool(rb_after)
    if w.name == "kill9_restart":
        reconciled = [r for r in in_w if r.get("phase") == "reconciled"]
        w.notes.append(f"{len(reconciled)} intent(s) reconciled after restart")
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


def run_chaos(
    faults: list[str],
    *,
    duration_per_fault: float = 6.0,
    interval_s: float = 1.0,
    workdir: Path | None = None,
    console: Any = None,
    tracking: bool = True,
) -> dict[str, Any]:
    """Run every fault of ``faults`` (in :data:`FAULT_NAMES` order) and return the report."""
    order = [f for f in FAULT_NAMES if f in faults]
    tmp = None
    if workdir is None:
        tmp = tempfile.TemporaryDirectory(prefix="cachetuner-chaos-")
        workdir = Path(tmp.name)
    workdir = Path(workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)

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
            tail = (workdir / "daemon.log").read_text(errors="replace")[-2000:]
            raise RuntimeError(f"daemon did not start; log tail: {tail}")
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
