"""A local observability stack: redis-server + prometheus-redis-exporter + prometheus, on free loopback ports.

Used by ``cachetuner stack up/down``, the integration tests, ``bench replay``, ``fidelity`` and
``live-eval``. Every process is started in its own session (its PID is its process-group id) and
recorded in ``DIR/stack.json`` right after it is spawned, so ``stack down`` can stop everything by
PID even when the command that started the stack was killed half-way. Before killing, the recorded
command line is compared with ``/proc/PID/cmdline`` so a recycled PID is never hit.

Load generators register their ``/metrics`` port by writing a file into ``DIR/targets/`` (Prometheus
``file_sd``), see :meth:`LocalStack.register_target`; a daemon (``http.stack_dir``) registers into
``DIR/targets/daemon/``, scraped as job ``cachetuner-daemon`` as in ``deploy/prometheus.yml``, so the
shipped alert rules (``deploy/alerts.yml``, loaded with ``rule_files``) see it as they would in production.

Ports: the three programs cannot report a port the OS chose, so a free one is picked first and passed
on; another process (a second test worker, a client's outgoing connection) may take it in between. A
process that then exits with "address already in use" makes :meth:`LocalStack.up` start the stack again
on new ports, and readiness only counts this stack's own processes: redis-server must report the
recorded PID, and every process must still be running once all checks pass.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from cachetuner.errors import ConfigError, ServiceError
from cachetuner.ports import free_port

REDIS_SERVER = "/usr/bin/redis-server"
REDIS_EXPORTER = "/usr/bin/prometheus-redis-exporter"
PROMETHEUS = "/usr/bin/prometheus"
PROMTOOL = "/usr/bin/promtool"

#: Prometheus scrape interval of the stack; the live backend waits this long after an interval
#: boundary before reading, so the boundary sample has been ingested.
SCRAPE_INTERVAL_S = 1.0
STATE_FILE = "stack.json"
TARGETS_DIR = "targets"
#: Prometheus job name of load generators registered through file_sd.
REPLAY_JOB = "cachetuner-replay"
#: Prometheus job name of tuning daemons registered through file_sd (``DIR/targets/daemon/``), as in deploy/.
DAEMON_JOB = "cachetuner-daemon"


#: how many times :meth:`LocalStack.up` starts over on new ports when one was taken before its process bound it
PORT_ATTEMPTS = 4


class PortTakenError(ServiceError):
    """A stack process could not bind its port: another process took it after it was picked."""


@dataclass
class StackInfo:
    """What ``stack.json`` records: ports, URLs and the PID + command line of each process."""

    dir: str
    redis_port: int = 0
    exporter_port: int = 0
    prometheus_port: int = 0
    maxmemory: int = 0
    pids: dict[str, int] = field(default_factory=dict)
    cmdlines: dict[str, list[str]] = field(default_factory=dict)

    @property
    def redis_url(self) -> str:
        return f"redis://127.0.0.1:{self.redis_port}/0"

    @property
    def exporter_url(self) -> str:
        return f"http://127.0.0.1:{self.exporter_port}/metrics"

    @property
    def prometheus_url(self) -> str:
        return f"http://127.0.0.1:{self.prometheus_port}"

    def urls(self) -> dict[str, str]:
        return {"redis": self.redis_url, "exporter": self.exporter_url, "prometheus": self.prometheus_url}


def _proc_cmdline(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    parts = [p.decode(errors="replace") for p in raw.split(b"\0") if p]
    return parts or None


def _is_same_process(pid: int, cmdline: list[str]) -> bool:
    """True when ``pid`` still runs the recorded command (guards against PID reuse).

    redis-server rewrites its argv (``redis-server 127.0.0.1:PORT``), so only the executable's base
    name and, for redis, the port are compared.
    """
    current = _proc_cmdline(pid)
    if not current or not cmdline:
        return False
    exe = os.path.basename(cmdline[0])
    if os.path.basename(current[0].split()[0]) != exe:
        return False
    if exe == "redis-server":
        port = cmdline[cmdline.index("--port") + 1] if "--port" in cmdline else ""
        return f":{port}" in " ".join(current)
    return current == cmdline


def pid_alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    return _proc_cmdline(pid) is not None and not _is_zombie(pid)


def _wait_gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            # Reap it if it is our child; otherwise just probe.
            done, _ = os.waitpid(pid, os.WNOHANG)
            if done == pid:
                return True
        except ChildProcessError:
            pass
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        if _proc_cmdline(pid) is None or _is_zombie(pid):
            return True
        time.sleep(0.05)
    return False


def _is_zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def _http_get(url: str, timeout: float = 2.0) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as r:  # noqa: S310 (loopback only)
        return r.read()


class LocalStack:
    """Start / stop the three processes under ``dir``; a context manager for tests and commands.

    Args:
        dir: where configs, data, logs, ``stack.json`` and the file_sd ``targets/`` folder go.
        maxmemory: Redis's ``maxmemory`` at start (bytes; 0 = unlimited).
        maxmemory_policy: Redis's policy at start.
        ready_timeout_s: how long :meth:`up` waits for every readiness check.
        redis_only: start redis-server alone (benchmarks, fidelity runs: no exporter client in Redis).
    """

    def __init__(
        self,
        dir: str | os.PathLike[str],
        *,
        maxmemory: int = 64 * 1024 * 1024,
        maxmemory_policy: str = "allkeys-lru",
        ready_timeout_s: float = 60.0,
        redis_only: bool = False,
        redis_options: Mapping[str, str] | None = None,
        rule_files: Sequence[str | os.PathLike[str]] = (),
    ) -> None:
        _check_redis_start(maxmemory, maxmemory_policy)
        self.dir = Path(dir).resolve()
        #: Prometheus rule files (alerting/recording rules, e.g. deploy/alerts.yml) the stack's Prometheus evaluates
        self.rule_files = [Path(f).resolve() for f in rule_files]
        for f in self.rule_files:
            check_rule_file(f)
        #: extra ``redis.conf`` directives (e.g. ``{"enable-debug-command": "yes"}`` for tests that read DEBUG HTSTATS)
        self.redis_options = dict(redis_options or {})
        self.maxmemory = maxmemory
        self.maxmemory_policy = maxmemory_policy
        self.ready_timeout_s = ready_timeout_s
        self.redis_only = redis_only
        self.info = StackInfo(dir=str(self.dir), maxmemory=maxmemory)
        self._procs: dict[str, subprocess.Popen[bytes]] = {}  # what this instance spawned
        self._log_start: dict[str, int] = {}  # where each process's output of this start begins in its log

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> LocalStack:
        try:
            self.up()
        except BaseException:
            self.abort()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.down()

    def up(self) -> StackInfo:
        """Write configs, spawn the three processes (recording each PID at once), wait until ready.

        A port taken between its choice and the bind (:class:`PortTakenError`) stops what this attempt
        started and starts over on new ports, up to :data:`PORT_ATTEMPTS` times."""
        if self.dir.exists() and not self.dir.is_dir():
            raise ConfigError(f"--dir {self.dir}: a file, not a folder for the stack")
        if (self.dir / STATE_FILE).exists():
            try:
                old = load_state(self.dir)
            except ConfigError as e:  # it may record a stack that still runs: starting over would orphan it
                raise ConfigError(f"{e}{_stop_by_hand(self.dir)}; remove it to start a new stack here") from None
            if old and any(_is_same_process(p, old.cmdlines.get(n, [])) for n, p in old.pids.items()):
                raise ServiceError(f"a stack is already running in {self.dir} (run `cachetuner stack down --dir {self.dir}`)")
        attempt = 1
        while True:
            try:
                return self._start()
            except PortTakenError:
                self.abort()
                for proc in self._procs.values():
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        proc.wait(5.0)  # reap (no zombie)
                self._procs = {}
                self.info.pids.clear()
                self.info.cmdlines.clear()
                if attempt >= PORT_ATTEMPTS:
                    raise
                attempt += 1

    def _start(self) -> StackInfo:
        """One attempt of :meth:`up` on newly picked ports."""
        # Fresh TSDB and targets: samples of an earlier stack in the same folder would fake readiness.
        for sub in ("prometheus-data", TARGETS_DIR):
            shutil.rmtree(self.dir / sub, ignore_errors=True)
        for sub in ("logs", "redis", "prometheus-data", TARGETS_DIR, f"{TARGETS_DIR}/daemon"):
            try:
                (self.dir / sub).mkdir(parents=True, exist_ok=True)
            except OSError as e:  # a file on the way (--dir a/b with a a file), no permission, read-only disk
                raise ConfigError(f"--dir {self.dir}: cannot create {sub}/ there ({e.strerror})") from None
        info = self.info
        info.redis_port = free_port()
        info.exporter_port = free_port()
        info.prometheus_port = free_port()
        self._save()

        redis_conf = self.dir / "redis.conf"
        redis_conf.write_text(
            "\n".join(
                [
                    "bind 127.0.0.1",
                    f"port {info.redis_port}",
                    'save ""',
                    "appendonly no",
                    "protected-mode yes",
                    "daemonize no",
                    f"dir {self.dir / 'redis'}",
                    f"maxmemory {self.maxmemory}",
                    f"maxmemory-policy {self.maxmemory_policy}",
                    f"logfile {self.dir / 'logs' / 'redis.log'}",
                    *(f"{k} {v}" for k, v in self.redis_options.items()),
                    "",
                ]
            )
        )
        self._spawn("redis", [REDIS_SERVER, str(redis_conf), "--port", str(info.redis_port)])
        self._wait(lambda: self._redis_ping(), "redis-server PING", "redis.log")
        if self.redis_only:
            self._check_running()
            return info

        self._spawn(
            "exporter",
            [
                REDIS_EXPORTER,
                f"-redis.addr=redis://127.0.0.1:{info.redis_port}",
                f"-web.listen-address=127.0.0.1:{info.exporter_port}",
                "-include-config-metrics",
                "-redis-only-metrics",
            ],
        )
        self._wait(lambda: b"redis_up 1" in _http_get(info.exporter_url), "redis_exporter /metrics", "exporter.log")

        prom_yml = self.dir / "prometheus.yml"
        prom_yml.write_text(
            "\n".join(
                [
                    "global:",
                    f"  scrape_interval: {SCRAPE_INTERVAL_S:g}s",
                    f"  evaluation_interval: {SCRAPE_INTERVAL_S:g}s",
                    "scrape_configs:",
                    "  - job_name: redis",
                    "    static_configs:",
                    f"      - targets: ['127.0.0.1:{info.exporter_port}']",
                    f"  - job_name: {REPLAY_JOB}",
                    "    file_sd_configs:",
                    f"      - files: ['{self.dir / TARGETS_DIR}/*.json']",
                    "        refresh_interval: 1s",
                    f"  - job_name: {DAEMON_JOB}",
                    "    file_sd_configs:",
                    f"      - files: ['{self.dir / TARGETS_DIR}/daemon/*.json']",
                    "        refresh_interval: 1s",
                    *(["rule_files:", *(f"  - '{f}'" for f in self.rule_files)] if self.rule_files else []),
                    "",
                ]
            )
        )
        self._spawn(
            "prometheus",
            [
                PROMETHEUS,
                f"--config.file={prom_yml}",
                f"--storage.tsdb.path={self.dir / 'prometheus-data'}",
                f"--web.listen-address=127.0.0.1:{info.prometheus_port}",
                "--storage.tsdb.retention.time=1d",
                "--web.enable-lifecycle",
            ],
        )
        self._wait(lambda: _http_get(info.prometheus_url + "/-/ready").strip() != b"", "prometheus /-/ready", "prometheus.log")
        self._wait(self._has_first_sample, "prometheus first sample of redis_up", "prometheus.log")
        # An exporter that lost its port exits at once, long before this: it was another's that answered.
        self._check_running()
        return info

    def abort(self) -> list[str]:
        """Stop what *this* instance started (a failed :meth:`up`); another stack in the folder is left alone."""
        if not self.info.pids:
            return []
        return self.down()

    def down(self) -> list[str]:
        """Stop whatever ``stack.json`` records; returns the names of the processes stopped."""
        return stop_stack(self.dir)

    def restart(self, name: str, *, sig: int = signal.SIGTERM, timeout_s: float = 10.0) -> int:
        """Stop process ``name`` ("redis", "exporter" or "prometheus") and start it again; returns the new PID.

        The process group is sent ``sig`` (``signal.SIGKILL`` to simulate a crash; escalates to SIGKILL
        after ``timeout_s``), only after ``/proc/PID/cmdline`` confirms it still runs the recorded
        program. The same command line is spawned again (same port, same config file, so Redis forgets
        every ``CONFIG SET``), its new PID is written to ``stack.json`` before the readiness check, and
        :meth:`down` / ``stack down`` therefore still stop everything. Works on a stack started by
        another process too (the state is read from ``stack.json`` when this instance has none).
        """
        if not self.info.pids:
            loaded = load_state(self.dir)
            if loaded is not None:
                self.info = loaded
        checks = {
            "redis": (self._redis_ping, "redis-server PING", "redis.log"),
            "exporter": (lambda: b"redis_up 1" in _http_get(self.info.exporter_url), "redis_exporter /metrics", "exporter.log"),
            "prometheus": (
                lambda: _http_get(self.info.prometheus_url + "/-/ready").strip() != b"",
                "prometheus /-/ready",
                "prometheus.log",
            ),
        }
        if name not in checks:
            raise ServiceError(f"stack restart: unknown process {name!r}; valid: {', '.join(checks)}")
        pid = self.info.pids.get(name)
        argv = self.info.cmdlines.get(name)
        if pid is None or not argv:
            raise ServiceError(f"stack restart: {name} is not part of the stack in {self.dir}")
        if _is_same_process(pid, argv):
            _kill_group(pid, sig, timeout_s)
        proc = self._procs.pop(name, None)
        if proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(5.0)  # reap it (no zombie)
        self._spawn(name, argv)
        check, what, log_name = checks[name]
        self._wait(check, f"{what} after restart", log_name)
        return self.info.pids[name]

    # ------------------------------------------------------------------ helpers
    @property
    def redis_url(self) -> str:
        return self.info.redis_url

    @property
    def prometheus_url(self) -> str:
        return self.info.prometheus_url

    def register_target(self, name: str, port: int, *, job: str = REPLAY_JOB) -> Path:
        """Tell Prometheus to scrape ``127.0.0.1:port`` (file_sd) as ``job``; returns the file to remove later."""
        return register_target(self.dir, name, port, job=job)

    def _save(self) -> None:
        tmp = self.dir / (STATE_FILE + ".tmp")
        tmp.write_text(json.dumps(asdict(self.info), indent=2))
        os.replace(tmp, self.dir / STATE_FILE)

    def _spawn(self, name: str, argv: list[str]) -> None:
        log = open(self.dir / "logs" / f"{name}.log", "ab")  # noqa: SIM115 (the child keeps it)
        # where this start's output begins in the log (an earlier attempt's is above it)
        self._log_start[name] = log.tell()
        try:
            proc = subprocess.Popen(
                argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True, cwd=self.dir
            )
        except OSError as e:
            raise ServiceError(f"cannot start {argv[0]}: {e}") from e
        finally:
            log.close()
        self.info.pids[name] = proc.pid
        self.info.cmdlines[name] = argv
        self._save()
        # Keep the Popen so a context-manager user can reap it (no zombies in tests).
        self._procs[name] = proc

    def _check_running(self, what: str = "the stack to be ready") -> None:
        """Raise when a process this instance started has exited (:class:`PortTakenError` when it could
        not bind its port)."""
        for name, proc in self._procs.items():
            if proc.poll() is not None:
                log = _tail(self.dir / "logs" / f"{name}.log", start=self._log_start.get(name, 0))
                port = getattr(self.info, f"{name}_port", "?")
                msg = f"{name} exited with code {proc.returncode} while waiting for {what}; log: {log}"
                if re.search(r"address already in use", log, re.IGNORECASE):
                    raise PortTakenError(f"port {port} was taken before {name} could bind it: {msg}")
                raise ServiceError(msg)

    def _wait(self, check: object, what: str, log_name: str) -> None:
        deadline = time.monotonic() + self.ready_timeout_s
        last: Exception | None = None
        while time.monotonic() < deadline:
            self._check_running(what)
            try:
                if check():  # type: ignore[operator]
                    return
            except Exception as e:  # noqa: BLE001 (any failure means: not ready yet)
                last = e
            time.sleep(0.1)
        raise ServiceError(
            f"timed out after {self.ready_timeout_s:.0f}s waiting for {what} ({last}); see {self.dir / 'logs' / log_name}"
        )

    def _redis_ping(self) -> bool:
        """PONG from this stack's redis-server: ``INFO server`` must name the recorded PID (a server
        that took the port first answers PING too)."""
        with socket.create_connection(("127.0.0.1", self.info.redis_port), timeout=1.0) as s:
            s.sendall(b"PING\r\nINFO server\r\n")
            f = s.makefile("rb")
            if not f.readline().startswith(b"+PONG"):
                return False
            header = f.readline()
            if not header.startswith(b"$"):
                return False
            body = f.read(int(header[1:]))
        m = re.search(rb"^process_id:(\d+)", body, re.MULTILINE)
        return m is not None and int(m.group(1)) == self.info.pids.get("redis")

    def _has_first_sample(self) -> bool:
        query = urllib.parse.quote(f'redis_up{{instance="127.0.0.1:{self.info.exporter_port}"}}')
        body = json.loads(_http_get(self.info.prometheus_url + "/api/v1/query?query=" + query))
        return bool(body.get("data", {}).get("result"))


def _tail(path: Path, n: int = 400, start: int = 0) -> str:
    """The last ``n`` characters of ``path`` from byte ``start`` on, one line."""
    try:
        with path.open("rb") as f:
            f.seek(start)
            return f.read().decode(errors="replace")[-n:].replace("\n", " | ")
    except OSError:
        return "(no log)"


def _check_redis_start(maxmemory: int, policy: str) -> None:
    """Refuse what redis-server would refuse at start, before anything is spawned: otherwise ``stack up``
    starts the exporter and Prometheus and then reports Redis's FATAL log, flattened into one long line."""
    from cachetuner.config import REDIS_POLICIES

    if isinstance(maxmemory, bool) or not isinstance(maxmemory, int) or maxmemory < 0:
        raise ConfigError(f"--maxmemory: bytes must be an integer >= 0 (0 = no limit), got {maxmemory!r}")
    if policy not in REDIS_POLICIES:
        raise ConfigError(f"--policy: unknown maxmemory-policy {policy!r}; one of {', '.join(REDIS_POLICIES)}")


def load_state(dir: str | os.PathLike[str]) -> StackInfo | None:
    """The ``stack.json`` of ``dir``, or None when there is none.

    One that exists but does not parse is a :class:`ConfigError` naming it, not None: taken for "no
    stack", ``stack down`` would report nothing to stop while the processes it records keep running."""
    path = Path(dir) / STATE_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError):
        return None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: unreadable stack.json ({getattr(e, 'strerror', None) or e})") from None
    try:
        data = json.loads(text)
        if not isinstance(data, dict):
            raise TypeError(f"a JSON {type(data).__name__}, not an object")
        return StackInfo(**data)
    except (ValueError, TypeError) as e:
        raise ConfigError(f"{path}: unreadable stack.json ({e})") from None


def _stop_by_hand(dir: str | os.PathLike[str]) -> str:
    """``; stop the processes by hand: kill ...`` for the PIDs a damaged ``stack.json`` still names (found by
    pattern, since it no longer parses) that run the stack's executable under that name, or "" when none do:
    a PID read from a damaged file is only suggested when it is still, say, a redis-server."""
    try:
        text = (Path(dir) / STATE_FILE).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    exes = {"redis": REDIS_SERVER, "exporter": REDIS_EXPORTER, "prometheus": PROMETHEUS}
    running = []
    for name, pid in dict.fromkeys(re.findall(r'"(prometheus|exporter|redis)"\s*:\s*(\d+)', text)):
        current = _proc_cmdline(int(pid))
        if int(pid) > 1 and current and os.path.basename(current[0].split()[0]) == os.path.basename(exes[name]):
            running.append((name, int(pid)))
    if not running:
        return ""
    names = ", ".join(f"{n} {p}" for n, p in running)
    return f"; stop the processes by hand: kill -TERM -- {' '.join(f'-{p}' for _, p in running)} ({names})"


def stop_stack(dir: str | os.PathLike[str], timeout_s: float = 10.0) -> list[str]:
    """Kill each recorded process group (SIGTERM, then SIGKILL), after checking /proc cmdline.

    Works from any process (the starter may be gone). Prometheus is stopped first so it does not
    log scrape errors for the targets going away.
    """
    try:
        info = load_state(dir)
    except ConfigError as e:
        raise ConfigError(f"{e}{_stop_by_hand(dir)}") from None
    if info is None:
        return []
    stopped: list[str] = []
    for name in ("prometheus", "exporter", "redis"):
        pid = info.pids.get(name)
        if pid is None or not _is_same_process(pid, info.cmdlines.get(name, [])):
            continue
        _kill_group(pid, signal.SIGTERM, timeout_s)
        stopped.append(name)
    with contextlib.suppress(OSError):
        (Path(dir) / STATE_FILE).unlink()
    return stopped


def _kill_group(pid: int, sig: int, timeout_s: float) -> None:
    """Send ``sig`` to the process group ``pid``, wait up to ``timeout_s``, then SIGKILL it."""
    for s, wait in ((sig, timeout_s), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pid, s)
        except ProcessLookupError:
            return
        except PermissionError:
            os.kill(pid, s)
        if _wait_gone(pid, wait):
            return


def check_rule_file(path: Path) -> None:
    """``promtool check rules`` on one file, so that a bad rule is refused in one line naming the file and the rule
    before Prometheus starts (Prometheus itself only logs "error loading config" and exits)."""
    if not path.is_file():
        raise ServiceError(f"rule file {path}: not found")
    try:
        r = subprocess.run([PROMTOOL, "check", "rules", str(path)], capture_output=True, text=True, timeout=30)
    except FileNotFoundError as e:
        raise ServiceError(f"{PROMTOOL} not found: install the Debian package prometheus (make debs)") from e
    if r.returncode != 0:
        lines = [ln.strip() for ln in (r.stderr + r.stdout).splitlines() if ln.strip().startswith(str(path))]
        why = lines[0].removeprefix(f"{path}:").strip() if lines else "promtool check rules failed"
        raise ServiceError(f"rule file {path}: {why}")


def register_target(dir: str | os.PathLike[str], name: str, port: int, *, job: str = REPLAY_JOB) -> Path:
    """Write a file_sd target file ``DIR/targets/{name}.json`` (``DIR/targets/daemon/`` for :data:`DAEMON_JOB`) for
    ``127.0.0.1:port`` (atomic rename)."""
    if job not in (REPLAY_JOB, DAEMON_JOB):
        raise ValueError(f"job {job!r}: the stack scrapes {REPLAY_JOB} and {DAEMON_JOB}")
    tdir = Path(dir) / TARGETS_DIR / ("daemon" if job == DAEMON_JOB else "")
    tdir.mkdir(parents=True, exist_ok=True)
    path = tdir / f"{name}.json"
    tmp = tdir / f".{name}.json.tmp"
    tmp.write_text(json.dumps([{"targets": [f"127.0.0.1:{port}"], "labels": {"instance_name": name}}]))
    os.replace(tmp, path)
    return path
