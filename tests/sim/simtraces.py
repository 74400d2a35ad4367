"""Small synthetic traces for the simulator tests, built straight from numpy arrays."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import redis

from cachetuner.traces.trace import Trace


def make_trace(
    keys: np.ndarray,
    *,
    sizes: np.ndarray | int = 100,
    ops: np.ndarray | None = None,
    ttls: np.ndarray | float = 0.0,
    timestamps: np.ndarray | None = None,
    rate: float = 1.0,
    n_keys: int | None = None,
    read_only: bool | None = None,
    key_bytes: int = 20,
    name: str = "test",
) -> Trace:
    keys = np.asarray(keys, dtype=np.int64)
    n = len(keys)
    u = int(n_keys if n_keys is not None else (keys.max() + 1 if n else 1))
    ops_a = np.zeros(n, np.uint8) if ops is None else np.asarray(ops, dtype=np.uint8)
    return Trace(
        name=name,
        timestamps=np.arange(n) / rate if timestamps is None else np.asarray(timestamps, dtype=np.float64),
        keys=keys,
        sizes=np.broadcast_to(np.asarray(sizes, dtype=np.int64), (n,)).copy(),
        ops=ops_a,
        ttls=np.broadcast_to(np.asarray(ttls, dtype=np.float64), (n,)).copy(),
        n_keys=u,
        key_bytes=np.full(u, key_bytes, dtype=np.int32),
        read_only=bool(ops is None) if read_only is None else read_only,
    )


def zipf_keys(n: int, n_keys: int, alpha: float = 1.0, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    w = 1.0 / np.arange(1, n_keys + 1) ** alpha
    return rng.choice(n_keys, size=n, p=w / w.sum()).astype(np.int64)


@contextlib.contextmanager
def real_redis(directory: Path, **redis_options: str) -> Iterator[redis.Redis]:
    """A real redis-server on a free loopback port through the project's launcher, with no memory
    limit and Redis's own default policy (tests set what they need with CONFIG SET)."""
    from cachetuner.live.stack import LocalStack

    with LocalStack(
        directory, redis_only=True, maxmemory=0, maxmemory_policy="noeviction", redis_options=redis_options
    ) as stack:
        client = redis.Redis.from_url(stack.redis_url)
        try:
            yield client
        finally:
            client.close()
