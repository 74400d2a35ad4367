"""The daemon's own metrics (prometheus_client, private registry) and its HTTP endpoints.

``GET /metrics`` serves the registry in the Prometheus text format; ``GET /healthz`` serves a JSON
health report (200 when the loop ran recently, 503 otherwise) for Docker's HEALTHCHECK and
orchestrators. The server binds to 127.0.0.1 unless configured otherwise.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from cachetuner.config import REDIS_POLICIES, RedisConfig

LOOP_BUCKETS_S = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0)


class DaemonMetrics:
    """Counters and gauges the loop updates; one private registry per daemon (tests run several)."""

    def __init__(self) -> None:
        r = self.registry = CollectorRegistry()
        self.decisions = Counter("cachetuner_daemon_decisions", "Decisions taken", ["target", "action"], registry=r)
        self.applied = Counter("cachetuner_daemon_applied", "Configs applied with CONFIG SET", ["target"], registry=r)
        self.vetoed = Counter("cachetuner_daemon_vetoed", "Proposals vetoed, by guard", ["target", "guard"], registry=r)
        self.rollbacks = Counter("cachetuner_daemon_rollbacks", "Rollbacks to the last known-good config", ["target"], registry=r)
        self.apply_errors = Counter("cachetuner_daemon_apply_errors", "CONFIG SET refused or failed", ["target"], registry=r)
        self.restarts = Counter("cachetuner_daemon_redis_restarts", "Redis restarts detected", ["target"], registry=r)
        self.loop_seconds = Histogram(
            "cachetuner_daemon_loop_seconds", "Wall time of one loop (observe + decide + apply)", buckets=LOOP_BUCKETS_S, registry=r
        )
        self.maxmemory = Gauge("cachetuner_daemon_config_maxmemory_bytes", "maxmemory in place", ["target"], registry=r)
        self.timeout = Gauge("cachetuner_daemon_config_timeout_seconds", "timeout in place", ["target"], registry=r)
        self.policy = Gauge("cachetuner_daemon_config_policy", "1 for the maxmemory-policy in place", ["target", "policy"], registry=r)
        self.up = Gauge("cachetuner_daemon_target_up", "1 when the target answered in the last loop", ["target"], registry=r)
        self.stale = Gauge("cachetuner_daemon_target_stale", "1 when the last metrics were stale", ["target"], registry=r)
        self.last_loop = Gauge("cachetuner_daemon_last_loop_timestamp_seconds", "Unix time of the last loop", registry=r)
        # what the cache costs (daemon/costs.py): measured per fresh interval, and the curves' estimate; in dollars
        # when the decider's env has a prices: block (cachetuner_daemon_cost_in_dollars 1), else the reward's units
        self.cost = Counter(
            "cachetuner_daemon_cost", "Measured cost of the fresh intervals, by term (memory, miss, slo, switch)",
            ["target", "part"], registry=r,
        )
        self.costed = Counter("cachetuner_daemon_costed_intervals", "Fresh intervals whose cost was measured", ["target"], registry=r)
        self.predicted = Counter(
            "cachetuner_daemon_predicted_cost",
            "Cost the miss-ratio curves predict for the config in force and for the baseline (the config the daemon found)",
            ["target", "config"], registry=r,
        )
        self.baseline_maxmemory = Gauge(
            "cachetuner_daemon_baseline_maxmemory_bytes", "maxmemory of the baseline (the config the daemon found)", ["target"],
            registry=r,
        )
        self.price_memory = Gauge("cachetuner_daemon_price_memory_gib_hour", "Price of 1 GiB of maxmemory for an hour",
                                  ["target"], registry=r)
        self.price_miss = Gauge("cachetuner_daemon_price_miss", "Price of one miss (backend call)", ["target"], registry=r)
        self.in_dollars = Gauge("cachetuner_daemon_cost_in_dollars", "1 when costs are dollars (the env has a prices: block)",
                                ["target"], registry=r)

    def set_config(self, target: str, cfg: RedisConfig) -> None:
        self.maxmemory.labels(target).set(cfg.maxmemory)
        self.timeout.labels(target).set(cfg.timeout)
        for p in REDIS_POLICIES:
            self.policy.labels(target, p).set(1.0 if p == cfg.maxmemory_policy else 0.0)

    def render(self) -> bytes:
        """The daemon's registry, then the process-wide one (process/GC metrics and the hotness
        client's ``cachetuner_hotness_fallback_total`` / ``cachetuner_hotness_backend``)."""
        return generate_latest(self.registry) + generate_latest(REGISTRY)


class DaemonHTTPServer:
    """``/metrics`` and ``/healthz`` on a background thread."""

    def __init__(self, host: str, port: int, metrics: DaemonMetrics, health: Callable[[], dict[str, Any]]) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server API)
                path = self.path.split("?", 1)[0]
                if path == "/metrics":
                    body, ctype, code = metrics.render(), CONTENT_TYPE_LATEST, 200
                elif path == "/healthz":
                    h = health()
                    body, ctype, code = json.dumps(h).encode(), "application/json", 200 if h.get("ok") else 503
                else:
                    body, ctype, code = b"not found\n", "text/plain", 404
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, fmt: str, *args: Any) -> None:  # scrapes every few seconds: keep stderr quiet
                pass

        self._server = ThreadingHTTPServer((host, port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="daemon-http", daemon=True)

    @property
    def address(self) -> tuple[str, int]:
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
