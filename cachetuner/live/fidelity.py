"""Sim-to-real fidelity: the same trace and config through a real Redis and through the simulator.

For every policy x memory size: ``FLUSHALL``, ``CONFIG SET`` the config, ``CONFIG RESETSTAT``,
replay the trace into Redis at a fixed rate (:mod:`cachetuner.live.replay`, recording each request's
wall-clock send time), then simulate the trace *with those send times as timestamps* under the
same config and a memory model calibrated on this Redis (:mod:`cachetuner.live.calibrate`). Both
sides therefore see the same clock: Redis's LRU clock has 1 s resolution and LFU decay counts
wall-clock minutes, so a simulator fed the trace's own timestamps would break ties differently.

Memory sizes are fractions of the trace's working set *in Redis bytes* (the calibrated per-key model
summed over distinct keys, last size of each), on top of the measured empty-instance memory and the
replayer connection's buffers: ``maxmemory = base + client buffers + fraction x working set``.

What cannot match exactly (and is reported, not hidden): Redis's eviction sampling uses its own
random stream; the per-key model is off by the hash-table share (power-of-two tables, see the
calibration rows); client query/reply buffers move with each pipelined batch, where the simulator
charges a constant.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from cachetuner.config import REDIS_POLICIES, RedisConfig
from cachetuner.errors import ConfigError
from cachetuner.live.calibrate import Calibration, calibrate
from cachetuner.live.replay import ReplayOptions, ReplayResult, replay
from cachetuner.live.resp import redis_client
from cachetuner.live.stack import LocalStack
from cachetuner.registry import Registry
from cachetuner.sim import SimParams, TieredCacheSim
from cachetuner.sim.memory import redis7_key_bytes
from cachetuner.traces.trace import Trace

#: The policies a real Redis has (``exact-lru`` is simulator-only): what ``policies`` may name.
_REDIS_POLICIES: Registry[str] = Registry("Redis maxmemory_policy", "fidelity.policies")
for _p in REDIS_POLICIES:
    _REDIS_POLICIES.add(_p, _p)


class FidelityOptions(BaseModel):
    """What to compare."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    sizes: tuple[float, ...] = Field((0.05, 0.2, 0.5), description="maxmemory as fractions of the working set")
    policies: tuple[str, ...] = Field(REDIS_POLICIES, description="maxmemory-policy values to test")
    rate: float = Field(20_000.0, gt=0, description="replay pace, requests/s (the simulator gets the actual send times)")
    pipeline: int = Field(64, ge=1)
    seed: int = 0
    sim_seeds: int = Field(
        1, ge=1, description="simulator runs per cell (seeds seed, seed+1, ...) on the same send times; the "
        "reported simulator hit ratio is their mean (Redis's own sampling stream cannot be replayed)",
    )
    redis_repeats: int = Field(
        1, ge=1, description="replays per cell (FLUSHALL between): hit ratios and diff are their means; Redis's own "
        "run-to-run spread on a ~4 s CloudPhysics LFU cell is about +-0.6 pp",
    )
    scenarios: bool = Field(True, description="also a mid-run policy switch and a maxmemory shrink")
    unbounded: bool = Field(True, description="also a run without maxmemory: pure memory-model check")
    lfu_variants: tuple[tuple[int, int], ...] = Field(
        ((1, 1), (100, 0)),
        description="extra allkeys-lfu cells per size (when allkeys-lfu is in policies): (lfu-log-factor, "
        "lfu-decay-time) pairs other than Redis's default (10, 1)",
    )


def working_set_bytes(trace: Trace, calib: Calibration) -> int:
    """Bytes Redis needs to hold every key of ``trace`` (last size of each key) under the calibrated model."""
    last_size = np.zeros(trace.n_keys, dtype=np.int64)
    last_size[trace.keys] = trace.sizes
    has_ttl = np.zeros(trace.n_keys, dtype=bool)
    has_ttl[trace.keys] = trace.ttls > 0
    seen = np.zeros(trace.n_keys, dtype=bool)
    seen[trace.keys] = True
    if calib.chosen == "flat":
        return int((last_size[seen] + calib.flat_overhead).sum())
    kb = trace.key_bytes
    return int(sum(redis7_key_bytes(int(kb[k]), int(last_size[k]), bool(has_ttl[k])) for k in np.flatnonzero(seen)))


class _Harness:
    def __init__(self, trace: Trace, url: str, opts: FidelityOptions, calib: Calibration, params: SimParams) -> None:
        self.trace, self.url, self.opts, self.calib, self.params = trace, url, opts, calib, params
        self.r = redis_client(url, socket_timeout=30.0, decode_responses=True)
        self.overhead = calib.base_used_memory + calib.client_buffer_bytes

    def probe_client_buffer(self, data_budget: int, n_requests: int = 20_000) -> int | None:
        """The replayer connection's *effective* share of ``used_memory`` when Redis decides to evict.

        Measured, not modelled: under ``noeviction`` with ``maxmemory = base + data_budget``, replay the
        trace's first requests until writes are refused; after the replayer disconnects,
        ``maxmemory - used_memory`` is what its buffers occupied at the refusals (Redis reads a
        pipeline 16 KiB at a time, so this is far below the query buffer a whole batch would need).
        None when no write was refused (budget too large for the prefix).
        """
        r = self.r
        cap = self.calib.base_used_memory + int(data_budget)
        self._prepare(RedisConfig(maxmemory=cap, maxmemory_policy="noeviction"))
        res = self._replay(0, min(n_requests, len(self.trace)), np.full(len(self.trace), np.nan))
        if res.rejected_writes == 0:
            return None
        time.sleep(0.2)
        used = int(r.info("memory")["used_memory"])
        return max(0, cap - used)

    def _prepare(self, cfg: RedisConfig) -> None:
        r = self.r
        r.config_set("maxmemory", "0")
        r.flushall()
        for k, v in cfg.to_redis().items():
            r.config_set(k, v)
        r.config_resetstat()

    def _replay(self, start: int, count: int | None, send_times: np.ndarray) -> ReplayResult:
        opts = ReplayOptions(
            rate=self.opts.rate, pipeline=self.opts.pipeline, metrics_port=None, sample_rate=0.0, start=start,
            max_requests=count, record_send_times=True, miss_latency_ms=0.0, miss_sigma=0.0, duration_s=3600.0,
            exact_order=True,
        )  # fmt: skip
        res = replay(self.trace, self.url, opts)
        assert res.send_times is not None
        sent = ~np.isnan(res.send_times)
        send_times[sent] = res.send_times[sent]
        return res

    def _sim_trace(self, send_times: np.ndarray) -> Trace:
        ts = np.where(np.isnan(send_times), np.nanmin(send_times), send_times)
        return replace(self.trace, timestamps=np.maximum.accumulate(ts))

    def _server(self) -> dict[str, int]:
        stats, mem = self.r.info("stats"), self.r.info("memory")
        return {
            "hits": int(stats["keyspace_hits"]),
            "misses": int(stats["keyspace_misses"]),
            "evictions": int(stats["evicted_keys"]),
            "used_memory": int(mem["used_memory"]),
            "peak_used_memory": int(mem["used_memory_peak"]),
            "keys": int(self.r.dbsize()),
        }

    def run(self, cfg: RedisConfig, switch_at: int | None = None, cfg2: RedisConfig | None = None) -> dict[str, Any]:
        """:meth:`run_once` ``redis_repeats`` times: the first run's figures, mean hit ratios and diff."""
        runs = [self.run_once(cfg, switch_at, cfg2) for _ in range(self.opts.redis_repeats)]
        out = dict(runs[0])
        if len(runs) > 1:
            for key in ("sim_hit_ratio", "redis_hit_ratio"):
                out[key] = round(float(np.mean([r[key] for r in runs])), 5)
            out["diff_pp"] = round(float(np.mean([r["diff_pp"] for r in runs])), 3)
            out["repeat_diffs_pp"] = [r["diff_pp"] for r in runs]
        return out

    def run_once(self, cfg: RedisConfig, switch_at: int | None = None, cfg2: RedisConfig | None = None) -> dict[str, Any]:
        """One cell (or a two-phase scenario): Redis first, then the simulator on the same clock."""
        n = len(self.trace)
        send_times = np.full(n, np.nan)
        self._prepare(cfg)
        phases: list[tuple[int, int, RedisConfig]] = [(0, n, cfg)]
        if switch_at is not None and cfg2 is not None:
            phases = [(0, switch_at, cfg), (switch_at, n, cfg2)]
        live: list[dict] = []
        for i, (a, b, c) in enumerate(phases):
            if i > 0:
                for k, v in c.to_redis().items():
                    if self.r.config_get(k).get(k) != v:
                        self.r.config_set(k, v)
            before = self._server()
            res = self._replay(a, b - a, send_times)
            after = self._server()
            live.append({"gets": res.gets, "hits": res.hits, "rejected": res.rejected_writes, "server": after, "before": before})
        sim_trace = self._sim_trace(send_times)
        sim_hrs: list[float] = []
        for seed in range(self.opts.seed, self.opts.seed + self.opts.sim_seeds):
            run_sim = TieredCacheSim(sim_trace.n_keys, cfg, self.params, seed=seed, key_bytes=sim_trace.key_bytes)
            run_snaps = []
            for i, (a, b, c) in enumerate(phases):
                if i > 0:
                    run_sim.apply_config(c)
                run_snaps.append(run_sim.run(sim_trace, a, b))
            s_gets = sum(s.gets for s in run_snaps)
            sim_hrs.append(sum(s.hits for s in run_snaps) / s_gets if s_gets else 0.0)
            if seed == self.opts.seed:  # the other figures: the first seed's run
                sim, sims = run_sim, run_snaps
        gets = sum(p["gets"] for p in live)
        hits = sum(p["hits"] for p in live)
        server = live[-1]["server"]
        redis_hr = hits / gets if gets else 0.0
        sim_hr = float(np.mean(sim_hrs))
        out: dict[str, Any] = {
            "policy": cfg.maxmemory_policy,
            "maxmemory": cfg.maxmemory,
            "lfu_log_factor": cfg.lfu_log_factor,
            "lfu_decay_time": cfg.lfu_decay_time,
            "requests": gets,
            "sim_hit_ratio": round(sim_hr, 5),
            "sim_hit_ratio_sd": round(float(np.std(sim_hrs)), 5),
            "redis_hit_ratio": round(redis_hr, 5),
            "diff_pp": round(100.0 * (sim_hr - redis_hr), 3),
            "server_hits_match": server["hits"] == hits and server["misses"] == gets - hits,
            "sim_evictions": int(sum(s.evictions for s in sims)),
            "redis_evictions": int(server["evictions"]),
            "sim_rejected_writes": int(sum(s.rejected_writes for s in sims)),
            "redis_rejected_writes": int(sum(p["rejected"] for p in live)),
            "sim_keys": int(sim.n_resident),
            "redis_keys": server["keys"],
            "sim_peak_used_memory": int(max(s.peak_used_memory for s in sims)),
            "redis_peak_used_memory": server["peak_used_memory"],
            # At the end the replayer has disconnected: compare data + base, without client buffers.
            "sim_used_memory": int(sim.used_memory - self.calib.client_buffer_bytes),
            "redis_used_memory": server["used_memory"],
        }
        out["used_memory_err_pct"] = round(100.0 * (out["sim_used_memory"] - server["used_memory"]) / server["used_memory"], 3)
        if len(phases) > 1:
            out["phases"] = [
                {
                    "config": c.maxmemory_policy + f"/{c.maxmemory}",
                    "sim_hit_ratio": round(s.hits / s.gets, 5) if s.gets else 0.0,
                    "redis_hit_ratio": round(p["hits"] / p["gets"], 5) if p["gets"] else 0.0,
                }
                for (_, _, c), s, p in zip(phases, sims, live, strict=True)
            ]
        return out


def run_fidelity(
    trace: Trace,
    opts: FidelityOptions | None = None,
    redis_url: str | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """The whole comparison on ``redis_url`` (FLUSHes it!) or on a fresh redis-server when None."""
    opts = opts or FidelityOptions()
    for p in opts.policies:
        _REDIS_POLICIES.get(p)
    if len(trace) == 0:
        raise ConfigError(f"fidelity: trace {trace.name} is empty")
    if redis_url is None:
        with tempfile.TemporaryDirectory(prefix="ct-fidelity-") as d, LocalStack(d, maxmemory=0, redis_only=True) as st:
            return run_fidelity(trace, opts, st.redis_url, progress)
    fill = int(np.median(trace.sizes))
    calib = calibrate(redis_url, n_keys=2000, pipeline=opts.pipeline, fill_value_bytes=fill)
    params = calib.sim_params(SimParams(), n_clients=1)
    ws = working_set_bytes(trace, calib)
    h = _Harness(trace, redis_url, opts, calib, params)
    say = progress or (lambda _msg: None)
    say("probing the replayer's buffers")
    probed = h.probe_client_buffer(max(256 * 1024, int(min(opts.sizes) * ws)))
    if probed is not None:
        calib.client_buffer_bytes = probed
        h.params = params = calib.sim_params(SimParams(), n_clients=1)
        h.overhead = calib.base_used_memory + calib.client_buffer_bytes
    cells: list[dict[str, Any]] = []
    try:
        for frac in opts.sizes:
            for policy in opts.policies:
                cfg = RedisConfig(maxmemory=h.overhead + int(frac * ws), maxmemory_policy=policy)  # type: ignore[arg-type]
                say(f"{policy} @ {frac:.0%}")
                cells.append({"size_fraction": frac, **h.run(cfg)})
            if "allkeys-lfu" in opts.policies:
                for log_factor, decay in opts.lfu_variants:
                    cfg = RedisConfig(
                        maxmemory=h.overhead + int(frac * ws), maxmemory_policy="allkeys-lfu",
                        lfu_log_factor=log_factor, lfu_decay_time=decay,
                    )  # fmt: skip
                    say(f"allkeys-lfu log-factor {log_factor} decay {decay} @ {frac:.0%}")
                    cells.append({"size_fraction": frac, **h.run(cfg)})
        scenarios: list[dict[str, Any]] = []
        half = len(trace) // 2
        if opts.scenarios:
            mid = opts.sizes[len(opts.sizes) // 2]
            lo, hi = min(opts.sizes), max(opts.sizes)
            say("scenario: policy switch")
            a = RedisConfig(maxmemory=h.overhead + int(mid * ws), maxmemory_policy="allkeys-lru")
            scenarios.append({"scenario": "policy switch allkeys-lru -> allkeys-lfu at half", **h.run(a, half, a.evolve(maxmemory_policy="allkeys-lfu"))})
            say("scenario: maxmemory shrink")
            b = RedisConfig(maxmemory=h.overhead + int(hi * ws), maxmemory_policy="allkeys-lru")
            scenarios.append({"scenario": f"maxmemory shrink {hi:.0%} -> {lo:.0%} at half", **h.run(b, half, b.evolve(maxmemory=h.overhead + int(lo * ws)))})
        unbounded = None
        if opts.unbounded:
            say("unbounded memory-model run")
            unbounded = h.run(RedisConfig(maxmemory=0, maxmemory_policy="noeviction"))
    finally:
        h.r.close()
    diffs = [abs(c["diff_pp"]) for c in cells + scenarios]
    return {
        "trace": trace.name,
        "requests": len(trace),
        "unique_keys": int(trace.n_keys),
        "rate": opts.rate,
        "pipeline": opts.pipeline,
        "working_set_bytes": ws,
        "base_used_memory": calib.base_used_memory,
        "client_buffer_bytes": calib.client_buffer_bytes,
        "memory_model": calib.chosen,
        "max_abs_diff_pp": max(diffs) if diffs else 0.0,
        "mean_abs_diff_pp": float(np.mean(diffs)) if diffs else 0.0,
        "cells_max_abs_diff_pp": max((abs(c["diff_pp"]) for c in cells), default=0.0),
        "cells": cells,
        "scenarios": scenarios,
        "unbounded": unbounded,
        "memory_model_err_pct": unbounded["used_memory_err_pct"] if unbounded else None,
        "calibration_rows": calib.rows,
    }
