"""``TieredCacheSim``: a Redis 7 instance (plus optional second tier) driven interval by interval.

The env, the daemon's what-if checks and the A/B harness call :meth:`TieredCacheSim.run` once per
tuning interval and :meth:`TieredCacheSim.apply_config` between intervals, exactly as they would
drive a live Redis through the backend protocol. State persists across calls; :meth:`clone` forks
it (hindsight oracles, one-step lookahead).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from cachetuner.config import RedisConfig
from cachetuner.errors import BackendError, ConfigError
from cachetuner.metrics import LATENCY_BUCKETS_S, MetricsSnapshot, histogram_quantile
from cachetuner.resources import format_bytes, memory_available
from cachetuner.sim import kernel as K
from cachetuner.sim.params import MAX_BYTES, REDIS_INT_MAX, SimParams
from cachetuner.sim.policies import SCORE_EXACT_LRU, get_policy
from cachetuner.sim.slots import (
    C_BACKEND,
    C_BHIT,
    C_BREQ,
    C_CMDS,
    C_EVICT,
    C_EXPIRED,
    C_GETS,
    C_HITS,
    C_L2HITS,
    C_MISSES,
    C_RECONN,
    C_REJECT,
    C_REQ,
    C_SETS,
    FC_LATSUM_MS,
    I_DATA,
    I_HEAD,
    I_L2USED,
    I_LISTED,
    I_NCONN,
    I_NRES,
    I_PEAK,
    I_TAIL,
    KV_DPOS,
    KV_LRU,
    KV_NEXT,
    KV_PREV,
    P_AE_CATCHUP,
    P_AE_KEYS,
    P_AE_LOOPS,
    P_AE_ON,
    P_BASE,
    P_CLIENT_BUF,
    P_DICT_SAMPLE,
    P_FLAT,
    P_KEYS,
    P_L2_CAP,
    P_L2_FIFO,
    P_L2_ON,
    P_LATENCY,
    P_LFU_DECAY,
    P_LFU_LOG,
    P_LGQ,
    P_MAXMEM,
    P_NCLIENTS,
    P_READ_ONLY,
    P_REDIS_ORDER,
    P_SAMPLES,
    P_SCORE,
    Q_AE_PERIOD,
    Q_AE_STALE,
    Q_JITTER,
    Q_L1_MS,
    Q_L2_MS,
    Q_MISS_COST,
    Q_MISS_MS,
    Q_MISS_SIGMA,
    Q_NET_MS,
    Q_RECONN_MS,
    Q_TIMEOUT,
)
from cachetuner.sim.state import (
    KState,
    copy_state,
    kernel_array,
    lognormal_table,
    new_state,
    state_bytes_per_key,
    to_kernel,
)
from cachetuner.traces.trace import Trace

#: Share of the memory available that one simulated cache's state may take (the rest: the trace, the curves'
#: miniature caches, a hindsight controller's fork of the state, the process).
SIM_MEMORY_SHARE = 0.8
#: States below this size are never checked (they cannot be what exhausts a machine; no /proc read per fork).
SIM_CHECK_FROM_BYTES = 256 << 20


def ensure_state_fits(n_keys: int, available: int | None = None) -> None:
    """Stop, with one line naming ``--limit``, before allocating a simulator state for ``n_keys`` key ids that would
    not fit in the memory available (``available``: bytes, default :func:`cachetuner.resources.memory_available`).
    Why: the state is ~150 bytes per distinct key and is filled as it is allocated, so a trace with tens of
    millions of distinct keys would otherwise be ended by the kernel's OOM killer, without a word, mid-evaluation."""
    need = max(int(n_keys), 1) * state_bytes_per_key()
    if need < SIM_CHECK_FROM_BYTES:
        return
    avail = memory_available() if available is None else available
    if avail is not None and need > avail * SIM_MEMORY_SHARE:
        raise BackendError(
            f"simulating {n_keys:,} distinct keys needs ~{format_bytes(need)} for one simulated cache, more than "
            f"{SIM_MEMORY_SHARE:.0%} of the {format_bytes(avail)} of memory available here; replay fewer requests "
            f"(--limit) or run where there is more memory"
        )


def check_sim_config(config: RedisConfig) -> None:
    """One-line :class:`ConfigError` naming the field when ``config`` holds a value the simulator cannot take.

    Why: :class:`RedisConfig` bounds ``maxmemory``, ``lfu_decay_time`` and ``timeout`` from below only, and a value
    past int64 would end in an OverflowError traceback when written to the kernel's parameter array. The limits are
    Redis's own for the two ints (INT_MAX) and :data:`~cachetuner.sim.params.MAX_BYTES` for maxmemory.
    """
    if config.maxmemory <= MAX_BYTES and config.lfu_decay_time <= REDIS_INT_MAX and config.timeout <= REDIS_INT_MAX:
        return  # the common case, cheap: apply_config runs for every what-if mini cache
    if config.maxmemory > MAX_BYTES:
        raise ConfigError(f"maxmemory={config.maxmemory:,}: more than the simulator's limit of 2^60 bytes (1 EiB)")
    name, value = ("lfu_decay_time", config.lfu_decay_time) if config.lfu_decay_time > REDIS_INT_MAX else ("timeout", config.timeout)
    raise ConfigError(f"{name}={value:,}: more than Redis accepts ({REDIS_INT_MAX:,}, INT_MAX)")


class SimCounts(NamedTuple):
    """The request counters of one interval, without the rest of a :class:`MetricsSnapshot`."""

    requests: int
    gets: int
    hits: int
    byte_requests: int
    byte_hits: int
    sets: int
    evictions: int

    @property
    def hit_ratio(self) -> float:
        return self.hits / self.gets if self.gets else 0.0


class TieredCacheSim:
    """Redis 7 eviction, expiry, memory accounting and clients, compiled with numba.

    Args:
        n_keys: size of the key-id space (``trace.n_keys``); key ids must lie in ``0..n_keys-1``.
        config: the Redis knobs (any ``maxmemory-policy`` of Redis 7, or the simulator-only
            ``exact-lru``).
        params: everything else (memory model, latency, cost, L2, clients, active expiry).
        seed: seeds the simulator's own random stream (eviction sampling, LFU increments, client
            choice, latency draws); equal seeds give identical results.
        key_bytes: key-name length per key id (``trace.key_bytes``); ``None`` uses
            ``params.memory.default_key_bytes`` for every key.
    """

    def __init__(
        self,
        n_keys: int,
        config: RedisConfig | None = None,
        params: SimParams | None = None,
        seed: int = 0,
        key_bytes: np.ndarray | None = None,
    ) -> None:
        self.n_keys = int(n_keys)
        self.params = params or SimParams()
        self.seed = int(seed)
        if key_bytes is None:
            key_bytes = np.full(max(self.n_keys, 1), self.params.memory.default_key_bytes, dtype=np.int64)
        elif len(key_bytes) != self.n_keys:
            raise ConfigError(f"key_bytes has {len(key_bytes)} entries but n_keys={self.n_keys}")
        self._key_bytes = np.asarray(key_bytes, dtype=np.int64)
        self._config = config or RedisConfig()
        get_policy(self._config.maxmemory_policy)
        check_sim_config(self._config)
        ensure_state_fits(self.n_keys)
        self._state: KState = self._fresh_state()
        self._kstate = to_kernel(self._state)
        self._set_params(self._config)
        self._sync_exact_list(None, self._config)
        self._mark = self._marks()
        self._last_hist = np.zeros_like(self._state.hist)

    @classmethod
    def for_trace(
        cls, trace: Trace, config: RedisConfig | None = None, params: SimParams | None = None, seed: int = 0
    ) -> TieredCacheSim:
        """A simulator sized for ``trace``'s key space, charging its key-name lengths."""
        return cls(trace.n_keys, config, params, seed=seed, key_bytes=trace.key_bytes)

    # ------------------------------------------------------------------ public API
    @property
    def config(self) -> RedisConfig:
        """The configuration in force."""
        return self._config

    def run(
        self,
        trace: Trace,
        start: int = 0,
        stop: int | None = None,
        interval_s: float | None = None,
        *,
        until: float | None = None,
        record: np.ndarray | None = None,
    ) -> MetricsSnapshot:
        """Process requests ``[start, stop)`` of ``trace`` as one interval and report it.

        ``interval_s`` defaults to the time the requests cover (up to the next request when there
        is one). ``until``, if given, lets simulated time run on to that timestamp after the last
        request (active expiry and idle-client closes keep happening). Counters include anything
        that happened since the previous report (e.g. evictions caused by :meth:`apply_config`).
        ``record`` (float64 ``(stop - start, 2)``) receives per-request outcomes (``K.run_requests``).
        """
        start, stop = self._process(trace, start, stop, record)
        if interval_s is None:
            interval_s = self._span(trace, start, stop)
        if until is not None:
            K.advance_to(self._kstate, float(until))
        return self._report(float(interval_s))

    def run_counts(
        self, trace: Trace, start: int = 0, stop: int | None = None, record: np.ndarray | None = None
    ) -> SimCounts:
        """Like :meth:`run`, but return only the request counters (the cheap path).

        For callers that run many small simulations per interval and need hit ratios only (the
        what-if mini caches): it skips building the :class:`MetricsSnapshot` (latency quantiles,
        costs, memory figures), which costs several times the kernel on a few hundred requests.
        The interval still ends here: a following :meth:`run` reports from this point on.
        ``record``: per-request outcomes, as in :meth:`run`.
        """
        self._process(trace, start, stop, record)
        old = self._mark
        self._mark = new = self._marks()
        d = (new["cnt"] - old["cnt"]).tolist()
        self._last_hist = new["hist"] - old["hist"]
        return SimCounts(d[C_REQ], d[C_GETS], d[C_HITS], d[C_BREQ], d[C_BHIT], d[C_SETS], d[C_EVICT])

    def apply_config(self, config: RedisConfig) -> None:
        """CONFIG SET between intervals, with Redis's side effects.

        Shrinking ``maxmemory`` below ``used_memory`` evicts right away (Redis 7 runs
        performEvictions() from the config setter). Switching policy keeps each key's 24-bit
        lru field and reinterprets it: after LRU -> LFU the clock bits read as (minutes, counter)
        pairs whose minutes are far in the past, so decay leaves existing keys cold, as in Redis.
        """
        get_policy(config.maxmemory_policy)
        check_sim_config(config)  # before anything changes: a refused config leaves the cache as it was
        old = self._config
        self._config = config
        self._set_config_params(config)
        self._sync_exact_list(old, config)
        if config.maxmemory and self.used_memory > config.maxmemory:
            K.evict_to_limit(self._kstate)

    def clone(self) -> TieredCacheSim:
        """Independent deep copy: state, random stream, config and pending counters."""
        ensure_state_fits(self.n_keys)
        other = TieredCacheSim.__new__(TieredCacheSim)
        other.n_keys = self.n_keys
        other.params = self.params
        other.seed = self.seed
        other._key_bytes = self._key_bytes
        other._config = self._config
        other._state = copy_state(self._state)
        other._kstate = to_kernel(other._state)
        other._mark = {k: v.copy() for k, v in self._mark.items()}
        other._last_hist = self._last_hist.copy()
        return other

    def __deepcopy__(self, memo: dict) -> TieredCacheSim:
        return self.clone()

    def __getstate__(self) -> dict:
        """Picklable (for subprocess vector envs): the kernel's StructRef view is rebuilt on load."""
        d = self.__dict__.copy()
        d.pop("_kstate", None)
        return d

    def __setstate__(self, d: dict) -> None:
        self.__dict__.update(d)
        self._kstate = to_kernel(self._state)

    def reset(self) -> None:
        """Empty cache, clients not yet connected, counters and random stream restarted."""
        self._state = self._fresh_state()
        self._kstate = to_kernel(self._state)
        self._set_params(self._config)
        self._sync_exact_list(None, self._config)
        self._mark = self._marks()

    # ------------------------------------------------------------------ state views
    @property
    def used_memory(self) -> int:
        """Redis ``used_memory`` now: base + keys + connected clients' buffers."""
        s = self._state
        return int(s.ipar[P_BASE] + s.ist[I_DATA] + s.ist[I_NCONN] * s.ipar[P_CLIENT_BUF])

    @property
    def n_resident(self) -> int:
        return int(self._state.ist[I_NRES])

    def resident_keys(self) -> np.ndarray:
        """Ids of the keys in L1 now (unordered copy)."""
        return self._state.dkeys[: self.n_resident].copy()

    def is_resident(self, key: int) -> bool:
        return bool(self._state.kv[key, KV_DPOS] >= 0)

    def expire_at(self, key: int) -> float:
        """Absolute expire time of a resident key (trace seconds); 0 when it has no TTL or is absent."""
        return float(self._state.expire[key]) if self.is_resident(key) else 0.0

    def lru_field(self, key: int) -> int:
        """The key's 24-bit object field as Redis holds it (LRU clock or LFU minutes<<8|counter)."""
        return int(self._state.kv[key, KV_LRU])

    def lfu_counter(self, key: int) -> int:
        """LFU counter of ``key`` after decay, as OBJECT FREQ would report it now."""
        s = self._state
        return int(K.lfu_decr_and_return(int(s.kv[key, KV_LRU]), float(s.fst[0]), self._config.lfu_decay_time))

    @property
    def last_latency_histogram(self) -> np.ndarray:
        """Non-cumulative latency bucket counts of the last reported interval (LATENCY_BUCKETS_S + Inf)."""
        return self._last_hist.copy()

    @property
    def now(self) -> float:
        """Simulated clock (seconds, trace time)."""
        return float(self._state.fst[0])

    # ------------------------------------------------------------------ internals
    def _process(self, trace: Trace, start: int, stop: int | None, record: np.ndarray | None = None) -> tuple[int, int]:
        """Run requests ``[start, stop)`` through the kernel; returns the clipped bounds."""
        if trace.n_keys > self.n_keys:
            raise ConfigError(f"trace {trace.name} has n_keys={trace.n_keys} but the simulator was built for {self.n_keys}")
        n = len(trace)
        stop = n if stop is None else min(int(stop), n)
        start = max(0, int(start))
        s = self._state
        s.ipar[P_READ_ONLY] = int(trace.read_only)
        s.ist[I_PEAK] = int(s.ipar[P_BASE] + s.ist[I_DATA] + s.ist[I_NCONN] * s.ipar[P_CLIENT_BUF])
        if stop > start:
            whole = start == 0 and stop == n
            K.run_requests(
                self._kstate,
                kernel_array(trace.timestamps, start, stop, whole, np.float64),
                kernel_array(trace.keys, start, stop, whole, np.int64),
                kernel_array(trace.sizes, start, stop, whole, np.int64),
                kernel_array(trace.ops, start, stop, whole, np.uint8),
                kernel_array(trace.ttls, start, stop, whole, np.float64),
                np.zeros((0, 2)) if record is None else record[: stop - start],
            )
        return start, stop

    def _fresh_state(self) -> KState:
        c = self.params.clients
        return new_state(self.n_keys, self._key_bytes, c.n_clients, c.activity_skew, self.seed)

    def _set_params(self, config: RedisConfig) -> None:
        """Write every kernel parameter: the :class:`SimParams` ones, then the config's."""
        p = self.params
        ip, fp = self._state.ipar, self._state.fpar
        ip[P_FLAT] = -1 if p.memory.per_key_overhead is None else p.memory.per_key_overhead
        ip[P_BASE] = p.memory.base_used_memory
        ip[P_LGQ] = p.memory.jemalloc_lg_quantum
        ip[P_REDIS_ORDER] = int(p.eviction_order == "redis")
        ip[P_DICT_SAMPLE] = int(p.sampling == "dict")
        ip[P_LATENCY] = int(p.model_latency)
        ip[P_CLIENT_BUF] = p.clients.client_buffer_bytes
        ip[P_NCLIENTS] = p.clients.n_clients
        ip[P_L2_ON] = int(p.l2.enabled and p.l2.capacity_bytes > 0)
        ip[P_L2_CAP] = p.l2.capacity_bytes
        ip[P_L2_FIFO] = int(p.l2.policy == "fifo")
        ae = p.active_expire
        ip[P_AE_ON] = int(ae.enabled)
        ip[P_AE_KEYS] = ae.keys_per_loop
        ip[P_AE_LOOPS] = ae.max_loops
        ip[P_AE_CATCHUP] = ae.max_catchup_cycles
        lat = p.latency
        fp[Q_NET_MS] = lat.network_ms
        fp[Q_L1_MS] = lat.l1_hit_ms
        fp[Q_L2_MS] = lat.l2_hit_ms
        fp[Q_MISS_MS] = lat.miss_ms
        fp[Q_MISS_SIGMA] = lat.miss_sigma
        fp[Q_JITTER] = lat.jitter_sigma
        fp[Q_RECONN_MS] = lat.reconnect_ms
        fp[Q_MISS_COST] = p.cost.miss_cost
        fp[Q_AE_PERIOD] = ae.period_s
        fp[Q_AE_STALE] = ae.acceptable_stale_pct
        self._state.jit_tab[:] = lognormal_table(lat.jitter_sigma)
        self._state.miss_tab[:] = lognormal_table(lat.miss_sigma)
        self._set_config_params(config)

    def _set_config_params(self, config: RedisConfig) -> None:
        """Only the parameters a CONFIG SET can change (apply_config runs often: what-if mini caches)."""
        spec = get_policy(config.maxmemory_policy)
        ip = self._state.ipar
        ip[P_MAXMEM] = config.maxmemory
        ip[P_KEYS] = spec.keys
        ip[P_SCORE] = spec.score
        ip[P_SAMPLES] = config.maxmemory_samples
        ip[P_LFU_LOG] = config.lfu_log_factor
        ip[P_LFU_DECAY] = config.lfu_decay_time
        self._state.fpar[Q_TIMEOUT] = float(config.timeout)

    def _sync_exact_list(self, old: RedisConfig | None, new: RedisConfig) -> None:
        """Maintain the exact-LRU list only while ``exact-lru`` is in force.

        Switching to it orders the resident keys by their LRU clock field (ties by key id), the best
        a real recency order can be recovered from Redis-style state.
        """
        s = self._state
        want = get_policy(new.maxmemory_policy).score == SCORE_EXACT_LRU
        had = old is not None and get_policy(old.maxmemory_policy).score == SCORE_EXACT_LRU and bool(s.ist[I_LISTED])
        if want and not had:
            keys = s.dkeys[: s.ist[I_NRES]]
            now_clock = K.lru_clock(float(s.fst[0]))
            idle = (now_clock - s.kv[keys, KV_LRU]) % (K.LRU_CLOCK_MAX + 1)
            order = keys[np.lexsort((keys, idle))]  # most recent (smallest idle) first
            s.kv[:, KV_PREV] = -1
            s.kv[:, KV_NEXT] = -1
            if len(order):
                s.kv[order[1:], KV_PREV] = order[:-1]
                s.kv[order[:-1], KV_NEXT] = order[1:]
                s.ist[I_HEAD] = order[0]
                s.ist[I_TAIL] = order[-1]
            else:
                s.ist[I_HEAD] = s.ist[I_TAIL] = -1
            s.ist[I_LISTED] = 1
        elif not want:
            s.ist[I_LISTED] = 0

    def _marks(self) -> dict[str, np.ndarray]:
        s = self._state
        return {"cnt": s.cnt.copy(), "fcnt": s.fcnt.copy(), "hist": s.hist.copy()}

    @staticmethod
    def _span(trace: Trace, start: int, stop: int) -> float:
        if stop <= start:
            return 0.0
        end = trace.timestamps[stop] if stop < len(trace) else trace.timestamps[stop - 1]
        return float(end - trace.timestamps[start])

    def _report(self, interval_s: float) -> MetricsSnapshot:
        s = self._state
        d = s.cnt - self._mark["cnt"]
        f = s.fcnt - self._mark["fcnt"]
        h = s.hist - self._mark["hist"]
        self._mark = self._marks()
        self._last_hist = h
        n_lat = int(h.sum())

        def q_ms(q: float) -> float:
            return histogram_quantile(q, h, LATENCY_BUCKETS_S) * 1000.0 if n_lat else 0.0

        used = self.used_memory
        return MetricsSnapshot(
            interval_s=interval_s,
            requests=int(d[C_REQ]),
            gets=int(d[C_GETS]),
            hits=int(d[C_HITS]),
            misses=int(d[C_MISSES]),
            byte_requests=int(d[C_BREQ]),
            byte_hits=int(d[C_BHIT]),
            sets=int(d[C_SETS]),
            evictions=int(d[C_EVICT]),
            expirations=int(d[C_EXPIRED]),
            rejected_writes=int(d[C_REJECT]),
            commands=int(d[C_CMDS]),
            used_memory=used,
            peak_used_memory=max(int(s.ist[I_PEAK]), used),
            maxmemory=self._config.maxmemory,
            keys=int(s.ist[I_NRES]),
            connected_clients=int(s.ist[I_NCONN]),
            reconnects=int(d[C_RECONN]),
            l2_hits=int(d[C_L2HITS]),
            l2_used_bytes=int(s.ist[I_L2USED]),
            latency_p50_ms=q_ms(0.50),
            latency_p95_ms=q_ms(0.95),
            latency_p99_ms=q_ms(0.99),
            latency_mean_ms=float(f[FC_LATSUM_MS] / n_lat) if n_lat else 0.0,
            miss_cost=float(d[C_BACKEND]) * self.params.cost.miss_cost,
            config=self._config,
        )
