"""Typed Redis configuration shared by the simulator, the live backend, the env and the daemon.

Field names follow ``redis.conf`` with ``-`` replaced by ``_``; :meth:`RedisConfig.to_redis` gives
the ``CONFIG SET`` parameter names and string values.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

#: The eight ``maxmemory-policy`` values of Redis 7, in the order used by discrete action spaces.
REDIS_POLICIES: tuple[str, ...] = (
    "noeviction",
    "allkeys-lru",
    "allkeys-lfu",
    "allkeys-random",
    "volatile-lru",
    "volatile-lfu",
    "volatile-random",
    "volatile-ttl",
)
#: Simulator-only reference policy: true LRU, no sampling (for exact cross-checks with libCacheSim).
SIM_ONLY_POLICIES: tuple[str, ...] = ("exact-lru",)

Policy = Literal[
    "noeviction",
    "allkeys-lru",
    "allkeys-lfu",
    "allkeys-random",
    "volatile-lru",
    "volatile-lfu",
    "volatile-random",
    "volatile-ttl",
    "exact-lru",
]


class RedisConfig(BaseModel):
    """The knobs CacheTuner turns. Defaults are Redis 7's own defaults (except maxmemory, which Redis leaves at 0)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    maxmemory: int = Field(64 * 1024 * 1024, ge=0, description="bytes; 0 = unlimited (as in Redis)")
    maxmemory_policy: Policy = "allkeys-lru"
    maxmemory_samples: int = Field(5, ge=1, le=64)
    lfu_log_factor: int = Field(10, ge=0, le=255)
    lfu_decay_time: int = Field(1, ge=0, description="minutes")
    timeout: int = Field(0, ge=0, description="idle client timeout in seconds; 0 = never")

    def to_redis(self) -> dict[str, str]:
        """``CONFIG SET`` names and values. ``exact-lru`` has no Redis equivalent and is refused."""
        if self.maxmemory_policy in SIM_ONLY_POLICIES:
            raise ValueError(f"maxmemory_policy={self.maxmemory_policy!r} exists only in the simulator")
        return {
            "maxmemory": str(self.maxmemory),
            "maxmemory-policy": self.maxmemory_policy,
            "maxmemory-samples": str(self.maxmemory_samples),
            "lfu-log-factor": str(self.lfu_log_factor),
            "lfu-decay-time": str(self.lfu_decay_time),
            "timeout": str(self.timeout),
        }

    @classmethod
    def from_redis(cls, values: dict[str, str]) -> RedisConfig:
        """Inverse of :meth:`to_redis` (e.g. from ``CONFIG GET``); unknown names are ignored."""
        names = {
            "maxmemory": "maxmemory",
            "maxmemory-policy": "maxmemory_policy",
            "maxmemory-samples": "maxmemory_samples",
            "lfu-log-factor": "lfu_log_factor",
            "lfu-decay-time": "lfu_decay_time",
            "timeout": "timeout",
        }
        kwargs: dict[str, object] = {}
        for k, v in values.items():
            if k in names:
                kwargs[names[k]] = v if k == "maxmemory-policy" else int(v)
        return cls(**kwargs)  # type: ignore[arg-type]

    def evolve(self, **changes: object) -> RedisConfig:
        """A copy with ``changes`` applied and validated."""
        return RedisConfig(**{**self.model_dump(), **changes})  # type: ignore[arg-type]
