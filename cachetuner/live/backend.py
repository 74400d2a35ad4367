"""``LiveRedisBackend``: the :class:`~cachetuner.backend.CacheBackend` of a real Redis, observed through Prometheus.

Metrics come from PromQL over what redis_exporter (server side) and the replayer (client side) export,
with the mapping table of :mod:`cachetuner.metrics`. Counters are read as *exact* deltas between the
last sample at or before each interval boundary::

    sum(((last_over_time(m[W]) - m offset W) >= 0) or last_over_time(m[W]))

rather than ``increase(m[W])``: ``increase`` extrapolates to the window edges and returns fractional
counts that never equal Redis's INFO counters, while this difference telescopes exactly over
consecutive intervals. A series that appears inside the window counts from zero (the ``or m`` arm);
a counter reset counts from the reset. Latency quantiles are computed by the shared
:func:`~cachetuner.metrics.histogram_quantile` over the bucket deltas of the replayer's
``cachetuner_request_latency_seconds_bucket``, so live and simulated p95 use one formula.

Prometheus down, no samples, or NaN: the snapshot carries the last known values with
``stale=True``; the backend never raises for missing metrics.

Configuration changes go through *one* ``CONFIG SET p1 v1 p2 v2 ...`` holding every parameter that
changes: Redis 7 applies a multi-parameter ``CONFIG SET`` atomically (all or nothing, rolled back
when any value is refused), so no reader ever sees a half-applied mix, which one ``CONFIG SET`` per
parameter allowed between the commands. The result is verified with ``CONFIG GET``; a refusal
(``NOPERM`` for an ACL user without ``+config|set``, an invalid value, a lost connection) comes back
as ``ApplyResult(ok=False, error=...)`` and leaves the whole configuration as it was.
"""

from __future__ import annotations

import contextlib
import math
import time
from typing import Any

import numpy as np

from cachetuner.backend import ApplyResult, BackendFacts, RequestSample
from cachetuner.config import REDIS_PARAM_NAMES, RedisConfig
from cachetuner.errors import ServiceError
from cachetuner.live import sampling
from cachetuner.live.resp import redis_client
from cachetuner.live.stack import SCRAPE_INTERVAL_S
from cachetuner.live.stream_tail import StreamTail, count_reads
from cachetuner.metrics import LATENCY_BUCKETS_S, MetricsSnapshot, TenantMetrics, histogram_quantile

#: Default cost of one backend (inference) call, as the simulator's ``CostParams.miss_cost``.
DEFAULT_MISS_COST = 0.002


def _redis_error(e: Exception) -> str:
    """The server's error text with its code (redis-py strips ``NOPERM`` into the exception class)."""
    import redis

    if isinstance(e, redis.exceptions.NoPermissionError):
        return f"NOPERM {e}"
    return f"{type(e).__name__}: {e}" if not isinstance(e, redis.ResponseError) else str(e)


def _delta(metric: str, sel: str, window: str, by: str = "") -> str:
    """Exact counter increase over the window ending at the query time (see the module docstring).

    The end value is ``last_over_time`` so a load generator that finished inside the window (its
    series then carry a staleness marker) still counts.
    """
    m = f"{metric}{sel}"
    end = f"last_over_time({m}[{window}])"
    return f"sum{by}((({end} - {m} offset {window}) >= 0) or {end})"


class LiveRedisBackend:
    """A real Redis + Prometheus as a :class:`~cachetuner.backend.CacheBackend`.

    Args:
        redis_url: ``redis://[user:password@]host:port/db`` or ``rediss://`` (TLS). Username and
            password fall back to ``REDIS_USERNAME`` / ``REDIS_PASSWORD``.
        prometheus_url: base URL of the Prometheus that scrapes redis_exporter (and the replayer).
        interval_s: tuning interval; boundaries are aligned to multiples of it in Unix time.
        key_prefix: prefix of this backend's own keys in Redis (the sampled-request stream
            ``{prefix}sampled`` written by the replayer).
        selector: PromQL label matchers selecting this Redis's exporter series, e.g.
            ``'instance="10.0.0.5:9121"'``; empty = everything Prometheus has (fine for one Redis).
        settle_s: how long after a boundary to wait before reading it (scrape interval + ingestion).
        miss_cost: cost units per miss for ``snapshot.miss_cost``.
        query_timeout_s: per PromQL query.
        bounds: ``(min, max)`` maxmemory the env may choose, bytes (reported by :meth:`facts`).
    """

    def __init__(
        self,
        redis_url: str,
        prometheus_url: str,
        interval_s: float = 5.0,
        key_prefix: str = "cachetuner:",
        *,
        selector: str = "",
        settle_s: float | None = None,
        miss_cost: float = DEFAULT_MISS_COST,
        query_timeout_s: float = 3.0,
        bounds: tuple[int, int] | None = None,
    ) -> None:
        from prometheus_api_client import PrometheusConnect

        if interval_s < 1.0:
            raise ServiceError(f"interval_s={interval_s}: must be >= 1 s (Prometheus scrapes once a second)")
        self.interval_s = float(interval_s)
        self.redis_url = redis_url
        self.prometheus_url = prometheus_url.rstrip("/")
        self.key_prefix = key_prefix
        self.selector = "{" + selector + "}" if selector else ""
        self.settle_s = SCRAPE_INTERVAL_S + 0.6 if settle_s is None else settle_s
        self.miss_cost = miss_cost
        self.query_timeout_s = query_timeout_s
        self._redis = redis_client(redis_url, socket_timeout=5.0, decode_responses=True)
        self._raw = redis_client(redis_url, socket_timeout=5.0)
        self._prom = PrometheusConnect(url=self.prometheus_url, disable_ssl=True, timeout=int(math.ceil(query_timeout_s)))
        self._config = RedisConfig()
        self._sample_rate = sampling.DEFAULT_SAMPLE_RATE
        self.bounds = bounds
        self._last: MetricsSnapshot | None = None
        self._boundary = 0.0
        self._window = (0.0, 0.0)
        self._config_from_redis()
        self._tail: StreamTail | None = None  # started by the first recent_requests() (see there)
        self._direct_reads: list[tuple[float, bool]] = []  # (time, a keyspace hit) of XRANGEs sent outside the tail

    # ------------------------------------------------------------------ protocol
    @property
    def config(self) -> RedisConfig:
        return self._config

    @property
    def exhausted(self) -> bool:
        return False

    def facts(self) -> BackendFacts:
        """Only the bounds are known (:class:`~cachetuner.backend.FactsBackend`): live traffic has no
        trace, working set or workload name ahead of time."""
        return BackendFacts(bounds=self.bounds)

    def reset(self, *, seed: int | None = None) -> MetricsSnapshot:
        """Read the current configuration and the last complete interval; ``seed`` is unused (live traffic)."""
        del seed
        self._config_from_redis()
        b = math.floor((time.time() - self.settle_s) / self.interval_s) * self.interval_s
        self._boundary = b
        return self.read(b - self.interval_s, b)

    def step(self) -> MetricsSnapshot:
        """Sleep until the next interval boundary has been scraped, then read that interval."""
        nxt = self._boundary + self.interval_s
        now = time.time()
        if now - self.settle_s > nxt + self.interval_s:
            # We fell behind (slow agent, suspended process): read the latest complete interval instead.
            nxt = math.floor((now - self.settle_s) / self.interval_s) * self.interval_s
        wait = nxt + self.settle_s - time.time()
        if wait > 0:
            time.sleep(wait)
        self._boundary = nxt
        return self.read(nxt - self.interval_s, nxt)

    def apply(self, config: RedisConfig) -> ApplyResult:
        """One atomic ``CONFIG SET`` of every changed parameter, verified with ``CONFIG GET``; refusals are reported, never raised."""
        import redis

        try:
            wanted = config.to_redis()
        except ValueError as e:
            return ApplyResult(ok=False, requested=config, applied=self._config, error=str(e))
        errors: list[str] = []
        # A Redis that does not answer (down, or hung: every call waits out the socket timeout) ends the
        # apply at its first such error: going on would wait out two more timeouts (a hung server swallows
        # a whole outage inside one apply, and the caller never learns the target was unreachable).
        down = (redis.ConnectionError, redis.TimeoutError)
        try:
            current = self._config_get()
        except down as e:
            return ApplyResult(ok=False, requested=config, applied=self._config,
                               error=f"CONFIG GET: {_redis_error(e)}", unreachable=True)
        except redis.RedisError as e:
            current = {}
            errors.append(f"CONFIG GET: {_redis_error(e)}")
        changes = [(name, value) for name, value in wanted.items() if current.get(name) != value]
        set_failed = False
        if changes:
            args = [x for pair in changes for x in pair]
            try:
                # Redis >= 7: several parameters in one CONFIG SET are applied all-or-nothing.
                self._redis.config_set(*args)
            except down as e:  # sent, maybe applied later by a server that wakes up: the caller reads it back
                return ApplyResult(ok=False, requested=config, applied=self._config,
                                   error=f"CONFIG SET {' '.join(args)}: {_redis_error(e)}", unreachable=True)
            except redis.RedisError as e:
                set_failed = True
                errors.append(f"CONFIG SET {' '.join(args)}: {_redis_error(e)}")
        try:
            after = self._config_get()
            self._config = RedisConfig.from_redis(after)
            if not set_failed:  # after a refusal the old values are expected; the refusal says it all
                for name, value in wanted.items():
                    if after.get(name) != value:
                        errors.append(f"{name}: asked {value}, Redis reports {after.get(name)}")
        except (redis.RedisError, ValueError) as e:
            errors.append(f"CONFIG GET (verify): {_redis_error(e)}")
        return ApplyResult(ok=not errors, requested=config, applied=self._config, error="; ".join(errors) or None)

    def recent_requests(self) -> RequestSample:
        """Sampled requests of the last interval from the ``{prefix}sampled`` stream (see :mod:`.sampling`)."""
        import redis

        lo, hi = self._window
        if self._tail is not None and self._tail.reads_ok:
            entries = self._tail.window(lo, hi)
        else:  # the first call (the tail starts below) or the tail could not read yet: read the window directly
            try:
                entries = self._raw.xrange(
                    sampling.stream_key(self.key_prefix), min=f"{int(lo * 1000)}-0", max=f"{int(hi * 1000)}-0",
                    count=100_000,
                )
                # entries say the stream exists (a hit); none may be a stream without entries in the window,
                # taken as a miss (the first read only, before the tail)
                self._direct_reads = [*self._direct_reads[-9:], (time.time(), bool(entries))]
            except redis.RedisError:
                return RequestSample(rate=self._sample_rate)
        if self._tail is None:
            # From now on the stream is followed while it is written (cachetuner.live.stream_tail): an
            # allkeys-* policy may evict it between two end-of-interval reads. Started only by a caller
            # that reads the stream; each poll (XRANGE) counts as a keyspace hit or miss of the Redis
            # being measured, four a second.
            self._tail = StreamTail(self.redis_url, sampling.stream_key(self.key_prefix), poll_s=0.25,
                                    retention_s=max(120.0, 20 * self.interval_s))
        sample = sampling.entries_to_sample(entries, self._sample_rate)
        self._sample_rate = sample.rate
        return sample

    def close(self) -> None:
        if self._tail is not None:
            self._tail.close()
        for c in (self._redis, self._raw):
            with contextlib.suppress(Exception):  # closing must not raise
                c.close()

    # ------------------------------------------------------------------ reading
    def read(self, start: float, end: float) -> MetricsSnapshot:
        """The snapshot of ``[start, end]`` (Unix seconds) from Prometheus; stale on any failure."""
        self._window = (start, end)
        w = f"{max(1, round((end - start) * 1000))}ms"
        sel = self.selector
        at = {"time": f"{end:.3f}"}
        snap = MetricsSnapshot(interval_s=end - start, config=self._config)
        try:
            core = {
                "hits": self._scalar(_delta("redis_keyspace_hits_total", sel, w), at),
                "misses": self._scalar(_delta("redis_keyspace_misses_total", sel, w), at),
                "used_memory": self._scalar(f"sum(redis_memory_used_bytes{sel})", at),
                "maxmemory": self._scalar(f"sum(redis_memory_max_bytes{sel})", at),
            }
            if any(v is None for v in core.values()):
                return self._stale(snap, "no samples for " + ", ".join(k for k, v in core.items() if v is None))
            snap.used_memory, snap.maxmemory = int(core["used_memory"]), int(core["maxmemory"])  # type: ignore[arg-type]
            opt = {
                "evictions": _delta("redis_evicted_keys_total", sel, w),
                "expirations": _delta("redis_expired_keys_total", sel, w),
                "commands": _delta("redis_commands_processed_total", sel, w),
                "connected_clients": f"sum(redis_connected_clients{sel})",
                "keys": f"sum(redis_db_keys{sel})",
                "peak_used_memory": f"max(max_over_time(redis_memory_used_bytes{sel}[{w}]))",
                # client side (the replayer); absent when no replayer runs
                "requests": _delta("cachetuner_requests_total", "", w),
                "gets": _delta("cachetuner_requests_total", '{op="get"}', w),
                "sets": _delta("cachetuner_sets_total", "", w),
                "rejected_writes": _delta("cachetuner_rejected_writes_total", "", w),
                "byte_requests": _delta("cachetuner_requested_bytes_total", "", w),
                "byte_hits": _delta("cachetuner_hit_bytes_total", "", w),
            }
            raw = {field: self._scalar(q, at) for field, q in opt.items()}
            for field, v in raw.items():
                setattr(snap, field, int(v) if v is not None else 0)
            # the replayer's GETs: their hits and misses from its own counters, scraped with them. The server's,
            # scraped by the exporter at another instant of the same second, read up to 1 % more hits than GETs at
            # 500 req/s (a 10 s daemon's hit ratios of 1.011); without a replayer, the server's less our own reads
            client = ([self._scalar(_delta(f"cachetuner_{m}_total", "", w), at) for m in ("hits", "misses")]
                      if raw["gets"] else [None, None])
            if client[0] is not None and client[1] is not None:
                snap.hits, snap.misses = int(client[0]), int(client[1])
            else:
                own_hits, own_misses = self._own_reads(start, end)
                snap.hits = max(int(core["hits"]) - own_hits, 0)  # type: ignore[arg-type]
                snap.misses = max(int(core["misses"]) - own_misses, 0)  # type: ignore[arg-type]
            if snap.gets == 0:
                snap.gets = snap.hits + snap.misses  # no replayer: the server's view of reads
            if snap.requests == 0:
                snap.requests = snap.gets
            snap.peak_used_memory = max(snap.peak_used_memory, snap.used_memory)
            snap.miss_cost = snap.misses * self.miss_cost
            snap.config = self._config_from_prometheus(at) or self._config
            if not self._latency(snap, w, at, expect=bool(raw["requests"])):
                return self._stale(snap, "latency histogram NaN", keep_counts=True)
            snap.tenants = self._tenants(w, at)
        except Exception as e:  # noqa: BLE001 (Prometheus down / HTTP error / parse error -> stale)
            return self._stale(snap, f"{type(e).__name__}: {e}")
        self._last = snap
        return snap

    def _own_reads(self, start: float, end: float) -> tuple[int, int]:
        """The keyspace (hits, misses) this backend's own reads of the sampled stream added in ``[start, end)``:
        Redis counts every ``XRANGE`` like an application's GET, and the tail polls four times a second, which on
        a quiet cache (100 GETs in a 10 s interval) would be 40 hits of the tuner's own. Counted by the time each
        read returned; the server's counters are read at the last scrape before each boundary (up to
        ``SCRAPE_INTERVAL_S`` earlier), so a poll or two near a boundary may be taken from the neighbouring
        interval (the sum over intervals is kept)."""
        hits, misses = count_reads(self._direct_reads, start, end)
        if self._tail is not None:
            h, m = self._tail.own_reads(start, end)
            hits, misses = hits + h, misses + m
        return hits, misses

    def _latency(self, snap: MetricsSnapshot, w: str, at: dict[str, str], expect: bool) -> bool:
        """Fill the latency fields; False when the replayer sent requests (``expect``) but quantiles are NaN."""
        rows = self._prom.custom_query(_delta("cachetuner_request_latency_seconds_bucket", "", w, by=" by (le)"), params=at)
        cum: dict[float, float] = {}
        for row in rows:
            le = row["metric"].get("le")
            if le is not None:
                cum[float(le)] = float(row["value"][1])
        if not cum or cum.get(math.inf, 0.0) <= 0:
            return not expect
        bounds = sorted(b for b in cum if math.isfinite(b))
        cumulative = np.array([cum[b] for b in bounds] + [cum.get(math.inf, cum[bounds[-1]] if bounds else 0.0)])
        counts = np.diff(cumulative, prepend=0.0).clip(min=0)
        use_bounds = tuple(bounds) if bounds else LATENCY_BUCKETS_S
        vals = [histogram_quantile(q, counts, use_bounds) for q in (0.5, 0.95, 0.99)]
        if any(not math.isfinite(v) for v in vals):
            return False
        snap.latency_p50_ms, snap.latency_p95_ms, snap.latency_p99_ms = (v * 1000.0 for v in vals)
        s = self._scalar(_delta("cachetuner_request_latency_seconds_sum", "", w), at)
        c = self._scalar(_delta("cachetuner_request_latency_seconds_count", "", w), at)
        snap.latency_mean_ms = 1000.0 * s / c if s is not None and c else 0.0
        return True

    def _tenants(self, w: str, at: dict[str, str]) -> dict[str, TenantMetrics]:
        """Per-tenant figures from the replayer's ``tenant``-labelled metrics (empty without tenants)."""
        out: dict[str, TenantMetrics] = {}
        for field, metric in (("gets", "gets"), ("hits", "hits"), ("byte_requests", "requested_bytes"),
                              ("byte_hits", "hit_bytes"), ("stale_hits", "stale_hits")):  # fmt: skip
            for row in self._prom.custom_query(_delta(f"cachetuner_tenant_{metric}_total", "", w, by=" by (tenant)"), params=at):
                t = out.setdefault(row["metric"].get("tenant", ""), TenantMetrics())
                setattr(t, field, int(float(row["value"][1])))
        rows = self._prom.custom_query(
            _delta("cachetuner_tenant_request_latency_seconds_bucket", "", w, by=" by (tenant, le)"), params=at
        )
        cum: dict[str, dict[float, float]] = {}
        for row in rows:
            cum.setdefault(row["metric"].get("tenant", ""), {})[float(row["metric"]["le"])] = float(row["value"][1])
        for tenant, c in cum.items():
            bounds = sorted(b for b in c if math.isfinite(b))
            counts = np.diff(np.array([c[b] for b in bounds] + [c.get(math.inf, 0.0)]), prepend=0.0).clip(min=0)
            q = histogram_quantile(0.95, counts, tuple(bounds)) if counts.sum() > 0 else float("nan")
            out.setdefault(tenant, TenantMetrics()).latency_p95_ms = q * 1000.0 if math.isfinite(q) else 0.0
        return out

    def _scalar(self, query: str, params: dict[str, str]) -> float | None:
        rows = self._prom.custom_query(query, params=params)
        if not rows:
            return None
        v = float(rows[0]["value"][1])
        return v if math.isfinite(v) else None

    def _stale(self, snap: MetricsSnapshot, why: str, keep_counts: bool = False) -> MetricsSnapshot:
        """The last known values, marked stale (``why`` kept for logs in ``self.last_stale_reason``)."""
        self.last_stale_reason = why
        last = self._last
        if keep_counts:
            if last is not None:
                snap.latency_p50_ms, snap.latency_p95_ms = last.latency_p50_ms, last.latency_p95_ms
                snap.latency_p99_ms, snap.latency_mean_ms = last.latency_p99_ms, last.latency_mean_ms
        elif last is not None:
            interval = snap.interval_s
            snap = MetricsSnapshot(**{**last.__dict__, "interval_s": interval})
        snap.stale = True
        return snap

    def _config_from_prometheus(self, at: dict[str, str]) -> RedisConfig | None:
        sel = self.selector[1:-1] + "," if self.selector else ""
        keys = "|".join(REDIS_PARAM_NAMES)
        rows = self._prom.custom_query(f'redis_config_key_value{{{sel}key=~"{keys}"}}', params=at)
        values = {r["metric"]["key"]: r["metric"]["value"] for r in rows if "key" in r["metric"]}
        if set(values) != set(REDIS_PARAM_NAMES):
            return None
        try:
            return RedisConfig.from_redis(values)
        except ValueError:
            return None

    # ------------------------------------------------------------------ redis
    def _config_get(self) -> dict[str, str]:
        """The managed parameters in one ``CONFIG GET`` (Redis >= 7 takes several), so one consistent read."""
        values = self._redis.config_get(*REDIS_PARAM_NAMES)
        return {str(k): str(v) for k, v in values.items()}

    def _config_from_redis(self) -> None:
        import redis

        try:
            self._config = RedisConfig.from_redis(self._config_get())
        except redis.AuthenticationError as e:
            raise ServiceError(f"Redis at {self.redis_url} refused the credentials: {e}") from e
        except redis.ConnectionError as e:
            raise ServiceError(f"cannot reach Redis at {self.redis_url} ({e}); start it with `cachetuner stack up`") from e
        except redis.ResponseError:
            pass  # e.g. an ACL user without +config|get: keep the defaults, apply() will report refusals

    def info_counters(self) -> dict[str, Any]:
        """Redis's own INFO counters (stats + memory), for cross-checking Prometheus."""
        info = self._redis.info("stats")
        info.update(self._redis.info("memory"))
        return info
