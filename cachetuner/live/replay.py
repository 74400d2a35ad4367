"""Trace replay into a real Redis, as a read-through application would, pipelined.

Each trace request becomes:

* ``GET`` (read-through): ``GET ct:{key}``; on a miss the application calls its backend (an LLM,
  a database) and then ``SET ct:{key} <size bytes> [PX ttl]``.
* ``SET``: ``SET ct:{key} <size bytes> [PX ttl]``; ``DELETE``: ``DEL ct:{key}``.

Requests are sent in pipelined batches of ``pipeline`` commands over one connection. A batch never
contains the same key twice: a request whose key is already in the batch is deferred to the head of
the next batch (with every later request of that key) or, with ``exact_order`` (fidelity runs), the
batch is cut before it. The fills of a batch's misses go at the head of the next batch, before any
request sent after them. Every request therefore sees the effect
of all earlier requests *of its key*, exactly as in a sequential client, so hit/miss outcomes match
sequential replay except when an eviction falls between a miss and its fill. Requests of different
keys may be reordered by a batch or more (deferral), which changes which keys an eviction finds;
``exact_order`` removes that reordering at some cost in throughput on traces with runs of one key.

Throughput (>= 100k requests/s from one process is the target; see docs/live.md for measurements):
GET commands are pre-encoded per key and a batch goes out in one ``sendall``; deferred requests are
per-key FIFOs under a heap of their first trace index, so a batch takes them in trace order without
rescanning the backlog; replies of read-through GET traces are accounted with C-level list scans (only
misses touch Python); counters and the latency histogram are custom collectors updated once a batch.
Flat out (no pacing, one batch in flight, ``overlap``) the next batch is built while the current one is
on the wire: it cannot contain a key that needs the current batch's outcome before it is sent, because
it is sent only after those replies are read and those fills are put ahead of it; its size is
``pipeline`` minus the previous batch's fills, so ``pipeline`` holds on average rather than exactly.

Miss latency is *accounted, not slept*: the backend call is not performed; a miss is recorded in the
latency histogram as ``batch round trip + backend latency + fill round trip`` (the fill round trip is
approximated by the batch's), with the backend latency drawn lognormal (median
``miss_latency_ms``, log-sigma ``miss_sigma``, as the simulator's latency model). A hit records the
batch round trip, which is what a pipelined client sees. So the pipeline keeps Redis busy at full
speed and the histogram still shows what users would wait.

Metrics (prometheus_client, own registry, loopback HTTP port registered in the stack's file_sd):
``cachetuner_request_latency_seconds`` (histogram with :data:`~cachetuner.metrics.LATENCY_BUCKETS_S`),
``cachetuner_requests_total{op}``, ``cachetuner_hits_total``, ``cachetuner_misses_total``,
``cachetuner_sets_total`` (explicit sets + fills), ``cachetuner_rejected_writes_total`` (OOM replies),
``cachetuner_errors_total``, ``cachetuner_requested_bytes_total``, ``cachetuner_hit_bytes_total``.
"""

from __future__ import annotations

import json
import os
import threading
import time
import urllib.parse
import urllib.request
from bisect import bisect_left
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass
from heapq import heappop, heappush
from itertools import accumulate, compress, repeat
from pathlib import Path

import hiredis
import numpy as np
from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily
from pydantic import BaseModel, ConfigDict, Field

from cachetuner.errors import ConfigError
from cachetuner.live import sampling
from cachetuner.live.resp import RespConnection
from cachetuner.live.stack import SCRAPE_INTERVAL_S, load_state, register_target
from cachetuner.metrics import LATENCY_BUCKETS_S, histogram_quantile
from cachetuner.traces.trace import Op, Trace

#: Redis key name of trace key id ``i`` is ``KEY_PREFIX + str(i)`` (the traces' key_bytes assume it).
KEY_PREFIX = "ct:"
#: Traces up to this many requests are converted to Python lists for the hot loop.
LIST_MAX_REQUESTS = 3_000_000


class ReplayOptions(BaseModel):
    """How to replay. Pacing: ``rate`` (requests/s), else ``speedup`` over trace timestamps, else flat out."""

    model_config = ConfigDict(extra="forbid")

    rate: float | None = Field(None, gt=0, description="fixed request rate (req/s); request i is due at i/rate")
    speedup: float | None = Field(None, gt=0, description="replay trace timestamps this many times faster")
    duration_s: float = Field(600.0, gt=0, description="stop after this many wall seconds")
    max_requests: int | None = Field(None, ge=1, description="stop after this many requests")
    start: int = Field(0, ge=0, description="first trace request to replay")
    loop: bool = Field(False, description="wrap around at the end of the trace (bounded by duration/max_requests)")
    pipeline: int = Field(64, ge=1, le=10_000, description="commands per pipelined round trip")
    exact_order: bool = Field(
        False,
        description="send requests in exact trace order: cut a batch at a repeated key instead of deferring it "
        "(fidelity runs; slower on traces with runs of the same key)",
    )
    inflight: int = Field(
        1, ge=1, le=4,
        description="batches on the wire at once; >1 overlaps client and server but defers every key of the "
        "batches in flight, which costs more than it gains on skewed traces (web07: 53k -> 30k req/s)",
    )  # fmt: skip
    overlap: bool = Field(
        True,
        description="flat out with inflight 1: build the next batch while the current one is on the wire "
        "(batches then hold `pipeline` commands on average, not exactly)",
    )
    metrics_port: int | None = Field(0, ge=0, description="prometheus_client port on 127.0.0.1; 0 = free port; None = off")
    sample_rate: float = Field(sampling.DEFAULT_SAMPLE_RATE, ge=0, le=1, description="share of keys published to the stream")
    stream_prefix: str = Field("cachetuner:", description="the sampled-request stream is {prefix}sampled")
    stream_maxlen: int = Field(sampling.DEFAULT_MAXLEN, ge=1)
    miss_latency_ms: float = Field(900.0, ge=0, description="median simulated backend call on a miss")
    miss_sigma: float = Field(0.6, ge=0, description="lognormal sigma of the backend call")
    stack_dir: str | None = Field(None, description="register the metrics port in this stack's file_sd folder")
    scrape_wait_s: float = Field(
        20.0, ge=0, description="with stack_dir: wait up to this long for Prometheus's first scrape before sending"
    )
    linger_s: float = Field(2.5 * SCRAPE_INTERVAL_S, ge=0, description="keep /metrics up this long after the end")
    record_send_times: bool = Field(False, description="keep each request's wall-clock send time (fidelity runs)")
    seed: int = 0

    def check(self) -> None:
        if self.rate is not None and self.speedup is not None:
            raise ConfigError("replay: give --rate or --speedup, not both")


@dataclass
class ReplayResult:
    """What one replay did, counted on the client side."""

    requests: int = 0
    gets: int = 0
    hits: int = 0
    misses: int = 0
    sets: int = 0          # explicit sets + read-through fills
    fills: int = 0
    deletes: int = 0
    rejected_writes: int = 0
    errors: int = 0
    commands: int = 0      # commands sent to Redis (incl. fills and stream XADDs)
    round_trips: int = 0
    elapsed_s: float = 0.0
    requests_per_s: float = 0.0
    commands_per_s: float = 0.0
    latency_p50_ms: float = 0.0
    latency_p95_ms: float = 0.0
    latency_p99_ms: float = 0.0
    next_index: int = 0    # trace index after the last replayed request
    stopped_by: str = ""
    metrics_port: int | None = None
    wall_start: float = 0.0  # Unix time the first batch was sent
    wall_end: float = 0.0
    send_times: np.ndarray | None = None  # per trace index, Unix send time (record_send_times; NaN = not sent)

    @property
    def hit_ratio(self) -> float:
        return self.hits / self.gets if self.gets else 0.0

    def to_dict(self) -> dict:
        d = asdict(self)
        d.pop("send_times")
        return {**d, "hit_ratio": self.hit_ratio}


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

    def serve(self, port: int) -> tuple[object, int]:
        server, _thread = start_http_server(port, addr="127.0.0.1", registry=self.registry)
        return server, int(server.server_port)


class _Encoder:
    """Pre-encoded commands per key and value size (the hot loop only joins bytes)."""

    def __init__(self, n_keys: int) -> None:
        self._get: list[bytes | None] = [None] * n_keys
        self._name: list[bytes | None] = [None] * n_keys
        self._values: dict[int, bytes] = {}

    def name(self, k: int) -> bytes:
        b = self._name[k]
        if b is None:
            kn = b"%s%d" % (KEY_PREFIX.encode(), k)
            b = self._name[k] = b"$%d\r\n%s\r\n" % (len(kn), kn)
        return b

    @property
    def get_table(self) -> list[bytes | None]:
        """The GET cache itself (the hot loop reads it inline and calls :meth:`get` on a None)."""
        return self._get

    def get(self, k: int) -> bytes:
        b = self._get[k]
        if b is None:
            b = self._get[k] = b"*2\r\n$3\r\nGET\r\n" + self.name(k)
        return b

    def set(self, k: int, size: int, ttl_s: float) -> bytes:
        v = self._values.get(size)
        if v is None:
            v = self._values[size] = b"$%d\r\n%s\r\n" % (size, b"x" * size)
        if ttl_s > 0:
            ms = b"%d" % max(1, round(ttl_s * 1000))
            return b"*5\r\n$3\r\nSET\r\n" + self.name(k) + v + b"$2\r\nPX\r\n$%d\r\n%s\r\n" % (len(ms), ms)
        return b"*3\r\n$3\r\nSET\r\n" + self.name(k) + v

    def delete(self, k: int) -> bytes:
        return b"*2\r\n$3\r\nDEL\r\n" + self.name(k)


def _wait_scraped(stack_dir: str, port: int, timeout_s: float) -> bool:
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


def _is_oom(reply: object) -> bool:
    return isinstance(reply, hiredis.ReplyError) and str(reply).startswith("OOM")


def replay(
    trace: Trace,
    redis_url: str,
    options: ReplayOptions | None = None,
    *,
    metrics: ReplayMetrics | None = None,
    stop: threading.Event | None = None,
    progress: Callable[[int], None] | None = None,
) -> ReplayResult:
    """Replay ``trace`` into ``redis_url``; returns client-side counts. Stops by itself (end, count, time, ``stop``)."""
    opt = options or ReplayOptions()
    opt.check()
    n = len(trace)
    if n == 0:
        raise ConfigError(f"replay: trace {trace.name} has no requests")
    if opt.start >= n:
        raise ConfigError(f"replay: --start {opt.start} is past the end of {trace.name} ({n} requests)")
    limit = opt.max_requests if opt.max_requests is not None else (None if opt.loop else n - opt.start)
    metrics = metrics or ReplayMetrics()
    server, port, target = None, None, None
    if opt.metrics_port is not None:
        server, port = metrics.serve(opt.metrics_port)
        if opt.stack_dir:
            target = register_target(opt.stack_dir, f"replay-{os.getpid()}-{port}", port)
            _wait_scraped(opt.stack_dir, port, opt.scrape_wait_s)

    # Python lists index ~5x faster than numpy arrays in the per-request loop (memory: ~4 x 36 B a request).
    as_list = n <= LIST_MAX_REQUESTS
    keys = trace.keys.tolist() if as_list else trace.keys
    sizes = trace.sizes.tolist() if as_list else trace.sizes
    ops = trace.ops.tolist() if as_list else trace.ops
    ttls = trace.ttls.tolist() if as_list else trace.ttls
    ts = trace.timestamps
    read_only = trace.read_only
    enc = _Encoder(trace.n_keys)
    enc_get, enc_set = enc.get, enc.set
    sampled = sampling.sampled_mask(trace.keys, opt.sample_rate).tolist() if opt.sample_rate > 0 else None
    exact_order = opt.exact_order
    all_gets = bool(read_only and not np.any(trace.ops != Op.GET))  # read-through GETs only: the fast paths
    skey = sampling.stream_key(opt.stream_prefix).encode()
    xadd_head = b"$4\r\nXADD\r\n$%d\r\n%s\r\n$6\r\nMAXLEN\r\n$1\r\n~\r\n" % (len(skey), skey)
    xadd_tail = b"$%d\r\n%d\r\n$1\r\n*\r\n" % (len(str(opt.stream_maxlen)), opt.stream_maxlen)
    rate_field = repr(float(opt.sample_rate)).encode()
    rng = np.random.default_rng(opt.seed)
    # Backend-call latencies of misses, drawn lognormal a block at a time (one numpy call per 4096 misses).
    backend_block: list[float] = []
    backend_pos = 0

    def backend_latencies(m: int) -> list[float]:
        nonlocal backend_block, backend_pos
        if backend_pos + m > len(backend_block):
            size = max(4096, m)
            draw = miss_median_s * np.exp(opt.miss_sigma * rng.standard_normal(size)) if opt.miss_sigma else np.full(size, miss_median_s)
            backend_block, backend_pos = draw.tolist(), 0
        out = backend_block[backend_pos : backend_pos + m]
        backend_pos += m
        return out

    miss_median_s = opt.miss_latency_ms / 1000.0
    hist = metrics.latency
    counters_add = metrics.counters.add
    uniform_size = int(trace.sizes[0]) if int(trace.sizes.min()) == int(trace.sizes.max()) else None
    get_tbl = enc.get_table  # GET command per key id, filled on first use
    get_op, set_op = int(Op.GET), int(Op.SET)
    res = ReplayResult(metrics_port=port)
    conn = RespConnection(redis_url)
    send_times = np.full(n, np.nan) if opt.record_send_times else None
    res.send_times = send_times
    pending_fills: list[bytes] = []  # read-through SETs of the last batch's misses
    pending_xadds: list[bytes] = []  # sampled-request stream entries of the last batch
    i = opt.start
    done = 0   # requests replayed
    taken = 0  # requests consumed from the trace cursor (replayed or deferred)
    # Requests postponed because their key was already in the batch: a FIFO of trace indices per key,
    # and a heap of (first index, key) over the keys that have one. Taking the smallest heads is taking
    # the deferred requests in trace order, first occurrence of each key, without rescanning every
    # deferred request each batch (hot keys pile up thousands of them on skewed traces).
    dgroups: dict[int, deque[int]] = {}
    dheap: list[tuple[int, int]] = []
    t0 = time.perf_counter()
    res.wall_start = time.time()
    deadline = t0 + opt.duration_s
    ts0 = float(ts[opt.start])
    loop_offset = 0.0
    # Up to `inflight` batches on the wire: batch k+1 may be sent before the replies of batch k are read;
    # it then excludes every key of batch k (their fills are not known yet).
    inflight: deque[tuple[int, int, list[int], float, set[int]]] = deque()
    # Flat out with one batch in flight: build the next batch's requests while Redis answers the current
    # one (client and server then work at the same time). Its size is `pipeline` minus the fills and
    # stream entries of the batch before (the current batch's are not known yet), so a batch holds
    # `pipeline` commands on average rather than exactly. Paced replays build after reading replies.
    overlap = opt.overlap and opt.inflight == 1 and opt.rate is None and opt.speedup is None
    last_pending = 0  # fills + stream entries at the head of the batch sent last

    def xadd(k: int, size: int, op: int, wall: float, ttl: float, hit: int) -> bytes:
        """The sampled-request stream entry of one request (format in :mod:`.sampling`)."""
        body = b"k %d s %d o %d t %.6f ttl %g h %d r %s" % (k, size, op, wall, float(ttl), hit, rate_field)
        fields = body.split(b" ")
        parts = [b"*%d\r\n" % (6 + len(fields)), xadd_head, xadd_tail]
        parts.extend(b"$%d\r\n%s\r\n" % (len(f), f) for f in fields)
        return b"".join(parts)

    def defer(idx: int, k: int) -> None:
        grp = dgroups.get(k)
        if grp is None:
            dgroups[k] = deque((idx,))
            heappush(dheap, (idx, k))
        else:
            grp.append(idx)

    def encode_request(idx: int, k: int) -> bytes:
        op = ops[idx]
        if op == get_op:
            return enc_get(k)
        if op == set_op:
            return enc_set(k, sizes[idx], ttls[idx])
        return enc.delete(k)

    def process(n_cmds: int, fills_in_pending: int, batch_idx: list[int], t_send: float) -> None:
        """Read one batch's replies and account them (fills and stream entries go to the next batch)."""
        nonlocal done
        replies = conn.recv(n_cmds)
        rtt = time.perf_counter() - t_send
        n_pending = n_cmds - len(batch_idx)
        c_get = c_set = c_del = c_hit = c_miss = c_fill = c_rej = c_err = 0
        b_req = b_hit = 0
        for r in replies[:fills_in_pending]:
            if isinstance(r, hiredis.ReplyError):
                if _is_oom(r):
                    c_rej += 1
                else:
                    c_err += 1
        n_miss = 0
        if all_gets:
            # Fast path (read-only GET trace): the common replay. The per-reply work runs
            # in C: misses are found with list.index(None), hits counted with isinstance over the batch;
            # only misses (and errors, rare) are touched from Python.
            reps = replies[n_pending:] if n_pending else replies
            n_req = len(batch_idx)
            b_req = uniform_size * n_req if uniform_size is not None else sum(map(sizes.__getitem__, batch_idx))
            b_hit = b_req
            n_miss = reps.count(None)
            n_hit = sum(map(isinstance, reps, repeat(bytes)))
            pos = -1
            for _ in range(n_miss):
                pos = reps.index(None, pos + 1)
                idx = batch_idx[pos]
                sz = sizes[idx]
                b_hit -= sz
                pending_fills.append(enc_set(keys[idx], sz, ttls[idx]))
            n_err = n_req - n_miss - n_hit
            if n_err:
                for idx, r in zip(batch_idx, reps, strict=True):
                    if r is not None and r.__class__ is not bytes:
                        b_hit -= sizes[idx]
            c_get = n_req
            c_miss = c_fill = n_miss
            c_err += n_err
            c_hit = n_hit
            if sampled is not None:
                wall = time.time()
                for pos in compress(range(n_req), map(sampled.__getitem__, batch_idx)):
                    idx = batch_idx[pos]
                    hit = 1 if reps[pos].__class__ is bytes else 0
                    pending_xadds.append(xadd(keys[idx], sizes[idx], get_op, wall, ttls[idx], hit))
        else:
            wall = time.time()
            for pos, idx in enumerate(batch_idx):
                r = replies[n_pending + pos]
                op = ops[idx]
                k = keys[idx]
                hit = 0
                if op == get_op:
                    c_get += 1
                    sz = sizes[idx]
                    b_req += sz
                    if isinstance(r, hiredis.ReplyError):
                        c_err += 1
                    elif r is None:
                        c_miss += 1
                        n_miss += 1
                        if read_only:
                            pending_fills.append(enc_set(k, sz, ttls[idx]))
                            c_fill += 1
                    else:
                        c_hit += 1
                        b_hit += sz
                        hit = 1
                elif op == set_op:
                    c_set += 1
                    if isinstance(r, hiredis.ReplyError):
                        if _is_oom(r):
                            c_rej += 1
                        else:
                            c_err += 1
                else:
                    c_del += 1
                    if isinstance(r, hiredis.ReplyError):
                        c_err += 1
                if sampled is not None and sampled[idx]:
                    pending_xadds.append(xadd(k, sizes[idx], op, wall, ttls[idx], hit))
        # Latency: every request of the batch waited one round trip; misses add the backend call + fill.
        n_req = len(batch_idx)
        if n_req - n_miss:
            hist.observe_n(rtt, n_req - n_miss)
        if n_miss:
            two_rtt = 2 * rtt
            hist.observe_many([two_rtt + b for b in backend_latencies(n_miss)])
        done += n_req
        if progress is not None:
            progress(n_req)
        counters_add(c_get, c_set, c_del, c_hit, c_miss, c_fill, c_rej, c_err, b_req, b_hit)  # one call a batch
        res.gets += c_get
        res.hits += c_hit
        res.misses += c_miss
        res.fills += c_fill
        res.sets += c_set + c_fill
        res.deletes += c_del
        res.rejected_writes += c_rej
        res.errors += c_err

    try:
        while True:
            if limit is not None and taken >= limit and not dheap:
                res.stopped_by = "max_requests" if opt.max_requests is not None else "end_of_trace"
                break
            if stop is not None and stop.is_set():
                res.stopped_by = "stop"
                break
            now = time.perf_counter()
            if now >= deadline:
                res.stopped_by = "duration"
                break
            if i >= n and not dheap:
                if not opt.loop:
                    res.stopped_by = "end_of_trace"
                    break
                loop_offset += float(ts[-1] - ts0) + (1.0 / opt.rate if opt.rate else 0.0)
                i = opt.start
            # Pacing: wait until the first request of the batch is due.
            if opt.rate is not None:
                due = t0 + (done + sum(len(b[2]) for b in inflight)) / opt.rate
            elif opt.speedup is not None:
                due = t0 + (float(ts[min(i, n - 1)]) - ts0 + loop_offset) / opt.speedup
            else:
                due = now
            if due > now:
                if due > deadline:
                    res.stopped_by = "duration"
                    break
                if inflight:
                    process(*inflight.popleft()[:4])
                    continue
                time.sleep(due - now)

            # Build one batch: pending fills/XADDs first, then up to `pipeline` requests with distinct keys
            # that are not in the batch still in flight.
            if overlap:
                # Requests first, while the previous batch is still on the wire (its keys need no
                # exclusion: its replies are read, and its fills put ahead, before this batch is sent).
                cmds = []
                busy = None
                room = max(1, opt.pipeline - last_pending)
            else:
                fills_in_pending = len(pending_fills)
                cmds = pending_fills + pending_xadds
                pending_fills = []
                pending_xadds = []
                busy = (inflight[0][4] if len(inflight) == 1 else set().union(*(b[4] for b in inflight))) if inflight else None
                room = max(1, opt.pipeline - len(cmds))
            seen: set[int] = set()
            batch_idx: list[int] = []
            cmds_append, bidx_append, seen_add = cmds.append, batch_idx.append, seen.add
            # Earlier-deferred requests first (trace order), then new ones from the cursor; a request
            # whose key is already in this batch (or in flight) is deferred to a later one. (exact_order
            # never defers.)
            cnt = 0
            if dheap:
                aside: list[tuple[int, int]] = []
                while dheap and cnt < room:
                    idx, k = heappop(dheap)
                    if busy is not None and k in busy:
                        aside.append((idx, k))
                        continue
                    grp = dgroups[k]
                    grp.popleft()
                    seen_add(k)
                    cmds_append(encode_request(idx, k))
                    bidx_append(idx)
                    cnt += 1
                    if grp:
                        aside.append((grp[0], k))  # its next request waits for a later batch
                    else:
                        del dgroups[k]
                for e in aside:
                    heappush(dheap, e)
            if cnt < room:
                # New requests [i, hi): at most 8 x room scanned per batch, never past `limit`.
                hi = min(n, i + 8 * room)
                if limit is not None:
                    hi = min(hi, i + limit - taken)
                end = hi
                if all_gets and busy is None:
                    for jj in range(i, hi):
                        k = keys[jj]
                        if k in seen:
                            if exact_order:  # cut the batch here; this request opens the next one
                                end = jj
                                break
                            defer(jj, k)
                            continue
                        seen_add(k)
                        c = get_tbl[k]
                        cmds_append(c if c is not None else enc_get(k))
                        bidx_append(jj)
                        cnt += 1
                        if cnt >= room:
                            end = jj + 1
                            break
                else:
                    for jj in range(i, hi):
                        k = keys[jj]
                        if k in seen or (busy is not None and k in busy):
                            if exact_order:
                                end = jj
                                break
                            defer(jj, k)
                            continue
                        seen_add(k)
                        cmds_append(encode_request(jj, k))
                        bidx_append(jj)
                        cnt += 1
                        if cnt >= room:
                            end = jj + 1
                            break
                taken += end - i
                i = end
            if overlap:
                if inflight:
                    process(*inflight.popleft()[:4])
                fills_in_pending = len(pending_fills)
                last_pending = fills_in_pending + len(pending_xadds)
                if last_pending:
                    cmds = pending_fills + pending_xadds + cmds
                    pending_fills = []
                    pending_xadds = []
            if cmds:
                t_send = time.perf_counter()
                if send_times is not None and batch_idx:
                    send_times[batch_idx] = time.time()
                conn.send(cmds)
                res.round_trips += 1
                res.commands += len(cmds)
                inflight.append((len(cmds), fills_in_pending, batch_idx, t_send, seen))
            if not overlap and inflight and (len(inflight) >= opt.inflight or not batch_idx):
                process(*inflight.popleft()[:4])
        while inflight:
            process(*inflight.popleft()[:4])
        # Flush the last fills so Redis ends in the state a sequential client would leave.
        if pending_fills or pending_xadds:
            replies = conn.roundtrip(pending_fills + pending_xadds)
            res.commands += len(pending_fills) + len(pending_xadds)
            res.round_trips += 1
            for r in replies[: len(pending_fills)]:
                if _is_oom(r):
                    res.rejected_writes += 1
                    metrics.counters.rejected += 1
                elif isinstance(r, hiredis.ReplyError):
                    res.errors += 1
                    metrics.counters.errors += 1
    finally:
        conn.close()
        res.elapsed_s = time.perf_counter() - t0
        res.wall_end = time.time()
        res.requests = res.gets + res.sets - res.fills + res.deletes
        res.next_index = i
        if res.elapsed_s > 0:
            res.requests_per_s = res.requests / res.elapsed_s
            res.commands_per_s = res.commands / res.elapsed_s
        counts = hist.snapshot()
        for q, attr in ((0.5, "latency_p50_ms"), (0.95, "latency_p95_ms"), (0.99, "latency_p99_ms")):
            v = histogram_quantile(q, counts)
            setattr(res, attr, 0.0 if np.isnan(v) else v * 1000.0)
        if server is not None:
            if target is not None and opt.linger_s > 0:
                time.sleep(opt.linger_s)  # let Prometheus scrape the final counters
            if target is not None:
                Path(target).unlink(missing_ok=True)
            server.shutdown()  # type: ignore[attr-defined]
            server.server_close()  # type: ignore[attr-defined]
    return res
