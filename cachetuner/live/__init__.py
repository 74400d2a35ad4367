"""The live path: a real Redis 7 observed through redis_exporter + Prometheus (see docs/live.md).

Public API::

    from cachetuner.live import LocalStack, LiveRedisBackend, ReplayOptions, replay, make_live_env
"""

from cachetuner.live.backend import LiveRedisBackend
from cachetuner.live.env_factory import make_live_env
from cachetuner.live.replay import ReplayOptions, ReplayResult, replay
from cachetuner.live.stack import LocalStack, load_state, stop_stack

__all__ = [
    "LiveRedisBackend",
    "LocalStack",
    "ReplayOptions",
    "ReplayResult",
    "load_state",
    "make_live_env",
    "replay",
    "stop_stack",
]
