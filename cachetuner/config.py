"""Typed Redis configuration shared by the simulator, the live backend, the env and the daemon.

Field names follow ``redis.conf`` with ``-`` replaced by ``_``; :data:`REDIS_PARAMS` is the one map
from field to Redis parameter name, used by :meth:`RedisConfig.to_redis` (``CONFIG SET`` names and
string values), :meth:`RedisConfig.from_redis` and everything that reads or sets the managed
parameters (live backend, daemon probe and guardrails, chaos harness).
"""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

#: The eight ``maxmemory-policy`` values of Redis 7, in the order used by discrete action spaces.
RedisPolicy = Literal[
    "noeviction",
    "allkeys-lru",
    "allkeys-lfu",
    "allkeys-random",
    "volatile-lru",
    "volatile-lfu",
    "volatile-random",
    "volatile-ttl",
]
#: Every policy a config may name: Redis's eight and the simulator-only ``exact-lru``.
Policy = Literal[RedisPolicy, "exact-lru"]

REDIS_POLICIES: tuple[Policy, ...] = get_args(RedisPolicy)


def redis_policies() -> list[Policy]:
    """The eight Redis policies as a fresh list (a config model's default: every Redis policy allowed)."""
    return list(REDIS_POLICIES)


#: Simulator-only reference policy: true LRU, no sampling (for exact cross-checks with libCacheSim).
SIM_ONLY_POLICIES: tuple[str, ...] = ("exact-lru",)

#: ``RedisConfig`` field -> Redis parameter name (``CONFIG SET``/``CONFIG GET``, ``redis.conf``), one
#: entry per field, in the order of the fields (and of every ``CONFIG SET``/``CONFIG GET`` of them).
REDIS_PARAMS: dict[str, str] = {
    "maxmemory": "maxmemory",
    "maxmemory_policy": "maxmemory-policy",
    "maxmemory_samples": "maxmemory-samples",
    "lfu_log_factor": "lfu-log-factor",
    "lfu_decay_time": "lfu-decay-time",
    "timeout": "timeout",
}
#: The Redis parameter names CacheTuner manages (the keys of :meth:`RedisConfig.to_redis`).
REDIS_PARAM_NAMES: tuple[str, ...] = tuple(REDIS_PARAMS.values())
#: Fields whose Redis value is a string as is; every other field is an integer.
_STRING_FIELDS = frozenset({"maxmemory_policy"})


class RedisConfig(BaseModel):
    """The knobs CacheTuner turns. Defaults are Redis 7's own defaults (except maxmemory, which Redis leaves at 0)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # 1 EiB: the simulator adds base memory, buffers and key sizes to it in int64 (sim.params.MAX_BYTES)
    maxmemory: int = Field(64 * 1024 * 1024, ge=0, le=1 << 60, description="bytes; 0 = unlimited (as in Redis)")
    maxmemory_policy: Policy = "allkeys-lru"
    maxmemory_samples: int = Field(5, ge=1, le=64)
    lfu_log_factor: int = Field(10, ge=0, le=255)
    # Redis 7 takes both as a C int: CONFIG SET refuses more than INT_MAX
    lfu_decay_time: int = Field(1, ge=0, le=2**31 - 1, description="minutes")
    timeout: int = Field(0, ge=0, le=2**31 - 1, description="idle client timeout in seconds; 0 = never")

    def to_redis(self) -> dict[str, str]:
        """``CONFIG SET`` names and values. ``exact-lru`` has no Redis equivalent and is refused."""
        if self.maxmemory_policy in SIM_ONLY_POLICIES:
            raise ValueError(f"maxmemory_policy={self.maxmemory_policy!r} exists only in the simulator")
        return {name: str(getattr(self, field)) for field, name in REDIS_PARAMS.items()}

    @classmethod
    def from_redis(cls, values: dict[str, str]) -> RedisConfig:
        """Inverse of :meth:`to_redis` (e.g. from ``CONFIG GET``); unknown names are ignored."""
        fields = {name: field for field, name in REDIS_PARAMS.items()}
        kwargs: dict[str, object] = {}
        for k, v in values.items():
            if k in fields:
                f = fields[k]
                kwargs[f] = v if f in _STRING_FIELDS else int(v)
        return cls(**kwargs)  # type: ignore[arg-type]

    def evolve(self, **changes: object) -> RedisConfig:
        """A copy with ``changes`` applied and validated."""
        return RedisConfig(**{**self.model_dump(), **changes})  # type: ignore[arg-type]


class TenantTarget(BaseModel):
    """A per-tenant p95 target (multi-tenant workloads: ``MetricsSnapshot.tenants``), used by the env's
    reward (``reward.tenant_slo``) and the daemon's SLO guard (``slo.tenants``).

    Why per tenant: one cache-wide p95 lets the bronze tenant's misses hide a gold breach, or the
    reverse; the QoS classes of the cache-architecture design give gold 80 ms, silver 120 ms and
    bronze 200 ms. ``weight`` scales the breach penalty (e.g. gold 3, bronze 0.5)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    p95_ms: float = Field(gt=0, description="the tenant's p95 ceiling (gold 80, silver 120, bronze 200 in the design)")
    weight: float = Field(1.0, ge=0, description="breach penalty multiplier (reward); the daemon treats any breach alike")
    min_gets: int = Field(20, ge=0, description="judge the tenant only on intervals with at least this many of its GETs")

    def breached(self, gets: int, p95_ms: float) -> bool:
        """True when an interval with ``gets`` of this tenant's GETs and ``p95_ms`` breaks the target."""
        return gets >= self.min_gets and p95_ms == p95_ms and p95_ms > self.p95_ms
