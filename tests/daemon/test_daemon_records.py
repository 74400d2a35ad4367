"""Audit log (write-ahead, fsync'd JSONL), atomic state file, credentials and scrubbing, config errors."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cachetuner.config import RedisConfig
from cachetuner.daemon.audit import AuditLog, pending_intents, read_audit
from cachetuner.daemon.config import Bounds, TargetConfig, load_daemon_config
from cachetuner.daemon.secrets import credentialed_url, scrub_text
from cachetuner.daemon.state import DaemonState, load_state, save_state
from cachetuner.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]


def test_audit_lines_are_complete_and_torn_tail_is_ignored(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "a.jsonl", "s1")
    log.write({"decision_id": "d1", "phase": "intent", "to_apply": RedisConfig().model_dump()})
    log.write({"decision_id": "d1", "phase": "outcome", "outcome": "applied"})
    log.write({"decision_id": "d2", "phase": "intent", "to_apply": RedisConfig().model_dump()})
    log.close()
    with open(tmp_path / "a.jsonl", "a") as fh:  # a crash in the middle of a write
        fh.write('{"decision_id": "d3", "pha')
    recs = read_audit(tmp_path / "a.jsonl")
    assert [r["seq"] for r in recs] == [1, 2, 3]
    assert all(r["session"] == "s1" and "ts" in r for r in recs)
    assert list(pending_intents(recs)) == ["d2"]


def test_state_roundtrip_is_atomic(tmp_path: Path) -> None:
    p = tmp_path / "state.json"
    st = DaemonState()
    st.target("a").last_known_good = RedisConfig(maxmemory=123)
    st.target("a").run_id = "abc"
    save_state(p, st)
    assert [f.name for f in tmp_path.iterdir()] == ["state.json"]  # no temp files left behind
    back = load_state(p)
    assert back.targets["a"].last_known_good == RedisConfig(maxmemory=123)
    assert back.targets["a"].run_id == "abc"
    assert load_state(tmp_path / "missing.json").targets == {}


def test_scrub_and_credentials(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert scrub_text("redis://u:s3cr3t@h:1/0 x") == "redis://u:***@h:1/0 x"
    assert scrub_text("redis://h:1/0") == "redis://h:1/0"
    b = Bounds(maxmemory_min=1, maxmemory_max=2)
    monkeypatch.setenv("MY_PW", "p@ss word")
    t = TargetConfig(name="a", redis_url="redis://tuner@127.0.0.1:6379/0", prometheus_url="http://x", password_env="MY_PW", bounds=b)
    url = credentialed_url(t)
    assert url == "redis://tuner:p%40ss%20word@127.0.0.1:6379/0"
    assert "p%40ss" not in scrub_text(url)
    f = tmp_path / "pw"
    f.write_text("filepw\n")
    t2 = t.model_copy(update={"password_file": str(f)})
    assert credentialed_url(t2) == "redis://tuner:filepw@127.0.0.1:6379/0"
    bad = t.model_copy(update={"redis_url": "redis://tuner:inline@127.0.0.1:6379/0"})
    with pytest.raises(ConfigError, match="do not put the password in the URL"):
        credentialed_url(bad)


def test_config_errors_name_file_and_field(tmp_path: Path) -> None:
    p = tmp_path / "d.yaml"
    p.write_text("interval_s: 1\ntargets:\n  - name: a\n    backend: sim\n    bounds: {maxmemory_min: 10, maxmemory_max: 5}\n")
    with pytest.raises(ConfigError, match=r"d.yaml: field 'targets.0.bounds'"):
        load_daemon_config(p)
    p.write_text("intervl_s: 1\ntargets:\n  - {name: a, backend: sim, bounds: {maxmemory_min: 1, maxmemory_max: 5}}\n")
    with pytest.raises(ConfigError, match="field 'intervl_s': unknown field"):
        load_daemon_config(p)
    p.write_text(
        "rollout: {mode: staged, canary: nope}\ntargets:\n  - {name: a, backend: sim, bounds: {maxmemory_min: 1, maxmemory_max: 5}}\n"
        "  - {name: b, backend: sim, bounds: {maxmemory_min: 1, maxmemory_max: 5}}\n"
    )
    with pytest.raises(ConfigError, match="rollout.canary must name a target"):
        load_daemon_config(p)


@pytest.mark.parametrize("name", sorted(p.name for p in (REPO / "experiments").glob("daemon*.yaml")))
def test_shipped_configs_load(name: str) -> None:
    cfg = load_daemon_config(REPO / "experiments" / name)
    assert cfg.http.host == "127.0.0.1"
    assert all(t.redis_url is None or "@" not in t.redis_url.split("//")[1] or ":" not in t.redis_url.split("//")[1].split("@")[0] for t in cfg.targets)
    assert os.path.basename(cfg.state_dir)
