"""Bad input to the live-path commands: one ``error: ...`` line naming the option or file, exit code 2.

Every case is refused before a server starts or a trace is replayed, so none of these needs Redis
(``127.0.0.1:1`` is a port where nothing listens).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cachetuner.errors import ConfigError, ServiceError
from cachetuner.live.stack import STATE_FILE, LocalStack, load_state, pid_alive, stop_stack

ROOT = Path(__file__).resolve().parents[2]
NOWHERE = "redis://127.0.0.1:1"


def cli(*args: str) -> tuple[int, list[str]]:
    """Exit code and the non-empty stderr lines of ``cachetuner ARGS``."""
    proc = subprocess.run([sys.executable, "-m", "cachetuner.cli.main", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=120, check=False)  # fmt: skip
    return proc.returncode, [line for line in proc.stderr.splitlines() if line.strip()]


def assert_one_line(args: list[str], *needles: str) -> str:
    rc, lines = cli(*args)
    assert rc == 2, lines
    assert len(lines) == 1, lines
    assert lines[0].startswith("error: "), lines
    for n in needles:
        assert n in lines[0], lines
    return lines[0]


@pytest.mark.parametrize(
    ("extra", "option"),
    [
        (["--speedup", "0"], "--speedup"),
        (["--speedup", "-1"], "--speedup"),
        (["--speedup", "nan"], "--speedup"),
        (["--speedup", "inf"], "--speedup"),
        (["--duration", "0"], "--duration:"),
        (["--duration", "nan"], "--duration:"),
        (["--pipeline", "0"], "--pipeline"),
        (["--pipeline", "20000"], "--pipeline"),
        (["--sample-rate", "2"], "--sample-rate"),
        (["--max-requests", "0"], "--max-requests"),
        (["--miss-latency-ms", "-1"], "--miss-latency-ms"),
        (["--miss-sigma", "-1"], "--miss-sigma"),
        (["--metrics-port", "-5"], "--metrics-port"),
    ],
)
def test_replay_options(extra: list[str], option: str) -> None:
    assert_one_line(["replay", "--redis", NOWHERE, *extra], option)


@pytest.mark.parametrize(
    ("extra", "option"),
    [
        (["--pipeline", "0"], "--pipeline"),
        (["--requests", "0"], "--requests"),
        (["--requests", "-1"], "--requests"),
        (["--clients", "0"], "--clients"),
        (["--clients", "-3"], "--clients"),
    ],
)
def test_bench_replay_options(extra: list[str], option: str) -> None:
    assert_one_line(["bench", "replay", *extra], option)


@pytest.mark.parametrize(
    ("extra", "option"),
    [
        (["--rate", "0"], "--rate"),
        (["--rate", "-1"], "--rate"),
        (["--rate", "nan"], "--rate"),
        (["--pipeline", "0"], "--pipeline"),
    ],
)
def test_fidelity_options(extra: list[str], option: str) -> None:
    assert_one_line(["fidelity", "--redis", NOWHERE, *extra], option)


@pytest.mark.parametrize("command", ["replay", "calibrate", "fidelity"])
@pytest.mark.parametrize("url", ["foo", "http://x", "redis://127.0.0.1:99999"])
def test_bad_redis_url(command: str, url: str) -> None:
    assert_one_line([command, "--redis", url], "--redis", url)


def test_redis_url_password_is_not_echoed() -> None:
    line = assert_one_line(["replay", "--redis", "http://u:secret@x"], "--redis")
    assert "secret" not in line


@pytest.mark.parametrize("command", [["replay", "--limit", "50"], ["calibrate", "--keys", "10"]])
def test_unreachable_redis_is_worded_alike(command: list[str]) -> None:
    assert_one_line(
        [*command, "--redis", NOWHERE], "cannot connect to Redis at 127.0.0.1:1", "is it running?"
    )


@pytest.mark.parametrize("keys", ["0", "-5"])
def test_calibrate_keys(keys: str) -> None:
    assert_one_line(["calibrate", "--redis", NOWHERE, "--keys", keys], "--keys", keys)


@pytest.mark.parametrize("speedup", ["0", "nan", "-1"])
def test_ttl_tenants_live_speedup(tmp_path: Path, speedup: str) -> None:
    assert_one_line(
        ["ttl", "tenants", "--no-track", "--stack-dir", str(tmp_path), "--speedup", speedup], "--speedup"
    )


@pytest.mark.parametrize("rate", ["0", "-1", "nan"])
def test_live_eval_rate_is_checked_before_the_replay_thread(tmp_path: Path, rate: str) -> None:
    assert_one_line(
        ["live-eval", "--controller", "mrc", "--stack-dir", str(tmp_path), "--rate", rate], "--rate"
    )


def test_live_eval_replay_failure_propagates_its_cause() -> None:
    """The replay thread cannot connect: its own error, at once, not "did not start: timeout" after 60 s."""
    assert_one_line(
        ["live-eval", "--controller", "mrc", "--redis", NOWHERE, "--prometheus", "http://127.0.0.1:1", "--intervals", "1",
         "--interval-s", "1"],
        "cannot connect to Redis at 127.0.0.1:1",
    )  # fmt: skip


def test_live_eval_refuses_a_model_the_controller_ignores() -> None:
    assert_one_line(["live-eval", "--controller", "mrc", "--model", "foo.zip"], "--model", "ppo")


def test_stack_up_dir_is_a_file(tmp_path: Path) -> None:
    f = tmp_path / "afile"
    f.write_text("x")
    assert_one_line(["stack", "up", "--dir", str(f)], "--dir", str(f))
    assert_one_line(["stack", "up", "--dir", str(f / "sub")], "--dir")


@pytest.mark.parametrize(
    ("extra", "option"), [(["--maxmemory", "-5"], "--maxmemory"), (["--policy", "bogus"], "--policy")]
)
def test_stack_up_checks_redis_options_before_starting(tmp_path: Path, extra: list[str], option: str) -> None:
    assert_one_line(["stack", "up", "--dir", str(tmp_path / "s"), *extra], option)
    assert not (tmp_path / "s").exists()  # nothing was started (nor a folder made)


def test_local_stack_rejects_bad_policy_in_code(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="--policy"):
        LocalStack(tmp_path, maxmemory_policy="lru")


@pytest.mark.parametrize("text", ["{garbage", "[1,2]", "{}"])
def test_corrupt_stack_json_is_reported(tmp_path: Path, text: str) -> None:
    (tmp_path / STATE_FILE).write_text(text)
    assert_one_line(
        ["stack", "down", "--dir", str(tmp_path)], "unreadable stack.json", str(tmp_path / STATE_FILE)
    )
    assert (tmp_path / STATE_FILE).exists()  # left for the user: it may be the only record of running PIDs
    assert_one_line(["replay", "--stack-dir", str(tmp_path)], "unreadable stack.json")
    assert_one_line(
        ["live-eval", "--controller", "mrc", "--stack-dir", str(tmp_path)], "unreadable stack.json"
    )


def test_corrupt_stack_json_names_the_pids_to_stop(tmp_path: Path) -> None:
    """Only PIDs that still run the stack's executables are suggested (not PID 1, not a reused PID)."""
    sleeper = subprocess.Popen(
        ["redis-server", "30"], executable="sleep", start_new_session=True
    )  # argv[0] as redis's
    other = subprocess.Popen(["sleep", "30"], start_new_session=True)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not all(
        pid_alive(p.pid) for p in (sleeper, other)
    ):  # /proc/PID/cmdline set
        time.sleep(0.05)
    try:
        (tmp_path / STATE_FILE).write_text(
            f'{{"dir": "{tmp_path}", "pids": {{"redis": {sleeper.pid}, "exporter": 1, "prometheus": {other.pid}'
        )
        with pytest.raises(
            ConfigError,
            match=rf"stop the processes by hand: kill -TERM -- -{sleeper.pid} \(redis {sleeper.pid}\)",
        ):
            stop_stack(tmp_path)
        assert sleeper.poll() is None  # nothing killed on a guess
        with pytest.raises(ConfigError, match="remove it to start a new stack here"):
            LocalStack(tmp_path).up()
        assert "-1 " not in str(_err(tmp_path)) and str(other.pid) not in str(_err(tmp_path))
    finally:
        for proc in (sleeper, other):
            proc.kill()
            proc.wait()


def _err(d: Path) -> ConfigError:
    try:
        stop_stack(d)
    except ConfigError as e:
        return e
    raise AssertionError("no error")


def test_missing_stack_json_is_still_none(tmp_path: Path) -> None:
    assert load_state(tmp_path) is None
    assert stop_stack(tmp_path) == []
    (tmp_path / STATE_FILE).write_text(json.dumps({"dir": str(tmp_path)}))
    assert load_state(tmp_path) is not None


def test_replay_error_reraised_as_is() -> None:
    from cachetuner.live.live_eval import _raise_replay_error

    _raise_replay_error(None)
    with pytest.raises(ServiceError, match="cannot connect"):
        _raise_replay_error(ServiceError("cannot connect to Redis at x"))
    with pytest.raises(ServiceError, match="the background replay failed: KeyError"):
        _raise_replay_error(KeyError("k"))
