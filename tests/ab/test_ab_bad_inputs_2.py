"""Bad input to ``cachetuner ab`` / ``ab promote`` refused in one line before anything is written or run: a --log
that cannot be written (the daemon config used to be rewritten first), a tracking URI that is a file or where
nothing answers (a traceback; minutes of HTTP retries), a fixed arm outside the env's bounds (silently clamped and
mislabelled), an unknown tuner or param (no file or arm named) and a live shadow run without its backend options."""

from __future__ import annotations

import importlib
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from abtest_support import SCAN_ENV, ab_config

from cachetuner.ab.runner import run_ab
from cachetuner.cli.main import main
from cachetuner.errors import ConfigError

promote_mod = importlib.import_module("cachetuner.ab.promote")  # the module (cachetuner.ab.promote is the function)

DAEMON = {
    "interval_s": 5.0,
    "policy": {"name": "hold"},
    "targets": [{"name": "cache-a", "backend": "sim",
                 "bounds": {"maxmemory_min": 1_000_000, "maxmemory_max": 200_000_000}}],
}
HUGE = {"maxmemory": 999_999_999_999, "maxmemory_policy": "allkeys-lru"}


def _cli_in_process(args: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "argv", ["cachetuner", *args])
    capsys.readouterr()
    with pytest.raises(SystemExit) as e:
        main()
    out, err = capsys.readouterr()
    return int(e.value.code or 0), out, err


@pytest.fixture
def better_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """A recorded A/B run whose verdict is 'better' (read_report stubbed: no MLflow store needed)."""
    cfg = ab_config({"tuner": "static-default"}, {"tuner": "mrc"}, horizon=4)
    report = {"config": cfg.model_dump(mode="json"), "verdict": "better"}
    monkeypatch.setattr(promote_mod, "read_report", lambda run_id, uri: ({"ab.verdict": "better"}, report))

    def no_record(*a: object, **k: object) -> None:
        raise AssertionError("nothing may be recorded when an option is bad")

    monkeypatch.setattr(promote_mod, "_record", no_record)


@pytest.mark.parametrize(("log", "why"), [("adir", "a directory; give a file name"),
                                          ("afile/x.jsonl", "afile is a file, not a folder")])
def test_promote_checks_the_log_before_writing_the_daemon_config(
    tmp_path: Path, better_run: None, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    log: str, why: str,
) -> None:
    (tmp_path / "adir").mkdir()
    (tmp_path / "afile").write_text("x")
    daemon = tmp_path / "daemon.yaml"
    daemon.write_text(yaml.safe_dump(DAEMON))
    before = daemon.read_text()
    code, out, err = _cli_in_process(["ab", "promote", "RUN", "--daemon-config", str(daemon), "--log",
                                      str(tmp_path / log)], capsys, monkeypatch)
    assert code == 2 and out == "", err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: --log {tmp_path / log}: ") and why in lines[0], err
    assert daemon.read_text() == before and not (tmp_path / "daemon.yaml.bak").exists()


def test_promote_with_a_good_log_still_promotes(tmp_path: Path, better_run: None, monkeypatch: pytest.MonkeyPatch) -> None:
    recorded: list[dict] = []
    monkeypatch.setattr(promote_mod, "_record", lambda log, entry, run_id, uri: recorded.append(entry))
    daemon = tmp_path / "daemon.yaml"
    daemon.write_text(yaml.safe_dump(DAEMON))
    entry = promote_mod.promote("RUN", daemon_config=daemon, log_path=tmp_path / "p.jsonl", tracking_uri="sqlite:///x.db")
    assert entry["decision"] == "promoted" and recorded
    assert yaml.safe_load(daemon.read_text())["policy"] == {"name": "mrc"}


@pytest.mark.parametrize("uri", ["AFILE", "http://127.0.0.1:1"])
def test_promote_bad_tracking_uri_is_one_line_and_fast(tmp_path: Path, uri: str) -> None:
    (tmp_path / "AFILE").write_text("x")
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "cachetuner.cli.main", "ab", "promote", "garbage", "--tracking-uri",
                        str(tmp_path / uri) if uri == "AFILE" else uri],
                       capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert time.monotonic() - t0 < 30
    assert r.returncode == 2 and r.stdout == "", r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: tracking store ") and "Traceback" not in r.stderr, r.stderr
    assert ("a file, not an MLflow store" if uri == "AFILE" else "nothing answers there") in lines[0]


@pytest.mark.parametrize(
    ("control", "treatment", "over", "why"),
    [
        ({"tuner": "static-default"}, {"config": HUGE}, {},
         "field 'treatment.config.maxmemory': 999999999999 B is above the maximum 2000000000 B of env.bounds"),
        ({"config": {"maxmemory": 1000, "maxmemory_policy": "allkeys-lru"}}, {"tuner": "static-default"}, {},
         "field 'control.config.maxmemory': 1000 B is below the minimum 1000000 B of env.bounds"),
        ({"tuner": "static-default"}, {"config": HUGE},
         {"env": {**SCAN_ENV, "bounds": {"max_fraction": 0.5}}},
         "field 'treatment.config.maxmemory': 999999999999 B is above the maximum"),
        ({"tuner": "static-default"}, {"tuner": "bogus"}, {}, "field 'treatment.tuner': unknown controller 'bogus'; valid: "),
        ({"tuner": "static-default", "params": {"nonsense": 1}}, {"tuner": "mrc"}, {},
         "field 'control.params.nonsense': unknown field"),
        ({"tuner": "static-default"}, {"tuner": "mrc"}, {"mode": "shadow"},
         "field 'shadow.backend_options': missing redis_url, prometheus_url"),
    ],
)
def test_arm_errors_name_the_file_and_the_arm(control: dict, treatment: dict, over: dict, why: str) -> None:
    cfg = ab_config(control, treatment, horizon=4, **over)
    with pytest.raises(ConfigError) as e:
        run_ab(cfg, source="ab.yaml")
    msg = str(e.value)
    assert msg.startswith("ab.yaml: ") and why in msg and "\n" not in msg, msg
    assert "__init__" not in msg


def test_cli_fixed_arm_above_bounds_is_one_line(tmp_path: Path) -> None:
    p = tmp_path / "ab.yaml"
    p.write_text(yaml.safe_dump({"name": "t", "horizon_intervals": 4, "env": SCAN_ENV, "control": {"tuner": "static-default"},
                                 "treatment": {"config": HUGE}, "tracking": {"enabled": False}}))
    r = subprocess.run([sys.executable, "-m", "cachetuner.cli.main", "ab", "--config", str(p)], capture_output=True,
                       text=True, timeout=120, cwd=tmp_path)
    assert r.returncode == 2 and r.stdout == "", r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {p}: field 'treatment.config.maxmemory': "), r.stderr
