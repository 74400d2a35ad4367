"""Serve a trace on the live stack and read each of its intervals back with PromQL.

One definition of a live interval for every experiment that replays a trace ``speedup`` times faster
than its clock and compares the result with the simulator (the tenant QoS experiment, the shadow TTL
A/B): interval ``j`` holds the requests of trace time ``[t0 + j·interval_s, t0 + (j+1)·interval_s)``,
exactly the requests of the simulator's interval ``j`` (:func:`cachetuner.ttl.outcomes.interval_ids`),
sent during wall time ``[ws + j·w, ws + (j+1)·w)`` with ``w = interval_s / speedup``.

Prometheus holds a counter's value only at scrape times, and the live backend reads an interval as
the difference of the last samples at or before its two boundaries. If the boundaries fell anywhere
between two scrapes, each interval would be read up to one scrape interval early: with ``w`` = 3 s and
a 1 s scrape, a third of the interval before. So the replay starts right after a scrape of its own
``/metrics`` (``ReplayOptions.start_on_scrape``): when ``w`` is a whole number of scrape intervals,
every boundary then falls just after a scrape, and interval ``j`` read back is interval ``j`` sent.
"Just after" is about 10 ms, and a scrape that starts later than that (Prometheus's ticker under a
loaded machine) would land past its boundary: its counts would move to the next interval, and past
the last boundary they would be lost (a CI run read half of the last interval's GETs). So each
interval is read half a scrape interval after its boundaries (:data:`READ_OFFSET_S`): the window
then still ends on the scrape at the boundary, late or not, and starts after the one before it.

Requests go out in exact trace order (``exact_order``): otherwise a batch defers every repeat of a
key to a later batch, one a batch, and a key requested more often than batches go out (gold's
hottest keys at 20x) falls further and further behind its trace time, so each interval read back
lacks some of its hits (13 % of gold's GETs at 20x) and its miss share is inflated.

The sampled-request stream (:mod:`.sampling`) is the mirrored sample of a shadow experiment, with
each request's hit outcome on the real Redis and the TTL it was written with. It lives in the tuned
Redis, where ``allkeys-*`` policies may evict it like any key (Redis's LRU clock has a 1 s resolution,
so a stream written every batch ties with every other key touched in the last second), so a
:class:`StreamDrain` reads it while the replay runs and trims what it has read: an eviction then loses
at most one poll's entries, and :attr:`ServedRun` says how many came back.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import numpy as np

from cachetuner.config import RedisConfig
from cachetuner.errors import ConfigError, ServiceError
from cachetuner.live import sampling
from cachetuner.live.backend import LiveRedisBackend
from cachetuner.live.replay import ReplayOptions, ReplayResult, replay
from cachetuner.live.resp import redis_client
from cachetuner.live.stack import SCRAPE_INTERVAL_S, load_state
from cachetuner.metrics import MetricsSnapshot
from cachetuner.traces.trace import Trace
from cachetuner.ttl.keyspace import KeySpace


@dataclass
class MirroredStream:
    """Every sampled request of one replay, in send order (trace time, not wall time)."""

    keys: np.ndarray
    sizes: np.ndarray
    ops: np.ndarray
    timestamps: np.ndarray  # trace seconds: t0 + (wall - wall_start) * speedup
    ttls: np.ndarray  # trace seconds, as written (the served arm's TTL policy)
    hits: np.ndarray  # bool: the GET hit on the real Redis
    rate: float


@dataclass
class ServedRun:
    """What the served arm did: the replayer's own counts, one snapshot per complete interval read
    back through Prometheus, and the mirrored sample (``None`` with ``sample_rate`` 0)."""

    result: ReplayResult
    snapshots: list[MetricsSnapshot]
    wall_interval_s: float
    aligned: bool  # interval boundaries fall right after scrapes (see the module docstring)
    stream: MirroredStream | None
    empty_used_memory: int = 0  # INFO used_memory of the empty Redis before the replay (its fixed part)


class StreamDrain:
    """Reads the sampled-request stream every ``poll_s`` while a replay runs (``XREAD`` from the last
    id read, then ``XTRIM MINID`` so the stream stays a few polls long); :meth:`stop` reads the rest."""

    def __init__(self, redis_url: str, key: str, poll_s: float = 0.1) -> None:
        self._r = redis_client(redis_url, socket_timeout=5.0)
        self.key, self.poll_s = key, poll_s
        self.entries: list = []
        self._last = "0-0"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="stream-drain", daemon=True)
        self._thread.start()

    def _read(self, block_ms: int | None) -> int:
        got = self._r.xread({self.key: self._last}, count=50_000, block=block_ms)
        n = 0
        for _, entries in got or []:
            if entries:
                self.entries.extend(entries)
                self._last = entries[-1][0].decode() if isinstance(entries[-1][0], bytes) else entries[-1][0]
                n += len(entries)
        if n:
            self._r.xtrim(self.key, minid=self._last, approximate=False)
        return n

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._read(int(self.poll_s * 1000))

    def stop(self) -> list:
        """Stop polling, read what is left, return every entry read (raw bytes, in stream order)."""
        self._stop.set()
        self._thread.join()
        while self._read(None):
            pass
        self._r.close()
        return self.entries


#: Read each interval's window this much after its wall boundaries (see the module docstring): a
#: scrape at most this late still counts in its own interval, and the next one is not yet due.
READ_OFFSET_S = SCRAPE_INTERVAL_S / 2


def wall_interval(interval_s: float, speedup: float) -> float:
    """Wall seconds per interval; must be at least one scrape interval for PromQL to resolve it."""
    w = interval_s / speedup
    if w < SCRAPE_INTERVAL_S:
        raise ConfigError(
            f"interval {interval_s:g} s at speedup {speedup:g} is {w:g} wall seconds, under Prometheus's "
            f"{SCRAPE_INTERVAL_S:g} s scrape: lower --speedup"
        )
    return w


def scrape_aligned(w: float) -> bool:
    """Whether intervals of ``w`` wall seconds keep their boundaries on the scrape grid."""
    k = w / SCRAPE_INTERVAL_S
    return abs(k - round(k)) < 1e-9


def serve_trace(
    trace: Trace,
    stack_dir: str,
    config: RedisConfig,
    *,
    ttl_policy: str | None = None,
    keyspace: KeySpace | None = None,
    no_ttl_classes: tuple[str, ...] = (),
    speedup: float = 20.0,
    interval_s: float = 60.0,
    max_intervals: int | None = None,
    sample_rate: float = 0.0,
    seed: int = 0,
) -> ServedRun:
    """``FLUSHALL``, one ``CONFIG SET`` of ``config``, then replay ``trace`` (TTLs by ``ttl_policy``,
    compressed with the clock) into the stack of ``stack_dir``; read every complete interval back."""
    info = load_state(stack_dir)
    if info is None:
        raise ConfigError(
            f"--stack-dir {stack_dir}: no stack.json there (run `cachetuner stack up --dir {stack_dir}`)"
        )
    w = wall_interval(interval_s, speedup)
    t0 = float(trace.timestamps[0])
    n_req = len(trace)
    if max_intervals is not None:
        n_req = int(np.searchsorted(trace.timestamps, t0 + max_intervals * interval_s, side="left"))
    # the simulator's intervals of these requests (cachetuner.ttl.outcomes.interval_ids), the last one partial
    n = int((float(trace.timestamps[n_req - 1]) - t0) // interval_s) + 1
    r = redis_client(info.redis_url, socket_timeout=5.0)
    backend = LiveRedisBackend(info.redis_url, info.prometheus_url, interval_s=max(w, 1.0))
    try:
        r.flushall()
        empty = int(r.info("memory")["used_memory"])
        applied = backend.apply(config)
        if not applied.ok:
            raise ServiceError(f"CONFIG SET refused on {info.redis_url}: {applied.error}")
        # the drain keeps the stream short; MAXLEN only guards against a drain that fell behind
        maxlen = max(sampling.DEFAULT_MAXLEN, int(2 * sample_rate * n_req) + 1000)
        opts = ReplayOptions(
            speedup=speedup, duration_s=(float(trace.timestamps[n_req - 1]) - t0) / speedup + 60, max_requests=n_req,
            stack_dir=stack_dir, sample_rate=sample_rate, stream_maxlen=maxlen, ttl_policy=ttl_policy,
            no_ttl_classes=list(no_ttl_classes), start_on_scrape=True, exact_order=True, seed=seed,
        )  # fmt: skip
        drain = None
        if sample_rate > 0:
            r.delete(sampling.stream_key(opts.stream_prefix))
            drain = StreamDrain(info.redis_url, sampling.stream_key(opts.stream_prefix))
        try:
            res = replay(trace, info.redis_url, opts, keyspace=keyspace)
        finally:
            entries = drain.stop() if drain is not None else []
        ws = res.wall_start + READ_OFFSET_S
        wait = ws + n * w + backend.settle_s - time.time()
        if wait > 0:  # the last interval's end must have been scraped
            time.sleep(wait)
        snaps = [backend.read(ws + j * w, ws + (j + 1) * w) for j in range(n)]
        _client_hits(snaps, info.prometheus_url, res, ws, w)
        stream = (
            mirrored_stream(entries, res.wall_start, t0, speedup, sample_rate) if sample_rate > 0 else None
        )
    finally:
        backend.close()
        r.close()
    return ServedRun(res, snaps, w, scrape_aligned(w) and res.start_on_scrape, stream, empty)


def _client_hits(snaps: list[MetricsSnapshot], prometheus_url: str, res: ReplayResult, ws: float, w: float) -> None:
    """Set each interval's hits and misses to this replay's own (``cachetuner_{hits,misses}_total`` of
    its endpoint, on the replayer's scrape grid) instead of redis_exporter's keyspace counters, which are
    scraped on another phase and count every lookup of the server (the stream's reads too): the hit
    ratio is then the application's, over the same GETs as ``gets``, as in the simulator. Interval ``j``
    is read over ``[ws + j·w, ws + (j+1)·w]``, the windows of the snapshots."""
    from prometheus_api_client import PrometheusConnect

    if res.metrics_port is None:
        return
    prom = PrometheusConnect(url=prometheus_url.rstrip("/"), disable_ssl=True)
    sel = f'{{instance="127.0.0.1:{res.metrics_port}"}}'
    win = f"{max(1, round(w * 1000))}ms"
    for j, snap in enumerate(snaps):
        at = {"time": f"{ws + (j + 1) * w:.3f}"}
        got = {}
        for name in ("hits", "misses"):
            m = f"cachetuner_{name}_total{sel}"
            end = f"last_over_time({m}[{win}])"
            rows = prom.custom_query(f"sum(((({end} - {m} offset {win}) >= 0) or {end}))", params=at)
            got[name] = int(float(rows[0]["value"][1])) if rows else None
        if got["hits"] is not None and got["misses"] is not None:
            snap.hits, snap.misses = got["hits"], got["misses"]


def mirrored_stream(
    entries: list, wall_start: float, t0: float, speedup: float, rate: float
) -> MirroredStream:
    """``XRANGE`` entries (raw bytes) of one replay as arrays in trace time."""
    n = len(entries)
    cols = {c: np.empty(n, np.float64) for c in ("k", "s", "o", "t", "ttl", "h")}
    for i, (_, f) in enumerate(entries):
        for c, a in cols.items():
            a[i] = float(f.get(c.encode(), b"0"))
    return MirroredStream(
        keys=cols["k"].astype(np.int64), sizes=cols["s"].astype(np.int64), ops=cols["o"].astype(np.uint8),
        timestamps=t0 + (cols["t"] - wall_start) * speedup, ttls=cols["ttl"] * speedup, hits=cols["h"] > 0, rate=rate,
    )  # fmt: skip
