"""The chaos harness: a local stack, the daemon as a subprocess, a supervised replayer and a CONFIG GET
monitor; :meth:`ChaosRun.run_fault` runs one fault of :mod:`.faults` in its window."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis
import yaml

from cachetuner.config import REDIS_PARAM_NAMES, RedisConfig
from cachetuner.daemon.audit import read_audit
from cachetuner.daemon.chaos.faults import FaultWindow, get_fault
from cachetuner.daemon.config import Bounds

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
                values = client.config_get(*REDIS_PARAM_NAMES)
                self.obs.append(Observation(time.time(), RedisConfig.from_redis({str(k): str(v) for k, v in values.items()})))
            except Exception as e:  # noqa: BLE001 (Redis down / paused is what we inject)
                self.obs.append(Observation(time.time(), None, type(e).__name__))
            self.stop_event.wait(self.period_s)
        client.close()


class ChaosReplayer(threading.Thread):
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

    @property
    def audit_path(self) -> Path:
        """The daemon's write-ahead audit log."""
        return self.workdir / "daemon" / "audit.jsonl"

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
        self.replayer = ChaosReplayer(str(self.workdir / "stack"), info.prometheus_url, self.redis_url)
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
        self._audit_mark = len(read_audit(self.audit_path))
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

    def wait_daemon_ready(self, timeout_s: float = 300.0) -> bool:
        """Until the daemon just started has written its start event and a decision on traffic.

        A decision on an interval with requests has run the whole decision path once: the sampled
        requests, the mirror env's miss-ratio curves, whose numba kernel compiles on its first use
        where its cache is cold (a fresh checkout: 40-90 s on 2 busy cores). A decision on an idle
        interval (the first one often is) has not, and a fault injected then would be judged on a
        daemon still compiling (no decision for tens of seconds), not on how it recovers."""
        deadline = time.time() + timeout_s
        while time.time() < deadline:
            if self.daemon is not None and self.daemon.poll() is not None:
                return False
            pid = self.daemon.pid if self.daemon is not None else None
            recs = read_audit(self.audit_path)[self._audit_mark :]
            starts = [i for i, r in enumerate(recs) if r.get("event") == "start" and r.get("pid") == pid]
            if starts and any(
                r.get("phase") in ("decision", "intent") and (r.get("state") or {}).get("requests", 0) > 0
                for r in recs[starts[-1] :]
            ):
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
            self.send_signal(name, signal.SIGCONT)
        for t in (getattr(self, "replayer", None), getattr(self, "monitor", None)):
            if t is not None:
                t.join(15)
        if self.stack is not None:
            self.stack.__exit__(None, None, None)

    # ------------------------------------------------------------------ fault helpers
    def send_signal(self, name: str, sig: int) -> None:
        """Signal one stack process (``redis``, ``prometheus``, ``exporter``) by its recorded PID."""
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
        """``settle`` s of normal operation, the fault, then recovery; the window's times and checks."""
        fault = get_fault(name)
        w = FaultWindow(name, time.time())
        time.sleep(self.settle)
        w.fault_start = time.time()
        self.log(f"fault {name}: injecting for {self.duration:g}s")
        fault.run(self, w)
        w.fault_end = time.time()
        if fault.stops_daemon:
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
            for r in read_audit(self.audit_path):
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

