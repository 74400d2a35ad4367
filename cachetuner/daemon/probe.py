"""A small Redis connection of the daemon's own: server identity, ``CONFIG GET``, ``CONFIG REWRITE``.

The live backend reads metrics and applies configs; the daemon additionally needs to notice a
Redis restart (``INFO server`` ``run_id`` changes; Redis forgets every ``CONFIG SET`` that was not
rewritten to ``redis.conf``) and to read the config the target actually runs. Only commands of
the least-privilege ACL are used: ``INFO``, ``CONFIG GET``, ``PING`` (``CONFIG REWRITE`` only with
``persist: rewrite``).
"""

from __future__ import annotations

from dataclasses import dataclass

import redis

from cachetuner.config import REDIS_PARAM_NAMES, RedisConfig


@dataclass
class ServerIdentity:
    run_id: str
    uptime_s: int


class RedisProbe:
    def __init__(self, url: str, timeout_s: float = 2.0) -> None:
        self._client = redis.Redis.from_url(
            url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s, decode_responses=True
        )

    def identity(self) -> ServerIdentity:
        info = self._client.info("server")
        return ServerIdentity(str(info["run_id"]), int(info.get("uptime_in_seconds", 0)))

    def config(self) -> RedisConfig:
        values = self._client.config_get(*REDIS_PARAM_NAMES)
        return RedisConfig.from_redis({str(k): str(v) for k, v in values.items()})

    def rewrite(self) -> None:
        self._client.config_rewrite()

    def close(self) -> None:
        self._client.close()
