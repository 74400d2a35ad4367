"""Operating the daemon against a real redis-server + redis_exporter + Prometheus: the stack's Prometheus loads the
shipped alert rules (deploy/alerts.yml) and scrapes the daemon, registered through ``http.stack_dir`` as job
``cachetuner-daemon``; every query of the shipped Grafana dashboard runs there, and the cost panels show data."""

from __future__ import annotations

import json
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from live_traffic import replaying

from cachetuner.daemon.config import DaemonConfig
from cachetuner.daemon.loop import Daemon
from cachetuner.live.replay import ReplayOptions
from cachetuner.live.stack import LocalStack, pid_alive
from cachetuner.traces import read_trace

MiB = 1 << 20
DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
PARAMS = {"n_requests": 400_000, "n_keys": 5000, "rate": 1000, "alpha": 1.0}
#: Grafana's variables, as the dashboard is opened on "All" targets
GRAFANA_VARS = {"$target": ".*", "$__rate_interval": "10s", "$__range": "5m"}


def query(prom: str, expr: str) -> list[dict[str, Any]]:
    url = f"{prom}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    body = json.loads(urllib.request.urlopen(url, timeout=10).read())
    assert body["status"] == "success", (expr, body)
    return body["data"]["result"]


def wait_for(what: str, check: Any, timeout_s: float = 90.0) -> Any:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        got = check()
        if got:
            return got
        time.sleep(1.0)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.integration
@pytest.mark.slow
def test_alert_rules_and_dashboard_on_a_live_daemon(tmp_path: Path) -> None:
    stack = LocalStack(tmp_path / "stack", maxmemory=32 * MiB, rule_files=[DEPLOY / "alerts.yml"])
    with stack:
        pids = dict(stack.info.pids)
        prom = stack.info.prometheus_url
        opts = ReplayOptions(rate=2000, duration_s=600, sample_rate=0.1, stack_dir=str(stack.dir))
        with replaying(stack, read_trace("synthetic:zipf", params=PARAMS), opts):
            cfg = DaemonConfig.model_validate({
                "interval_s": 2.0, "state_dir": str(tmp_path / "state"), "tracking": {"enabled": False},
                "hotness": {"enabled": False}, "policy": {"name": "mrc"},
                "http": {"port": 0, "stack_dir": str(stack.dir)},
                "targets": [{"name": "main", "backend": "live", "redis_url": stack.redis_url, "prometheus_url": prom,
                             "password_env": None,
                             "bounds": {"maxmemory_min": 4 * MiB, "maxmemory_max": 48 * MiB,
                                        "policies": ["allkeys-lru", "allkeys-lfu"], "timeouts": [0]}}],
            })
            d = Daemon(cfg)
            d.start_http()
            registered = stack.dir / "targets" / "daemon" / f"daemon-{d.session}.json"
            assert registered.is_file()
            loop = threading.Thread(target=d.run, name="test-daemon", daemon=True)
            loop.start()
            try:
                # Prometheus scrapes the daemon as the deploy config does, and has two samples of its cost to rate
                wait_for("the daemon's cost in Prometheus",
                         lambda: query(prom, 'count_over_time(cachetuner_daemon_cost_total{part="miss"}[1m]) >= 2'))
                up = query(prom, 'up{job="cachetuner-daemon"}')
                assert [r["value"][1] for r in up] == ["1"]
                def healthy() -> list[dict[str, Any]] | None:
                    groups = json.loads(urllib.request.urlopen(f"{prom}/api/v1/rules", timeout=10).read())["data"]["groups"]
                    ok = [r for g in groups for r in g["rules"] if r.get("health") == "ok"]
                    return ok if len(ok) == 8 else None

                rules = wait_for("all eight rules evaluated", healthy)
                assert len(rules) == 8 and {r["type"] for r in rules} == {"alerting"}
                assert not [r for r in rules if r["state"] == "firing"]  # a healthy daemon raises nothing
                dash = json.loads((DEPLOY / "grafana" / "cachetuner-daemon.json").read_text())
                results = {}
                for p in dash["panels"]:
                    for t in p.get("targets", []):
                        expr = t["expr"]
                        for k, v in GRAFANA_VARS.items():
                            expr = expr.replace(k, v)
                        results[(p["title"], t["refId"])] = query(prom, expr)  # every query parses and runs
                for panel in ("Measured cost per hour", "Measured cost per hour, by term", "maxmemory in force",
                              "Hit ratio (redis_exporter)", "maxmemory-policy in force", "Loop time p95"):
                    assert results[(panel, "A")], f"dashboard panel {panel!r} shows no data"
                parts = {r["metric"]["part"] for r in results[("Measured cost per hour, by term", "A")]}
                assert {"memory", "miss"} <= parts
            finally:
                d.stop()
                loop.join(60)
            assert not loop.is_alive()
            assert not registered.exists()  # the daemon took its scrape target away when it stopped
    assert not [pid for pid in pids.values() if pid_alive(pid)], f"processes left behind: {pids}"
