"""Daemon configs and options a user got wrong are refused at start, in one line: a sim target's bad env used to
surface only as an endless "unreachable" loop, and a URL without a scheme silently became a path on localhost."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from test_daemon_loop_sim import BOUNDS, make_cfg

from cachetuner.daemon.config import DaemonConfig
from cachetuner.daemon.loop import Daemon
from cachetuner.errors import ConfigError
from cachetuner.yamlconfig import load_model

LIVE = {"name": "main", "backend": "live", "redis_url": "redis://tuner@127.0.0.1:6379/0",
        "prometheus_url": "http://127.0.0.1:9090", "bounds": BOUNDS}


@pytest.mark.parametrize(
    ("over", "why"),
    [
        ({"targets": [{**LIVE, "redis_url": "notaurl"}]}, "redis_url 'notaurl': expected redis://"),
        ({"targets": [{**LIVE, "prometheus_url": "prometheus:9090"}]}, "prometheus_url 'prometheus:9090': expected http://"),
        ({"backoff": {"initial_s": 100, "max_s": 1}}, "field 'backoff': max_s (1) must be at least initial_s (100)"),
        ({"policy": {"name": "mrc", "seed": -1}}, "field 'policy.seed': Input should be greater than or equal to 0"),
        ({"interval_s": float("inf")}, "field 'interval_s': Input should be a finite number"),
        ({"policy": {"prices": {"preset": "budget", "budget_fraction": 0.1}}},
         "prices.budget_fraction: a daemon's target has no known working set"),
        ({"policy": {"prices": {"preset": "lists"}}}, "field 'policy.prices.preset'"),
    ],
)
def test_bad_daemon_yaml_is_one_line(tmp_path: Path, over: dict, why: str) -> None:
    f = tmp_path / "daemon.yaml"
    f.write_text(yaml.safe_dump({"targets": [LIVE], **over}))
    with pytest.raises(ConfigError) as e:
        load_model(DaemonConfig, f)
    assert str(e.value).startswith(f"{f}: ") and why in str(e.value) and "\n" not in str(e.value), str(e.value)


def test_a_sim_targets_bad_env_stops_the_start(tmp_path: Path) -> None:
    cfg = make_cfg(tmp_path, target={"backend_options": {"env": {"interval_s": -1}}})
    with pytest.raises(ConfigError, match=r"targets.t0.backend_options.env: field 'interval_s'"):
        Daemon(cfg)
    cfg = make_cfg(tmp_path, target={"backend_options": {"env": {}, "speed": 2}})
    with pytest.raises(ConfigError, match=r"targets.t0.backend_options: unknown keys \['speed'\]"):
        Daemon(cfg)


def test_unknown_log_level_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "daemon.yaml"
    f.write_text(yaml.safe_dump({"targets": [LIVE]}))
    r = subprocess.run([sys.executable, "-m", "cachetuner.cli.main", "daemon", "-c", str(f), "--log-level", "LOUD"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stderr == "error: --log-level: 'LOUD'; valid: DEBUG, INFO, WARNING, ERROR\n"
