"""Simulation parameters: everything about the modelled world that is not a Redis knob.

:class:`~cachetuner.config.RedisConfig` holds what the tuner turns; :class:`SimParams` holds what it
cannot (how much memory Redis charges per key, how slow the inference backend is, what a miss costs,
the second tier, the clients). Defaults describe a Redis 7 cache in front of an LLM: small text
answers, ~1 s inference calls that cost real money, a few dozen application clients.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

#: Largest byte figure the simulator takes (maxmemory, base memory, L2 capacity): 2^60 B = 1 EiB. Redis accepts
#: maxmemory up to 2^64-1, but the simulator keeps bytes in int64 and adds base memory, client buffers and key
#: charges to them; 1 EiB is beyond any machine and leaves that arithmetic 8x headroom below 2^63.
MAX_BYTES = 1 << 60
#: Largest flat per-key overhead: Redis caps one value at 512 MB (proto-max-bulk-len), so 1 GiB of overhead per key
#: is beyond any real key, and keys x overhead stays inside int64 for billions of keys even with maxmemory 0.
MAX_PER_KEY_OVERHEAD = 1 << 30
#: Largest memory one client connection may add: 1 TiB x the 100,000 clients allowed stays below 2^57.
MAX_CLIENT_BUFFER = 1 << 40
#: Redis's INT_MAX: the largest ``lfu-decay-time`` and ``timeout`` Redis 7 accepts (``createIntConfig(..., 0, INT_MAX)``).
REDIS_INT_MAX = 2**31 - 1


class _Model(BaseModel):
    """Frozen, no unknown fields, and finite floats only: a nan or inf latency, cost or period would run through
    the kernel and come out as nan totals or a loop that never ends, not as an error naming the field."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class MemoryParams(_Model):
    """How ``used_memory`` is computed (see :mod:`cachetuner.sim.memory` for the formula).

    ``per_key_overhead=None`` charges each key what Redis 7 + jemalloc really allocate for a string
    key (dictEntry, robj, key sds, value sds or embstr, expires entry, hash-table slots), which
    depends on key length, value length and whether a TTL is set. An integer switches to a flat model:
    ``charge = value size + per_key_overhead`` (key name not charged), so ``per_key_overhead=0`` and
    ``base_used_memory=0`` give libCacheSim's byte accounting for exact cross-checks.
    """

    per_key_overhead: int | None = Field(
        None, ge=0, le=MAX_PER_KEY_OVERHEAD, description="None = Redis 7 formula; int = flat bytes added to each value size"
    )
    base_used_memory: int = Field(
        927_000, ge=0, le=MAX_BYTES, description="used_memory of an empty Redis 7.0 without clients (measured 0.93 MB)"
    )
    jemalloc_lg_quantum: Literal[3, 4] = Field(
        4, description="4: system jemalloc (Debian redis-server); 3: Redis's bundled jemalloc"
    )
    default_key_bytes: int = Field(  # at most 512 MB: Redis's limit on a key name (proto-max-bulk-len)
        48, ge=1, le=512 << 20, description="key name length when the trace gives none (e.g. 'llm:ans:' + 40 hex chars)"
    )


class LatencyParams(_Model):
    """Client-observed latency model; every figure is a median in milliseconds.

    Each request pays ``network_ms`` (one round trip) plus its path: ``l1_hit_ms`` in Redis,
    ``l2_hit_ms`` for a second-tier read, or a lognormal inference call (median ``miss_ms``, log-space
    standard deviation ``miss_sigma``) followed by one more round trip to fill the cache. Redis and L2
    service times get a small lognormal jitter (``jitter_sigma``).
    """

    network_ms: float = Field(0.25, ge=0, description="client<->Redis round trip")
    l1_hit_ms: float = Field(0.05, ge=0, description="Redis command service time")
    l2_hit_ms: float = Field(4.0, ge=0, description="second-tier (SSD / object store) read")
    miss_ms: float = Field(900.0, ge=0, description="median backend (LLM inference) call")
    miss_sigma: float = Field(0.6, ge=0, description="lognormal sigma of the inference call")
    jitter_sigma: float = Field(0.2, ge=0, description="lognormal sigma of Redis / L2 service times")
    reconnect_ms: float = Field(1.5, ge=0, description="TCP connect + AUTH/HELLO after an idle-timeout close")


class CostParams(_Model):
    """Money, in arbitrary cost units (defaults read as US dollars)."""

    miss_cost: float = Field(0.002, ge=0, description="per backend (inference) call")
    memory_cost_per_gb_hour: float = Field(0.016, ge=0, description="Redis RAM (maxmemory reserved)")
    l2_cost_per_gb_hour: float = Field(0.0002, ge=0, description="second-tier capacity")


class L2Params(_Model):
    """Second tier behind Redis (local SSD or object store), inclusive of promoted keys.

    L1 evictions are demoted into it; an L1 miss that finds the key here is served at
    ``latency.l2_hit_ms`` and promoted into L1 as a read-through fill (the L2 copy stays, so a key can
    be in both). Explicit SET / DELETE invalidate the L2 copy. Only value bytes are charged.
    """

    enabled: bool = False
    capacity_bytes: int = Field(0, ge=0, le=MAX_BYTES)
    policy: Literal["lru", "fifo"] = "lru"


class ClientParams(_Model):
    """Application clients and Redis's idle ``timeout``.

    ``n_clients`` connections issue the requests; request ``i`` comes from client ``j`` with
    probability proportional to ``1 / (j + 1) ** activity_skew`` (a few busy workers, a tail of rarely
    used ones, drawn with the seeded RNG). A client idle for more than ``timeout`` seconds is closed
    by Redis (checked once per simulated second like ``clientsCron``, and at its next request); its
    next request reconnects and pays ``latency.reconnect_ms``. Each connected client adds
    ``client_buffer_bytes`` to ``used_memory`` (client struct, 16 KiB reply buffer, query buffer and
    per-client structures, as Redis 7.0 counts them).
    """

    n_clients: int = Field(32, ge=1, le=100_000)
    activity_skew: float = Field(1.0, ge=0)
    client_buffer_bytes: int = Field(
        36_864, ge=0, le=MAX_CLIENT_BUFFER, description="used_memory per connected client (measured 36.9 KB on redis-server 7.0.15)"
    )


class ActiveExpireParams(_Model):
    """Approximation of Redis 7's ``activeExpireCycle`` (slow cycle, effort 1).

    Every ``period_s`` (``1/hz``) sample ``keys_per_loop`` keys that have a TTL, delete the expired
    ones, and repeat while more than ``acceptable_stale_pct`` % of a sample was expired, at most
    ``max_loops`` times (standing in for Redis's 25 %-CPU time limit). Samples are uniform with
    replacement, where Redis walks hash-table buckets from a cursor.
    """

    enabled: bool = True
    period_s: float = Field(0.1, gt=0)
    keys_per_loop: int = Field(20, ge=1, le=REDIS_INT_MAX)
    acceptable_stale_pct: float = Field(10.0, ge=0, le=100)
    max_loops: int = Field(1000, ge=1, le=REDIS_INT_MAX)
    max_catchup_cycles: int = Field(
        600, ge=1, le=REDIS_INT_MAX, description="cycles replayed across an idle gap in the trace (the latest ones)"
    )


class SimParams(_Model):
    """Everything the simulator needs besides the trace and the :class:`RedisConfig`."""

    memory: MemoryParams = MemoryParams()
    latency: LatencyParams = LatencyParams()
    cost: CostParams = CostParams()
    l2: L2Params = L2Params()
    clients: ClientParams = ClientParams()
    active_expire: ActiveExpireParams = ActiveExpireParams()
    eviction_order: Literal["make-room", "redis"] = Field(
        "make-room",
        description="make-room: evict until each write fits (used <= maxmemory always; libCacheSim's order); "
        "redis: evict only before each command while used > maxmemory, a write may overshoot until the next",
    )
    model_latency: bool = Field(
        True,
        description="False: no latency draws and an empty latency histogram (hit ratios, bytes, memory only); "
        "for many small simulations such as the what-if mini caches",
    )
    sampling: Literal["dict", "uniform"] = Field(
        "dict",
        description="allkeys-* eviction candidates: dict = walk a model of Redis's hash table as dictGetSomeKeys / "
        "dictGetFairRandomKey do (consecutive buckets, newest key of a chain first); uniform = uniform draws",
    )

    @property
    def fixed_bytes(self) -> int:
        """Memory a full cache uses whatever it holds (the empty instance + client buffers): a miniature
        cache of a key sample scales only the rest (``(maxmemory - fixed) x rate``)."""
        return int(self.memory.base_used_memory + self.clients.n_clients * self.clients.client_buffer_bytes)

    @classmethod
    def exact(cls) -> SimParams:
        """libCacheSim-compatible accounting: value bytes only, no base memory, no client buffers."""
        return cls(
            memory=MemoryParams(per_key_overhead=0, base_used_memory=0),
            clients=ClientParams(n_clients=1, client_buffer_bytes=0),
        )
