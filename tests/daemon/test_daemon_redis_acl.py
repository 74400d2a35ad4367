"""The least-privilege ACL against a real redis-server 7: exactly what the daemon needs works, the rest
is refused; a refused CONFIG SET is reported (not raised) and backed off; a restart is detected."""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from cachetuner.config import RedisConfig
from cachetuner.daemon.audit import read_audit
from cachetuner.daemon.chaos import ACL_RULES, ACL_USER
from cachetuner.daemon.probe import RedisProbe
from cachetuner.daemon.records import StepReport
from cachetuner.ports import free_port

REDIS = shutil.which("redis-server") or "/usr/bin/redis-server"
PW = "t0p-secret"


class RedisProc:
    """A redis-server with the daemon's ACL user on a free port; ``start`` again restarts it on the same port."""

    def __init__(self, d: Path) -> None:
        self.dir, self.port = d, 0
        self.conf = d / "redis.conf"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """First start: a new port per try, since another process (a second test worker) may take a
        picked port before redis-server binds it (this one then exits, and the port's owner would answer
        PING). A restart keeps the port and redis.conf (CONFIG REWRITE may have changed it)."""
        if self.port:
            if self._start():
                return
        else:
            for _ in range(4):
                self.port = free_port()
                self.conf.write_text(
                    f"bind 127.0.0.1\nport {self.port}\nsave \"\"\nappendonly no\ndir {self.dir}\nmaxmemory 64mb\n"
                    f"logfile {self.dir / 'redis.log'}\nuser {ACL_USER} {ACL_RULES} >{PW}\n"
                )
                if self._start():
                    return
        log = self.dir / "redis.log"
        raise AssertionError(f"redis-server did not start on port {self.port}: {log.read_text()[-800:] if log.is_file() else ''}")

    def _start(self) -> bool:
        port = self.port
        self.proc = subprocess.Popen([REDIS, str(self.conf)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 20
        while time.time() < deadline and self.proc.poll() is None:
            try:
                if redis.Redis(port=port).info("server")["process_id"] == self.proc.pid:  # ours, not the port's owner
                    return True
            except redis.ConnectionError:
                pass
            time.sleep(0.05)
        self.stop()
        return False

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(10)
            self.proc = None


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RedisProc]:
    r = RedisProc(tmp_path)
    r.start()
    try:
        yield r
    finally:
        r.stop()


def tuner_url(port: int) -> str:
    return f"redis://{ACL_USER}:{PW}@127.0.0.1:{port}/0"


def test_acl_allows_exactly_what_the_daemon_needs(server: RedisProc) -> None:
    probe = RedisProbe(tuner_url(server.port))
    ident = probe.identity()
    assert len(ident.run_id) == 40
    assert probe.config().maxmemory == 64 * 1024 * 1024
    c = redis.Redis.from_url(tuner_url(server.port), decode_responses=True)
    assert c.ping()
    c.config_set("maxmemory", str(32 * 1024 * 1024))
    assert probe.config().maxmemory == 32 * 1024 * 1024
    for forbidden in (lambda: c.get("k"), lambda: c.set("k", "v"), lambda: c.flushall(), lambda: c.config_rewrite(),
                      lambda: c.execute_command("ACL", "LIST"), lambda: c.execute_command("CLIENT", "PAUSE", "10"),
                      lambda: c.keys("*"), lambda: c.execute_command("SHUTDOWN")):
        with pytest.raises(redis.exceptions.NoPermissionError):
            forbidden()
    with pytest.raises(redis.exceptions.NoPermissionError):
        c.xrange("other-stream")  # XRANGE only on the sampled-request stream
    assert c.xrange("cachetuner:sampled") == []


def test_live_backend_reports_refused_config_set(server: RedisProc) -> None:
    from cachetuner.live.backend import LiveRedisBackend

    admin = redis.Redis(port=server.port)
    admin.execute_command("ACL", "SETUSER", ACL_USER, "-config|set")
    b = LiveRedisBackend(tuner_url(server.port), "http://127.0.0.1:9", interval_s=1.0)
    try:
        res = b.apply(RedisConfig(maxmemory=16 * 1024 * 1024))
        assert not res.ok and "NOPERM" in (res.error or "")
        assert res.applied.maxmemory == 64 * 1024 * 1024
        assert PW not in (res.error or "")
    finally:
        b.close()


def test_restart_changes_run_id_and_forgets_config_set(server: RedisProc) -> None:
    probe = RedisProbe(tuner_url(server.port))
    before = probe.identity().run_id
    redis.Redis.from_url(tuner_url(server.port)).config_set("maxmemory", str(20 * 1024 * 1024))
    server.stop()
    with pytest.raises(redis.ConnectionError):
        probe.identity()
    server.start()
    after = probe.identity()
    assert after.run_id != before
    assert probe.config().maxmemory == 64 * 1024 * 1024  # Redis forgot the CONFIG SET: the daemon must re-apply


def test_persist_rewrite_survives_restart(server: RedisProc) -> None:
    """``persist: rewrite`` needs +config|rewrite on top of the minimal ACL; CONFIG REWRITE then makes a
    known-good config survive a Redis restart even while the daemon is down."""
    admin = redis.Redis(port=server.port)
    admin.execute_command("ACL", "SETUSER", ACL_USER, "+config|rewrite")
    probe = RedisProbe(tuner_url(server.port))
    redis.Redis.from_url(tuner_url(server.port)).config_set("maxmemory", str(48 * 1024 * 1024))
    probe.rewrite()
    server.stop()
    server.start()
    assert probe.config().maxmemory == 48 * 1024 * 1024


def _config_set_calls(port: int) -> int:
    return int(redis.Redis(port=port).info("commandstats").get("cmdstat_config|set", {}).get("calls", 0))


def test_a_hung_redis_ends_the_apply_at_its_first_timeout(server: RedisProc) -> None:
    """A SIGSTOPped server: the CONFIG GET before the set times out and the apply stops there, reported
    as unreachable (not a refusal), and no CONFIG SET is sent to a server whose state is unknown."""
    from cachetuner.live.backend import LiveRedisBackend

    b = LiveRedisBackend(tuner_url(server.port), "http://127.0.0.1:9", interval_s=1.0)
    assert server.proc is not None
    before = _config_set_calls(server.port)
    try:
        server.proc.send_signal(signal.SIGSTOP)
        try:
            res = b.apply(RedisConfig(maxmemory=16 * 1024 * 1024))
        finally:
            server.proc.send_signal(signal.SIGCONT)
        assert not res.ok and res.unreachable
        assert (res.error or "").startswith("CONFIG GET: TimeoutError"), res.error
        assert res.applied.maxmemory == 64 * 1024 * 1024  # the last config known, not a read-back
        assert _config_set_calls(server.port) == before
        res = b.apply(RedisConfig(maxmemory=16 * 1024 * 1024))  # awake again: an ordinary apply
        assert res.ok and not res.unreachable, res.error
    finally:
        b.close()


def test_the_daemon_reports_an_apply_redis_did_not_answer_as_unreachable(
    server: RedisProc, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Redis hangs between the read of a step and its CONFIG SET (the chaos run's ``redis_unreachable``
    once landed there and no ``unreachable`` event was ever written): the outcome is a failure, the
    target is ``unreachable`` with the connection backoff running, and the next read reports recovery."""
    from cachetuner.daemon.config import DaemonConfig
    from cachetuner.daemon.loop import Daemon

    monkeypatch.setenv("CACHETUNER_REDIS_PASSWORD", PW)
    cfg = DaemonConfig.model_validate({
        "interval_s": 1.0, "state_dir": str(tmp_path / "state"), "http": {"port": 0}, "tracking": {"enabled": False},
        "policy": {"name": "random", "seed": 3},
        "targets": [{
            "name": "main", "backend": "live", "redis_url": f"redis://{ACL_USER}@127.0.0.1:{server.port}/0",
            "prometheus_url": "http://127.0.0.1:9",
            "bounds": {"maxmemory_min": 8 * 1024 * 1024, "maxmemory_max": 128 * 1024 * 1024},
        }],
    })  # fmt: skip
    d = Daemon(cfg)
    runner = d.runners[0]
    runner.backend = runner.backend_factory()
    try:
        assert runner._read_target(time.time(), StepReport(snapshot=None)) is False  # reachable, no restart
        assert server.proc is not None
        server.proc.send_signal(signal.SIGSTOP)
        try:
            applied = runner._apply(RedisConfig(maxmemory=32 * 1024 * 1024), "change", {})
        finally:
            server.proc.send_signal(signal.SIGCONT)
        assert applied is False
        assert runner.status == "unreachable" and not runner.conn_backoff.ready(time.time())
        recs = read_audit(cfg.audit_path)
        outcome = next(r for r in recs if r.get("phase") == "outcome")
        assert outcome["outcome"] != "applied" and "target unreachable" in outcome["error"], outcome
        assert [r["event"] for r in recs if r.get("phase") == "event"][-1] == "unreachable"
        assert runner._read_target(time.time(), StepReport(snapshot=None)) is False
        assert runner.status == "ok"
        assert [r["event"] for r in read_audit(cfg.audit_path) if r.get("phase") == "event"][-1] == "recovered"
    finally:
        d.close()
