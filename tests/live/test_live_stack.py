"""``cachetuner stack up/down``: real processes, readiness, and nothing left behind (also after SIGKILL)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from cachetuner.live.stack import STATE_FILE, load_state, pid_alive

CLI = [sys.executable, "-m", "cachetuner.cli.main"]


def assert_all_gone(pids: dict[str, int]) -> None:
    alive = {name: pid for name, pid in pids.items() if pid_alive(pid)}
    assert not alive, f"processes left behind: {alive}"


def _cli(args: list[str], env: dict[str, str], timeout: float = 120.0) -> subprocess.CompletedProcess:
    return subprocess.run(CLI + args, capture_output=True, text=True, timeout=timeout, env=env, check=False)


def test_stack_up_down_json(tmp_path: Path, cli_env: dict[str, str]) -> None:
    d = tmp_path / "s"
    up = _cli(["stack", "up", "--dir", str(d), "--json"], cli_env)
    assert up.returncode == 0, up.stderr
    info = json.loads(up.stdout)  # exactly one JSON object on stdout
    pids = info["pids"]
    try:
        assert set(pids) == {"redis", "exporter", "prometheus"}
        assert all(pid_alive(p) for p in pids.values())
        assert info["redis"].startswith("redis://127.0.0.1:")
        # Prometheus already holds a redis_up sample (readiness includes the first scrape).
        q = info["prometheus"] + "/api/v1/query?query=redis_up"
        body = json.loads(urllib.request.urlopen(q, timeout=5).read())
        assert body["data"]["result"][0]["value"][1] == "1"
        exporter = urllib.request.urlopen(info["exporter"], timeout=5).read().decode()
        assert 'redis_config_key_value{key="maxmemory-policy",value="allkeys-lru"} 1' in exporter
        # A second `up` in the same folder refuses instead of orphaning the first stack.
        again = _cli(["stack", "up", "--dir", str(d)], cli_env)
        assert again.returncode == 2 and "already running" in again.stderr
    finally:
        down = _cli(["stack", "down", "--dir", str(d), "--json"], cli_env)
    assert down.returncode == 0, down.stderr
    assert sorted(json.loads(down.stdout)["stopped"]) == ["exporter", "prometheus", "redis"]
    assert_all_gone(pids)
    assert not (d / STATE_FILE).exists()


def test_stack_up_refuses_a_bad_rule_file_in_one_line(tmp_path: Path, cli_env: dict[str, str]) -> None:
    """``stack up --rules``: promtool checks each file first, so a bad rule is named before anything starts."""
    bad = tmp_path / "rules.yml"
    bad.write_text("groups:\n  - name: x\n    rules:\n      - alert: Broken\n        expr: up ==\n")
    for path, why in ((bad, 'rule 1, "Broken": could not parse expression'), (tmp_path / "none.yml", "not found")):
        r = _cli(["stack", "up", "--dir", str(tmp_path / "s"), "--rules", str(path)], cli_env)
        assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
        assert r.stderr.startswith(f"error: rule file {path}:") and why in r.stderr, r.stderr
    assert not (tmp_path / "s" / STATE_FILE).exists()  # nothing was started


def test_stack_down_after_sigkill_of_the_starter(tmp_path: Path, cli_env: dict[str, str]) -> None:
    d = tmp_path / "k"
    proc = subprocess.Popen(CLI + ["stack", "up", "--dir", str(d)], env=cli_env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    seen: dict[str, int] = {}
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            st = load_state(d)
            if st is not None and "exporter" in st.pids:
                seen = dict(st.pids)
                break
            time.sleep(0.05)
        assert "redis" in seen, "stack up never recorded its processes"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    time.sleep(0.5)
    st = load_state(d)
    assert st is not None
    seen.update(st.pids)
    assert pid_alive(seen["redis"]), "the stack should outlive its starter (own session)"
    down = _cli(["stack", "down", "--dir", str(d)], cli_env)
    assert down.returncode == 0, down.stderr
    assert_all_gone(seen)


def test_stack_down_skips_a_recycled_pid(tmp_path: Path) -> None:
    """A stack.json whose PID now belongs to another program must not get that program killed."""
    sleeper = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        (tmp_path / STATE_FILE).write_text(json.dumps({
            "dir": str(tmp_path), "pids": {"redis": sleeper.pid},
            "cmdlines": {"redis": ["/usr/bin/redis-server", "x.conf", "--port", "1"]},
        }))  # fmt: skip
        from cachetuner.live.stack import stop_stack

        assert stop_stack(tmp_path) == []
        assert sleeper.poll() is None
    finally:
        sleeper.kill()
        sleeper.wait()


def test_restart_keeps_stack_json_pids_and_down_cleans_all(tmp_path: Path) -> None:
    """LocalStack.restart: new PID recorded in stack.json, old one gone, `stack down` still stops everything."""
    import pytest
    import redis

    from cachetuner.errors import ServiceError
    from cachetuner.live.stack import LocalStack, stop_stack

    d = tmp_path / "r"
    seen: list[int] = []
    with LocalStack(d, maxmemory=0, redis_only=True) as st:
        first = st.info.pids["redis"]
        seen.append(first)
        r = redis.Redis.from_url(st.redis_url, decode_responses=True)
        r.config_set("maxmemory", 123_456_789)
        # Crash (SIGKILL) and restart: same port and redis.conf, so the CONFIG SET is forgotten.
        second = st.restart("redis", sig=signal.SIGKILL)
        seen.append(second)
        assert second != first and not pid_alive(first) and pid_alive(second)
        assert load_state(d).pids["redis"] == second  # type: ignore[union-attr]
        assert r.config_get("maxmemory")["maxmemory"] == "0"
        # Another instance (as another process would) restarts it from stack.json, SIGTERM this time.
        third = LocalStack(d).restart("redis")
        seen.append(third)
        assert third not in (first, second) and not pid_alive(second) and pid_alive(third)
        assert load_state(d).pids["redis"] == third  # type: ignore[union-attr]
        assert r.ping()
        with pytest.raises(ServiceError, match="valid: redis, exporter, prometheus"):
            st.restart("redis-server")
        with pytest.raises(ServiceError, match="exporter is not part of the stack"):
            st.restart("exporter")
        assert stop_stack(d) == ["redis"]
    assert_all_gone({f"redis#{i}": p for i, p in enumerate(seen)})
    assert not (d / STATE_FILE).exists()


def test_a_port_taken_after_its_choice_is_retried_on_new_ports(tmp_path: Path, monkeypatch) -> None:
    """Two test workers (or any two processes) can pick the same free port: the one that binds second
    must start over on new ports, never take the other's redis-server for its own (both answer PING)."""
    import redis

    from cachetuner.live import stack as stack_mod
    from cachetuner.live.stack import LocalStack

    with LocalStack(tmp_path / "first", maxmemory=0, redis_only=True) as first:
        taken = first.info.redis_port
        picks = iter([taken])
        real = stack_mod.free_port
        monkeypatch.setattr(stack_mod, "free_port", lambda: next(picks, None) or real())
        with LocalStack(tmp_path / "second", maxmemory=0, redis_only=True) as second:
            assert second.info.redis_port != taken
            own = redis.Redis.from_url(second.redis_url).info("server")["process_id"]
            assert own == second.info.pids["redis"] != first.info.pids["redis"]
            log = (tmp_path / "second" / "logs" / "redis.log").read_text()
            assert f"{taken}" in log and "address already in use" in log.lower()
        assert redis.Redis.from_url(first.redis_url).info("server")["process_id"] == first.info.pids["redis"]
