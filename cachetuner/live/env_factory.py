"""Entry point of the registered id ``CacheTuner/LiveRedis-v0``: the tuning env on a real Redis.

``gym.make("CacheTuner/LiveRedis-v0", redis_url=..., prometheus_url=...)`` or, with a running
``cachetuner stack up --dir DIR``, ``gym.make("CacheTuner/LiveRedis-v0", stack_dir=DIR)``. Intervals
are wall-clock seconds (default 3 s); traffic must come from elsewhere (``cachetuner replay`` or a real
application). Warm-up intervals default to 0: on live traffic the cache is already warm.
"""

from __future__ import annotations

from typing import Any

from cachetuner.errors import ConfigError
from cachetuner.live.backend import LiveRedisBackend
from cachetuner.live.stack import load_state

#: Default wall-clock interval of the live env (seconds).
LIVE_INTERVAL_S = 3.0


def make_live_env(
    *,
    redis_url: str | None = None,
    prometheus_url: str | None = None,
    stack_dir: str | None = None,
    interval_s: float = LIVE_INTERVAL_S,
    cfg: Any = None,
    bounds: tuple[int, int] | None = None,
    key_prefix: str = "cachetuner:",
    actions: str | None = None,
    **env_overrides: Any,
) -> Any:
    """A :class:`cachetuner.env.CacheTuningEnv` over :class:`LiveRedisBackend`.

    Args:
        redis_url, prometheus_url: the Redis and the Prometheus scraping its exporter; or
        stack_dir: a folder where ``cachetuner stack up`` runs (its ``stack.json`` gives both URLs).
        interval_s: wall seconds per step.
        cfg: an ``EnvConfig`` or dict; ``interval_s`` and (unless set) ``warmup_intervals=0`` are forced.
        bounds: ``(min, max)`` maxmemory bytes; default ``cfg.bounds`` absolute bytes, else 1 MiB .. 4x
            the Redis's maxmemory at start.
        actions: action space name (``multidiscrete`` / ``discrete12``), as the sim ids take.
        env_overrides: further ``EnvConfig`` fields (e.g. ``episode_intervals=10``).
    """
    from cachetuner.env import CacheTuningEnv
    from cachetuner.env.config import EnvConfig

    if stack_dir is not None:
        info = load_state(stack_dir)
        if info is None:
            raise ConfigError(f"stack_dir={stack_dir}: no stack.json (run `cachetuner stack up --dir {stack_dir}`)")
        redis_url = redis_url or info.redis_url
        prometheus_url = prometheus_url or info.prometheus_url
    if not redis_url or not prometheus_url:
        raise ConfigError("CacheTuner/LiveRedis-v0 needs redis_url and prometheus_url (or stack_dir)")
    if cfg is None:
        cfg = EnvConfig()
    elif isinstance(cfg, dict):
        from cachetuner.yamlconfig import validate

        cfg = validate(EnvConfig, cfg, "live env config")
    update: dict[str, Any] = {"interval_s": float(interval_s)}
    if "warmup_intervals" not in env_overrides:
        update["warmup_intervals"] = 0
    update.update(env_overrides)
    cfg = cfg.model_copy(update=update)
    backend = LiveRedisBackend(redis_url, prometheus_url, interval_s=interval_s, key_prefix=key_prefix)
    if bounds is None:
        b = cfg.bounds
        if b.min_bytes is not None and b.max_bytes is not None:
            bounds = (b.min_bytes, b.max_bytes)
        else:
            start = backend.config.maxmemory or 64 * 1024 * 1024
            bounds = (min(1 << 20, start), 4 * start)
    backend.bounds = (int(bounds[0]), int(bounds[1]))
    return CacheTuningEnv(cfg, backend=backend, actions=actions)
