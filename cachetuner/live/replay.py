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

Parts: :class:`Replayer` (this module) runs the loop and keeps batches in flight; :mod:`.replay_schedule`
paces batches and composes them (deferral, exact order); :mod:`.replay_encoding` builds the RESP
commands; :mod:`.replay_accounting` turns replies into counts and fills; :mod:`.replay_metrics` holds the
client-side Prometheus metrics
(``cachetuner_request_latency_seconds``, ``cachetuner_requests_total{op}``, ``cachetuner_hits_total``, ...)
and serves them. :func:`replay` is ``Replayer(...).run()``.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from dataclasses import replace as dc_replace
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from cachetuner.errors import ConfigError
from cachetuner.live import sampling
from cachetuner.live.replay_accounting import ReplyAccountant, write_errors
from cachetuner.live.replay_encoding import KEY_PREFIX, CommandEncoder, StreamEncoder
from cachetuner.live.replay_metrics import (
    BackendLatency,
    BatchCounters,
    BatchHistogram,
    MetricsEndpoint,
    ReplayMetrics,
)
from cachetuner.live.replay_schedule import BatchBuilder, Pacer
from cachetuner.live.replay_tenants import TenantAccountant
from cachetuner.live.resp import RespConnection
from cachetuner.live.stack import SCRAPE_INTERVAL_S
from cachetuner.tenants import key_names
from cachetuner.traces.trace import Op, Trace
from cachetuner.ttl import KeySpace, apply_ttl_policy, keyspace_for

__all__ = [
    "KEY_PREFIX", "LIST_MAX_REQUESTS", "BatchCounters", "BatchHistogram", "ReplayMetrics", "ReplayOptions",
    "ReplayResult", "Replayer", "replay", "replay_options", "replay_pacing",
]  # fmt: skip

#: Traces up to this many requests are converted to Python lists for the hot loop.
LIST_MAX_REQUESTS = 3_000_000


class ReplayOptions(BaseModel):
    """How to replay. Pacing: ``rate`` (requests/s), else ``speedup`` over trace timestamps, else flat out."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

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
    start_on_scrape: bool = Field(
        False, description="with stack_dir: send the first request right after a Prometheus scrape of /metrics, so that "
        "interval boundaries that are whole scrape intervals apart fall just after scrapes (cachetuner.live.served)",
    )  # fmt: skip
    ttl_policy: str | None = Field(
        None, description="client-side TTL policy (cachetuner.ttl spec, e.g. fixed:300, hotness); None = the trace's TTLs"
    )
    no_ttl_classes: list[str] = Field(
        default_factory=list, description="with ttl_policy: tenants of these QoS classes write without TTL"
    )
    seed: int = 0

    def check(self) -> None:
        if self.rate is not None and self.speedup is not None:
            raise ConfigError("replay: give --rate or --speedup, not both")


#: ReplayOptions fields whose command-line option is not ``--field-name``
OPTION_NAMES: dict[str, str] = {"duration_s": "--duration"}


def replay_pacing(rate: float | None, speedup: float | None, rate_profile: str | None) -> tuple[float | None, float | None]:
    """(rate, speedup) for :class:`ReplayOptions` from ``replay``'s options. ``--rate`` alone is a fixed pace; with
    ``--rate-profile`` it is the profile's mean, the profile has already shaped the trace's timestamps, and the
    replay follows them (``--speedup`` times faster, default 1): a fixed pace would flatten the bursts and lulls."""
    if rate_profile is None:
        return rate, speedup
    return None, speedup or 1.0


def replay_options(renames: Mapping[str, str] | None = None, **values: Any) -> ReplayOptions:
    """:class:`ReplayOptions` from command-line values, checked before anything starts: a bad value is one
    :class:`ConfigError` line naming the option the user typed (``--duration: Input should be greater than 0,
    got 0.0``), not pydantic's multi-line report of field ``duration_s``. ``renames`` maps further fields to
    the option of the calling command (``bench replay`` takes ``max_requests`` as ``--requests``)."""
    names = {**OPTION_NAMES, **(renames or {})}
    try:
        return ReplayOptions(**values)
    except ValidationError as e:
        first = e.errors()[0]
        field = str(first["loc"][0]) if first["loc"] else ""
        option = names.get(field, "--" + field.replace("_", "-")) if field else "replay options"
        got = f", got {first['input']!r}" if "input" in first and not isinstance(first["input"], dict) else ""
        raise ConfigError(f"{option}: {str(first['msg']).removeprefix('Value error, ')}{got}") from None


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
    tenants: dict[str, dict[str, int]] | None = None  # multi-tenant traces: per-tenant counts
    start_on_scrape: bool = False  # the first request went out right after a scrape (ReplayOptions.start_on_scrape)

    @property
    def hit_ratio(self) -> float:
        return self.hits / self.gets if self.gets else 0.0

    def to_dict(self) -> dict:
        d = asdict(self)
        d.pop("send_times")
        return {**d, "hit_ratio": self.hit_ratio}



#: A batch on the wire: (commands sent, fills at its head, trace indices of its requests, send time, their keys).
_InFlight = tuple[int, int, list[int], float, set[int]]


class Replayer:
    """One replay of ``trace`` into ``redis_url`` (use once: :meth:`run`).

    Owns the connection and the batches in flight; pacing and batch composition are
    :class:`~.replay_schedule.Pacer` and :class:`~.replay_schedule.BatchBuilder`, commands come from
    :mod:`.replay_encoding`, replies are counted by :class:`~.replay_accounting.ReplyAccountant` and the
    counts go to :class:`~.replay_metrics.ReplayMetrics` and the result once a batch.
    """

    def __init__(
        self,
        trace: Trace,
        redis_url: str,
        options: ReplayOptions | None = None,
        *,
        metrics: ReplayMetrics | None = None,
        stop: threading.Event | None = None,
        progress: Callable[[int], None] | None = None,
        keyspace: KeySpace | None = None,
    ) -> None:
        opt = options or ReplayOptions()
        opt.check()
        n = len(trace)
        if n == 0:
            raise ConfigError(f"replay: trace {trace.name} has no requests")
        if opt.start >= n:
            raise ConfigError(f"replay: --start {opt.start} is past the end of {trace.name} ({n} requests)")
        if opt.ttl_policy is not None:
            # the policy's TTLs are in trace seconds: --speedup compresses them like the trace's clock
            trace = apply_ttl_policy(trace, opt.ttl_policy, keyspace, no_ttl_classes=tuple(opt.no_ttl_classes))
            if opt.speedup:
                trace = dc_replace(trace, ttls=trace.ttls / opt.speedup)
        self.trace, self.redis_url, self.opt = trace, redis_url, opt
        self.keyspace = keyspace  # groups, tenants and source updates (None: keyspace_for(trace))
        self.limit = opt.max_requests if opt.max_requests is not None else (None if opt.loop else n - opt.start)
        self.metrics = metrics or ReplayMetrics()
        self.stop, self.progress = stop, progress

    # ------------------------------------------------------------------ setup
    def _prepare(self) -> None:
        """Trace columns for the hot loop, the encoders, the batch builder and the reply accountant."""
        trace, opt = self.trace, self.opt
        n = len(trace)
        # Python lists index ~5x faster than numpy arrays in the per-request loop (memory: ~4 x 36 B a request).
        as_list = n <= LIST_MAX_REQUESTS
        keys = trace.keys.tolist() if as_list else trace.keys
        sizes = trace.sizes.tolist() if as_list else trace.sizes
        ops = trace.ops.tolist() if as_list else trace.ops
        ttls = trace.ttls.tolist() if as_list else trace.ttls
        tenants = trace.meta.get("tenants") if "key_tenant" in trace.meta else None
        enc = CommandEncoder(trace.n_keys, key_names(trace) if tenants is not None else None)
        all_gets = bool(trace.read_only and not np.any(trace.ops != Op.GET))  # read-through GETs only: the fast paths
        self.builder = BatchBuilder(
            keys, opt.start, self.limit, exact_order=opt.exact_order, all_gets=all_gets,
            get_table=enc.get_table, encode_get=enc.get, encode_request=enc.request_encoder(ops, sizes, ttls),
        )  # fmt: skip
        self.accountant = ReplyAccountant(
            keys, sizes, ops, ttls, read_only=trace.read_only, all_gets=all_gets,
            uniform_size=int(trace.sizes[0]) if int(trace.sizes.min()) == int(trace.sizes.max()) else None,
            sampled=sampling.sampled_mask(trace.keys, opt.sample_rate).tolist() if opt.sample_rate > 0 else None,
            encode_set=enc.set, stream_entry=StreamEncoder(opt.stream_prefix, opt.stream_maxlen, opt.sample_rate).entry,
        )  # fmt: skip
        self.backend = BackendLatency(opt.miss_latency_ms, opt.miss_sigma, opt.seed)
        self.tenant_acc = None
        if tenants is not None:
            counters = self.metrics.tenant_counters(list(tenants))
            ks = self.keyspace if self.keyspace is not None else keyspace_for(trace)
            last_update = ks.last_update(ks.group[trace.keys], trace.timestamps).tolist()
            self.tenant_acc = TenantAccountant(trace.meta["key_tenant"].tolist(), keys, ops, sizes, counters,
                                               trace.timestamps.tolist(), last_update)  # fmt: skip
        self.pending_fills: list[bytes] = []  # read-through SETs of the last batch's misses
        self.pending_xadds: list[bytes] = []  # sampled-request stream entries of the last batch
        self.inflight: deque[_InFlight] = deque()
        self.done = 0  # requests replayed

    # ------------------------------------------------------------------ run
    def run(self) -> ReplayResult:
        """Replay until the end of the trace, ``max_requests``, ``duration_s`` or ``stop``; client-side counts."""
        opt = self.opt
        endpoint = None
        if opt.metrics_port is not None:
            endpoint = MetricsEndpoint(self.metrics, opt.metrics_port, opt.stack_dir, opt.scrape_wait_s)
        self._prepare()
        res = self.res = ReplayResult(metrics_port=endpoint.port if endpoint is not None else None)
        self.conn = RespConnection(self.redis_url)
        self.send_times = res.send_times = np.full(len(self.trace), np.nan) if opt.record_send_times else None
        if opt.start_on_scrape and endpoint is not None and endpoint.target is not None:
            res.start_on_scrape = endpoint.scrapes.wait_next(3 * SCRAPE_INTERVAL_S + 1.0)
        self.t0 = time.perf_counter()
        res.wall_start = time.time()
        self.pacer = Pacer(opt.rate, opt.speedup, self.trace.timestamps, opt.start, self.t0)
        try:
            self._loop()
            self._flush()
        finally:
            self.conn.close()
            self._finish()
            if endpoint is not None:
                endpoint.close(opt.linger_s)
        return res

    def _loop(self) -> None:
        opt, res, builder, pacer, conn = self.opt, self.res, self.builder, self.pacer, self.conn
        stop, send_times, inflight, process = self.stop, self.send_times, self.inflight, self._process
        deadline = self.t0 + opt.duration_s
        # Up to `inflight` batches on the wire: batch k+1 may be sent before the replies of batch k are read;
        # it then excludes every key of batch k (their fills are not known yet).
        # Flat out with one batch in flight: build the next batch's requests while Redis answers the current
        # one (client and server then work at the same time). Its size is `pipeline` minus the fills and
        # stream entries of the batch before (the current batch's are not known yet), so a batch holds
        # `pipeline` commands on average rather than exactly. Paced replays build after reading replies.
        overlap = opt.overlap and opt.inflight == 1 and pacer.flat_out
        last_pending = 0  # fills + stream entries at the head of the batch sent last
        fills_in_pending = 0
        while True:
            if builder.limit_reached():
                res.stopped_by = "max_requests" if opt.max_requests is not None else "end_of_trace"
                break
            if stop is not None and stop.is_set():
                res.stopped_by = "stop"
                break
            now = time.perf_counter()
            if now >= deadline:
                res.stopped_by = "duration"
                break
            if builder.at_end():
                if not opt.loop:
                    res.stopped_by = "end_of_trace"
                    break
                pacer.wrap()
                builder.rewind()
            # Pacing: wait until the first request of the batch is due.
            due = now if pacer.flat_out else pacer.due(self.done + sum(len(b[2]) for b in inflight), builder.i)
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
                cmds: list[bytes] = []
                busy = None
                room = max(1, opt.pipeline - last_pending)
            else:
                fills_in_pending = len(self.pending_fills)
                cmds = self.pending_fills + self.pending_xadds
                self.pending_fills, self.pending_xadds = [], []
                busy = (inflight[0][4] if len(inflight) == 1 else set().union(*(b[4] for b in inflight))) if inflight else None
                room = max(1, opt.pipeline - len(cmds))
            batch_idx, seen = builder.fill(cmds, room, busy)
            if overlap:
                if inflight:
                    process(*inflight.popleft()[:4])
                fills_in_pending = len(self.pending_fills)
                last_pending = fills_in_pending + len(self.pending_xadds)
                if last_pending:
                    cmds = self.pending_fills + self.pending_xadds + cmds
                    self.pending_fills, self.pending_xadds = [], []
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

    # ------------------------------------------------------------------ replies
    def _process(self, n_cmds: int, fills_in_pending: int, batch_idx: list[int], t_send: float) -> None:
        """Read one batch's replies and account them (fills and stream entries go to the next batch)."""
        replies = self.conn.recv(n_cmds)
        rtt = time.perf_counter() - t_send
        n_pending = n_cmds - len(batch_idx)
        c_rej, c_err = write_errors(replies[:fills_in_pending]) if fills_in_pending else (0, 0)
        reps = replies[n_pending:] if n_pending else replies
        c_get, c_set, c_del, c_hit, c_miss, c_fill, rej, err, b_req, b_hit = self.accountant.account(
            reps, batch_idx, self.pending_fills, self.pending_xadds
        )
        c_rej += rej
        c_err += err
        # Latency: every request of the batch waited one round trip; misses add the backend call + fill.
        hist = self.metrics.latency
        n_req = len(batch_idx)
        if n_req - c_miss:
            hist.observe_n(rtt, n_req - c_miss)
        draws = self.backend.draw(c_miss) if c_miss else []
        if c_miss:
            two_rtt = 2 * rtt
            hist.observe_many([two_rtt + b for b in draws])
        if self.tenant_acc is not None:
            self.tenant_acc.account(reps, batch_idx, rtt, draws)
        self.done += n_req
        if self.progress is not None:
            self.progress(n_req)
        self.metrics.counters.add(c_get, c_set, c_del, c_hit, c_miss, c_fill, c_rej, c_err, b_req, b_hit)  # one call a batch
        res = self.res
        res.gets += c_get
        res.hits += c_hit
        res.misses += c_miss
        res.fills += c_fill
        res.sets += c_set + c_fill
        res.deletes += c_del
        res.rejected_writes += c_rej
        res.errors += c_err

    # ------------------------------------------------------------------ end
    def _flush(self) -> None:
        """Send the last fills so Redis ends in the state a sequential client would leave."""
        fills, xadds, res, counters = self.pending_fills, self.pending_xadds, self.res, self.metrics.counters
        if not (fills or xadds):
            return
        replies = self.conn.roundtrip(fills + xadds)
        res.commands += len(fills) + len(xadds)
        res.round_trips += 1
        rejected, errors = write_errors(replies[: len(fills)])
        res.rejected_writes += rejected
        counters.rejected += rejected
        res.errors += errors
        counters.errors += errors

    def _finish(self) -> None:
        res = self.res
        res.elapsed_s = time.perf_counter() - self.t0
        res.wall_end = time.time()
        res.requests = res.gets + res.sets - res.fills + res.deletes
        res.next_index = self.builder.i
        if res.elapsed_s > 0:
            res.requests_per_s = res.requests / res.elapsed_s
            res.commands_per_s = res.commands / res.elapsed_s
        hist = self.metrics.latency
        res.latency_p50_ms, res.latency_p95_ms, res.latency_p99_ms = (hist.quantile_ms(q) for q in (0.5, 0.95, 0.99))
        if self.tenant_acc is not None:
            res.tenants = self.tenant_acc.counters.as_dict()


def replay(
    trace: Trace,
    redis_url: str,
    options: ReplayOptions | None = None,
    *,
    metrics: ReplayMetrics | None = None,
    stop: threading.Event | None = None,
    progress: Callable[[int], None] | None = None,
    keyspace: KeySpace | None = None,
) -> ReplayResult:
    """Replay ``trace`` into ``redis_url``; returns client-side counts. Stops by itself (end, count, time, ``stop``)."""
    return Replayer(trace, redis_url, options, metrics=metrics, stop=stop, progress=progress, keyspace=keyspace).run()
