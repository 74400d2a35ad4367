"""Measure what a real Redis charges per key and fit the simulator's memory model to it.

For each value size, ``FLUSHALL``, write ``n_keys`` keys named like the replayer's (``ct:{i}``), and
read the ``used_memory`` delta per key (INFO memory) next to ``MEMORY USAGE`` of one key and the
simulator's Redis 7 + jemalloc formula (:func:`cachetuner.sim.memory.redis7_key_bytes`). Two
candidate models are scored on the measured sizes: the formula, and the best flat overhead
(``value size + c``); the one with the smaller mean absolute error goes into the calibrated
:class:`~cachetuner.sim.params.MemoryParams`.

Also measured: ``base_used_memory`` (an empty Redis with one control connection: what the simulator
adds to every snapshot) and ``client_buffer_bytes`` (what one pipelining replayer connection adds:
client struct, reply buffer and the query buffer grown by a batch of fills).

Calibration FLUSHes the Redis it is given: run it on a scratch instance (the default starts one).
"""

from __future__ import annotations

import tempfile
from dataclasses import asdict, dataclass, field

import numpy as np
import redis.exceptions

from cachetuner.errors import ConfigError
from cachetuner.live.replay import KEY_PREFIX
from cachetuner.live.resp import RespConnection, connect_error, encode, redis_client
from cachetuner.live.stack import LocalStack
from cachetuner.sim.memory import redis7_key_bytes
from cachetuner.sim.params import ClientParams, MemoryParams, SimParams

DEFAULT_SIZES: tuple[int, ...] = (8, 44, 45, 100, 512, 1000, 1024, 4096, 16384)


@dataclass
class Calibration:
    """Measured memory figures and the fitted model."""

    redis_version: str = ""
    allocator: str = ""
    base_used_memory: int = 0
    client_buffer_bytes: int = 0
    n_keys: int = 0
    rows: list[dict] = field(default_factory=list)
    flat_overhead: int = 0
    formula_mean_abs_err_pct: float = 0.0
    flat_mean_abs_err_pct: float = 0.0
    chosen: str = "formula"

    def memory_params(self) -> MemoryParams:
        return MemoryParams(
            per_key_overhead=None if self.chosen == "formula" else self.flat_overhead,
            base_used_memory=self.base_used_memory,
        )

    def sim_params(self, base: SimParams | None = None, n_clients: int = 1) -> SimParams:
        """``base`` with the calibrated memory model, ``n_clients`` replayer connections and Redis's
        own eviction order (evict before each command while over maxmemory; a write may overshoot)."""
        base = base or SimParams()
        update: dict = {
            "memory": self.memory_params(),
            "clients": ClientParams(n_clients=n_clients, activity_skew=0.0, client_buffer_bytes=self.client_buffer_bytes),
        }
        if "eviction_order" in SimParams.model_fields:
            update["eviction_order"] = "redis"
        return SimParams.model_validate({**base.model_dump(), **{k: v if not hasattr(v, "model_dump") else v.model_dump() for k, v in update.items()}})

    def to_dict(self) -> dict:
        return asdict(self)


def _used(r: object) -> int:
    return int(r.info("memory")["used_memory"])  # type: ignore[attr-defined]


def calibrate(
    redis_url: str | None = None,
    sizes: tuple[int, ...] = DEFAULT_SIZES,
    n_keys: int = 5000,
    pipeline: int = 64,
    fill_value_bytes: int = 1024,
) -> Calibration:
    """Measure on ``redis_url`` (FLUSHALL!) or on a fresh redis-server when None."""
    if n_keys < 1:  # checked before a server starts: 0 keys divide by zero, fewer leave no key to measure
        raise ConfigError(f"--keys: keys written per value size must be >= 1, got {n_keys}")
    if redis_url is None:
        with tempfile.TemporaryDirectory(prefix="ct-calib-") as d, LocalStack(d, maxmemory=0, redis_only=True) as st:
            return calibrate(st.redis_url, sizes, n_keys, pipeline, fill_value_bytes)
    r = redis_client(redis_url, socket_timeout=10.0)
    try:
        try:
            server = r.info("server")
        except redis.exceptions.ConnectionError as e:  # worded as the replayer words it, not a redis-py traceback
            raise connect_error(redis_url, e) from e
        mem = r.info("memory")
        cal = Calibration(redis_version=str(server.get("redis_version")), allocator=str(mem.get("mem_allocator")), n_keys=n_keys)
        r.config_set("maxmemory", "0")
        r.flushall()
        cal.base_used_memory = _used(r)

        # One replayer-like connection after a pipelined batch of fills, keys removed again.
        conn = RespConnection(redis_url)
        try:
            val = b"x" * fill_value_bytes
            conn.roundtrip([encode("SET", f"{KEY_PREFIX}{i}", val) for i in range(pipeline)])
            conn.roundtrip([encode("DEL", f"{KEY_PREFIX}{i}") for i in range(pipeline)])
            cal.client_buffer_bytes = max(0, _used(r) - cal.base_used_memory)

            key_lens = np.array([len(f"{KEY_PREFIX}{i}") for i in range(n_keys)])
            for ttl in (False, True):
                for size in sizes if not ttl else sizes[len(sizes) // 2 : len(sizes) // 2 + 1]:
                    r.flushall()
                    before = _used(r)
                    val = b"x" * size
                    for lo in range(0, n_keys, pipeline):
                        cmds = [
                            encode("SET", f"{KEY_PREFIX}{i}", val, "PX", 3_600_000) if ttl else encode("SET", f"{KEY_PREFIX}{i}", val)
                            for i in range(lo, min(n_keys, lo + pipeline))
                        ]
                        conn.roundtrip(cmds)
                    after = _used(r)
                    measured = (after - before) / n_keys
                    usage = r.memory_usage(f"{KEY_PREFIX}{n_keys // 2}", samples=0)
                    model = float(np.mean([redis7_key_bytes(int(k), size, ttl) for k in key_lens]))
                    cal.rows.append(
                        {
                            "value_bytes": size,
                            "ttl": ttl,
                            "measured_per_key": round(measured, 1),
                            "memory_usage": int(usage or 0),
                            "formula_per_key": round(model, 1),
                            "formula_err_pct": round(100.0 * (model - measured) / measured, 2),
                        }
                    )
        finally:
            conn.close()
        r.flushall()
    finally:
        r.close()
    plain = [row for row in cal.rows if not row["ttl"]]
    cal.flat_overhead = int(round(float(np.median([row["measured_per_key"] - row["value_bytes"] for row in plain]))))
    flat_err = [abs(row["value_bytes"] + cal.flat_overhead - row["measured_per_key"]) / row["measured_per_key"] for row in plain]
    cal.flat_mean_abs_err_pct = round(100.0 * float(np.mean(flat_err)), 2)
    cal.formula_mean_abs_err_pct = round(float(np.mean([abs(row["formula_err_pct"]) for row in plain])), 2)
    cal.chosen = "formula" if cal.formula_mean_abs_err_pct <= cal.flat_mean_abs_err_pct else "flat"
    return cal
