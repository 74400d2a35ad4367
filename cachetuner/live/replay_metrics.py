"""The replayer's client-side metrics: what it exports to Prometheus, and how it serves them.

Metrics (prometheus_client, own registry, loopback HTTP port registered in the stack's file_sd):
``cachetuner_request_latency_seconds`` (histogram with :data:`~cachetuner.metrics.LATENCY_BUCKETS_S`),
``cachetuner_requests_total{op}``, ``cachetuner_hits_total``, ``cachetuner_misses_total``,
``cachetuner_sets_total`` (explicit sets + fills), ``cachetuner_rejected_writes_total`` (OOM replies),
``cachetuner_errors_total``, ``cachetuner_requested_bytes_total``, ``cachetuner_hit_bytes_total``.

Counters and the latency histogram are custom collectors updated once a batch (the per-call cost of
``prometheus_client.Counter``/``Histogram`` is too high at 100k req/s). Miss latency is *accounted, not
slept*: :class:`BackendLatency` draws the simulated backend call that :mod:`cachetuner.live.replay` adds
to a miss's round trips.
"""

from __future__ import annotations

import json
import os
import threading
import time
import urllib.parse
import urllib.request
from bisect import bisect_left
from itertools import accumulate
from pathlib import Path

import numpy as np
from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily

from cachetuner.live.replay_tenants import TenantCounters
from cachetuner.live.stack import load_state, register_target
from cachetuner.metrics import LATENCY_BUCKETS_S, histogram_quantile
from cachetuner.traces.trace import Op


class BatchHistogram:
    """A Prometheus histogram fed a whole batch of observations at once.

    ``prometheus_client.Histogram.observe`` costs microseconds per call, too much at 100k req/s; this
    collector keeps the same exposition (``_bucket{le}``, ``_sum``, ``_count``) with the shared buckets.
    A batch's hits share one value (its round trip: one ``bisect`` and one add); its misses are bucketed
    with ``bisect`` one by one when few, with numpy (searchsorted + bincount) when many.
    """

    #: Above this many values, :meth:`observe_many` buckets with numpy.
    NUMPY_FROM = 48

    def __init__(self, name: str, documentation: str, registry: CollectorRegistry, buckets: tuple[float, ...] = LATENCY_BUCKETS_S) -> None:
        self.name, self.documentation = name, documentation
        self.bounds = np.asarray(buckets, dtype=np.float64)
        self._bounds = [float(b) for b in buckets]
        self.counts: list[int] = [0] * (len(buckets) + 1)
        self.sum = 0.0
        self._lock = threading.Lock()
        registry.register(self)

    def observe_many(self, values: np.ndarray | list[float]) -> None:
        if len(values) >= self.NUMPY_FROM:
            arr = np.asarray(values, dtype=np.float64)
            add = np.bincount(np.searchsorted(self.bounds, arr, side="left"), minlength=len(self.counts)).tolist()
            s = float(arr.sum())
            with self._lock:
                self.counts = [a + b for a, b in zip(self.counts, add, strict=True)]
                self.sum += s
            return
        bounds = self._bounds
        with self._lock:
            counts = self.counts
            for v in values:
                counts[bisect_left(bounds, v)] += 1
            self.sum += float(sum(values))

    def observe_n(self, value: float, n: int) -> None:
        i = bisect_left(self._bounds, value)
        with self._lock:
            self.counts[i] += n
            self.sum += value * n

    def snapshot(self) -> np.ndarray:
        """Per-bucket counts (not cumulative), the last one +Inf."""
        with self._lock:
            return np.asarray(self.counts, dtype=np.int64)

    def quantile_ms(self, q: float) -> float:
        """The ``q`` quantile in milliseconds (0.0 when nothing was observed)."""
        v = histogram_quantile(q, self.snapshot())
        return 0.0 if np.isnan(v) else v * 1000.0

    def collect(self):  # noqa: ANN201 (prometheus_client collector protocol)
        with self._lock:
            cum = list(accumulate(self.counts))
            total_sum = self.sum
        buckets = [(repr(b), c) for b, c in zip(self._bounds, cum[:-1], strict=True)]
        buckets.append(("+Inf", cum[-1]))
        yield HistogramMetricFamily(self.name, self.documentation, buckets=buckets, sum_value=total_sum)

    def describe(self):  # noqa: ANN201
        return []


class BatchCounters:
    """The replayer's counters as plain ints behind one collector, added to once per batch.

    ``prometheus_client.Counter.inc`` takes a lock and checks its value on every call; ten of them per
    batch cost ~0.2 us a request at pipeline 64. The exposition is the same as ``Counter``'s
    (``{name}_total``; ``_created`` is left out, the backend does not read it). Reads from the HTTP
    thread see each counter whole (GIL), not necessarily all counters of the same batch.
    """

    #: (metric name without _total, help, attribute); ``requests`` carries the ``op`` label.
    SIMPLE = (
        ("cachetuner_hits", "GETs answered from Redis", "hits"),
        ("cachetuner_misses", "GETs that missed (read-through fill follows)", "misses"),
        ("cachetuner_sets", "SETs sent: explicit sets and read-through fills", "sets"),
        ("cachetuner_rejected_writes", "SETs refused with OOM (noeviction)", "rejected"),
        ("cachetuner_errors", "Error replies other than OOM", "errors"),
        ("cachetuner_requested_bytes", "Bytes requested by GETs (trace sizes)", "req_bytes"),
        ("cachetuner_hit_bytes", "Bytes of GETs served by Redis (trace sizes)", "hit_bytes"),
    )

    def __init__(self, registry: CollectorRegistry) -> None:
        self.get = self.set = self.delete = 0
        self.hits = self.misses = self.sets = self.rejected = self.errors = self.req_bytes = self.hit_bytes = 0
        registry.register(self)

    def add(self, gets: int, sets: int, deletes: int, hits: int, misses: int, fills: int,
            rejected: int, errors: int, req_bytes: int, hit_bytes: int) -> None:  # fmt: skip
        self.get += gets
        self.set += sets
        self.delete += deletes
        self.hits += hits
        self.misses += misses
        self.sets += sets + fills
        self.rejected += rejected
        self.errors += errors
        self.req_bytes += req_bytes
        self.hit_bytes += hit_bytes

    def collect(self):  # noqa: ANN201 (prometheus_client collector protocol)
        req = CounterMetricFamily("cachetuner_requests", "Trace requests replayed", labels=["op"])
        for op in Op:
            req.add_metric([op.name.lower()], getattr(self, op.name.lower()))
        yield req
        for name, doc, attr in self.SIMPLE:
            yield CounterMetricFamily(name, doc, value=getattr(self, attr))

    def describe(self):  # noqa: ANN201
        return []


class ReplayMetrics:
    """The replayer's Prometheus metrics in their own registry (several replayers per process are fine)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.latency = BatchHistogram(
            "cachetuner_request_latency_seconds",
            "Client-side request latency (misses include the simulated backend call)",
            self.registry,
        )
        self.counters = BatchCounters(self.registry)
        self.tenants: TenantCounters | None = None

    def tenant_counters(self, tenants: list[str]) -> TenantCounters:
        """The per-tenant counters (``tenant`` label), created on first use (multi-tenant traces)."""
        if self.tenants is None:
            self.tenants = TenantCounters(tenants, self.registry)
        elif self.tenants.tenants != list(tenants):
            raise ValueError(f"these metrics count tenants {self.tenants.tenants}, not {list(tenants)}")
        return self.tenants

    def serve(self, port: int) -> tuple[object, int]:
        server, _thread = start_http_server(port, addr="127.0.0.1", registry=self.registry)
        return server, int(server.server_port)


class BackendLatency:
    """Simulated backend-call latencies of misses (seconds): lognormal with median ``median_ms`` and
    log-sigma ``sigma`` (the simulator's latency model), drawn a block at a time (one numpy call per
    4096 misses)."""

    BLOCK = 4096

    def __init__(self, median_ms: float, sigma: float, seed: int) -> None:
        self.median_s = median_ms / 1000.0
        self.sigma = sigma
        self.rng = np.random.default_rng(seed)
        self._block: list[float] = []
        self._pos = 0

    def draw(self, m: int) -> list[float]:
        if self._pos + m > len(self._block):
            size = max(self.BLOCK, m)
            if self.sigma:
                block = self.median_s * np.exp(self.sigma * self.rng.standard_normal(size))
            else:
                block = np.full(size, self.median_s)
            self._block, self._pos = block.tolist(), 0
        out = self._block[self._pos : self._pos + m]
        self._pos += m
        return out


def wait_scraped(stack_dir: str, port: int, timeout_s: float) -> bool:
    """Wait until the stack's Prometheus has scraped ``127.0.0.1:port`` once.

    Prometheus applies file_sd changes at most every 5 s, so without this the first seconds of a
    replay would be invisible to the live backend (and land, all at once, in a later interval).
    """
    info = load_state(stack_dir)
    if info is None or timeout_s <= 0:
        return False
    query = urllib.parse.quote(f'up{{instance="127.0.0.1:{port}"}} == 1')
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{info.prometheus_url}/api/v1/query?query={query}", timeout=2) as r:  # noqa: S310
                if json.loads(r.read()).get("data", {}).get("result"):
                    return True
        except (OSError, ValueError):
            pass
        time.sleep(0.25)
    return False


class ScrapeSignal:
    """A collector that exports nothing and marks every collection, i.e. every scrape of ``/metrics``:
    a replay can start right after one (see :mod:`cachetuner.live.served`)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._event = threading.Event()
        registry.register(self)

    def collect(self):  # noqa: ANN201 (prometheus_client collector protocol)
        self._event.set()
        return iter(())

    def describe(self):  # noqa: ANN201
        return []

    def wait_next(self, timeout_s: float, settle_s: float = 0.01) -> bool:
        """Block until the next scrape (False after ``timeout_s``), then ``settle_s`` more so that the
        scrape has read every counter before anything new is counted."""
        self._event.clear()
        ok = self._event.wait(timeout_s)
        if ok and settle_s > 0:
            time.sleep(settle_s)
        return ok


class MetricsEndpoint:
    """``/metrics`` of a :class:`ReplayMetrics` on a loopback port; with ``stack_dir``, registered in that
    stack's file_sd and held until Prometheus has scraped it once (at most ``scrape_wait_s``)."""

    def __init__(self, metrics: ReplayMetrics, port: int, stack_dir: str | None = None, scrape_wait_s: float = 0.0) -> None:
        self.scrapes = ScrapeSignal(metrics.registry)
        self.server, self.port = metrics.serve(port)
        self.target: Path | None = None
        if stack_dir:
            self.target = register_target(stack_dir, f"replay-{os.getpid()}-{self.port}", self.port)
            wait_scraped(stack_dir, self.port, scrape_wait_s)

    def close(self, linger_s: float) -> None:
        """Stop serving; a registered endpoint stays up ``linger_s`` first (Prometheus scrapes the final counters)."""
        if self.target is not None:
            if linger_s > 0:
                time.sleep(linger_s)
            Path(self.target).unlink(missing_ok=True)
        self.server.shutdown()  # type: ignore[attr-defined]
        self.server.server_close()  # type: ignore[attr-defined]
