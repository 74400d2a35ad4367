"""The shipped alert rules (deploy/alerts.yml) and Grafana dashboard (deploy/grafana/cachetuner-daemon.json):
the rules pass their promtool unit tests, the deploy Prometheus config loads them, and neither names a metric the
daemon does not export (a renamed metric would otherwise leave an alert that can never fire). Their queries are run
against a real Prometheus scraping a real daemon in tests/live/test_live_daemon_ops.py."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from cachetuner.daemon.telemetry import DaemonMetrics
from cachetuner.live.stack import PROMTOOL

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
DASHBOARD = DEPLOY / "grafana" / "cachetuner-daemon.json"
_NAME = re.compile(r"\bcachetuner_daemon_[a-z_]+")


def exported_names() -> set[str]:
    """Every sample name the daemon's registry can export (counters end in _total, histograms in _bucket/_sum/_count)."""
    suffixes = {"counter": ["_total"], "gauge": [""], "histogram": ["_bucket", "_sum", "_count"]}
    return {fam.name + s for fam in DaemonMetrics().registry.collect() for s in suffixes[fam.type]}


def dashboard_exprs() -> list[str]:
    dash = json.loads(DASHBOARD.read_text())
    return [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]


def promtool(*args: str, cwd: Path = DEPLOY) -> str:
    r = subprocess.run([PROMTOOL, *args], capture_output=True, text=True, timeout=60, cwd=cwd)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout + r.stderr


def test_alert_rules_pass_their_unit_tests() -> None:
    out = promtool("test", "rules", "alerts.test.yml")
    assert "SUCCESS" in out and "FAILED" not in out


def test_deploy_prometheus_config_loads_the_rules() -> None:
    out = promtool("check", "config", "prometheus.yml")
    assert "SUCCESS: 1 rule files found" in out and "SUCCESS: 8 rules found" in out


def test_every_alert_is_unit_tested() -> None:
    import yaml

    rules = [r["alert"] for g in yaml.safe_load((DEPLOY / "alerts.yml").read_text())["groups"] for r in g["rules"]]
    tests = yaml.safe_load((DEPLOY / "alerts.test.yml").read_text())["tests"]
    tested = {c["alertname"] for t in tests for c in t.get("alert_rule_test", []) if c.get("exp_alerts")}
    assert len(rules) == 8 and set(rules) == tested  # each one shown firing at least once


def test_rules_and_dashboard_name_only_metrics_the_daemon_exports() -> None:
    exported = exported_names()
    assert "cachetuner_daemon_cost_total" in exported and "cachetuner_daemon_loop_seconds_bucket" in exported
    for source, text in (("alerts.yml", (DEPLOY / "alerts.yml").read_text()), ("dashboard", DASHBOARD.read_text())):
        named = set(_NAME.findall(text))
        assert named, source
        assert named <= exported, f"{source} names metrics the daemon does not export: {sorted(named - exported)}"


def test_dashboard_layout_and_queries() -> None:
    dash = json.loads(DASHBOARD.read_text())
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids))
    for p in dash["panels"]:
        g = p["gridPos"]
        assert g["x"] >= 0 and g["x"] + g["w"] <= 24, p["title"]
        if p["type"] != "row":
            assert p["targets"] and all(t["expr"].strip() for t in p["targets"]), p["title"]
    # the variables every query may use are the dashboard's own (or Grafana's built-in range ones)
    used = {v for e in dashboard_exprs() for v in re.findall(r"\$(\w+)", e)}
    own = {v["name"] for v in dash["templating"]["list"]}
    assert used <= own | {"__rate_interval", "__range"}, used
