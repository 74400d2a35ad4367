"""``cachetuner chaos`` options a user got wrong are refused in one line before the stack starts (a file as the
workdir, an infinite interval or fault duration, an empty fault list), and a daemon that does not come up is a
one-line ServiceError naming the log's last error, not a RuntimeError traceback with a 2000-character log tail."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cachetuner.daemon.chaos import report as chaos_report
from cachetuner.errors import ServiceError


def _chaos(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cachetuner.cli.main", "chaos", *args],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)


@pytest.mark.parametrize(
    ("args", "why"),
    [
        (["--workdir", "afile", "--faults", "sigterm"], "error: --workdir afile: exists and is not a folder"),
        (["--workdir", "afile/sub", "--faults", "sigterm"], "is a file, not a folder"),
        (["--faults", "sigterm", "--interval", "inf"], "error: --interval: expected a finite number of seconds"),
        (["--faults", "sigterm", "--duration-per-fault", "inf"], "error: --duration-per-fault: expected a finite"),
        (["--faults", ","], "error: --faults: no fault given; valid faults: redis_restart"),
    ],
)
def test_bad_chaos_options_are_one_line_before_anything_starts(tmp_path: Path, args: list[str], why: str) -> None:
    (tmp_path / "afile").write_text("x")
    r = _chaos(tmp_path, *args)
    assert r.returncode == 2, r.stderr
    assert r.stderr.count("\n") == 1 and why in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and r.stdout == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]  # no workdir, stack or log was made


def test_last_log_line_picks_the_error(tmp_path: Path) -> None:
    log = tmp_path / "daemon.log"
    log.write_text("INFO starting\nerror: /w/daemon.yaml: field 'interval_s': Input should be a finite number\n\n")
    assert chaos_report._last_log_line(log) == "error: /w/daemon.yaml: field 'interval_s': Input should be a finite number"
    log.write_text('Traceback (most recent call last):\n  File "x.py", line 1, in <module>\nKeyError: \'boom\'\n')
    assert chaos_report._last_log_line(log) == "KeyError: 'boom'"
    assert chaos_report._last_log_line(tmp_path / "missing.log") == "<no log>"


def test_a_daemon_that_does_not_start_is_a_service_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    class FakeRun:
        def __init__(self, workdir: Path, *_: object) -> None:
            self.workdir = workdir
            self.torn_down = False

        def setup(self) -> None:
            pass

        def start_daemon(self) -> None:
            (self.workdir / "daemon.log").write_text("error: daemon.yaml: field 'interval_s': Input should be a finite number\n")

        def wait_daemon_ready(self) -> bool:
            return False

        def teardown(self) -> None:
            runs.append(self)

    runs: list[FakeRun] = []
    monkeypatch.setattr(chaos_report, "ChaosRun", FakeRun)
    with pytest.raises(ServiceError) as e:
        chaos_report.run_chaos(["sigterm"], workdir=tmp_path / "w", tracking=False)
    msg = str(e.value)
    assert msg.startswith("chaos: the daemon did not start: error: daemon.yaml: field 'interval_s'") and "\n" not in msg
    assert len(runs) == 1  # the stack was torn down
