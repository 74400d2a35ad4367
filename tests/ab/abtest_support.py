"""Small A/B experiments shared by the tests in this folder (real simulator, seconds each)."""

from __future__ import annotations

from typing import Any

from cachetuner.ab.config import ABConfig

#: Zipf traffic polluted by scans of cold keys, 5000 requests per 5 s interval, 4 KiB values.
SCAN_ENV: dict[str, Any] = {
    "interval_s": 5,
    "warmup_intervals": 2,
    "workloads": [
        {
            "trace": "synthetic:scan",
            "name": "scan",
            "rate": 1000,
            "seed": 7,
            "size_model": "fixed:4096",
            "params": {"n_requests": 200000, "n_keys": 20000, "scan_every": 20000, "scan_length": 8000,
                       "cold_keys": 100000},
        }
    ],
    "bounds": {"min_bytes": 1_000_000, "max_bytes": 2_000_000_000},
    # Cost = memory held + backend calls: memory is cheap next to a model call, so more memory pays.
    "reward": {"kind": "cost", "miss_cost": 0.0002, "memory_cost_per_gb_hour": 2.0, "slo_penalty": 0.0,
               "switch_cost": 0.0},
    "whatif": {"enabled": False},
}

SMALL = {"maxmemory": 20_000_000, "maxmemory_policy": "allkeys-lru"}
LARGE = {"maxmemory": 80_000_000, "maxmemory_policy": "allkeys-lru"}

#: TTL A/B tests (sim and shadow mode): the bundled web07 excerpt at 20 req/s, one 6 MB config for both arms.
TTL_ENV = {
    "interval_s": 30,
    "workloads": [{"trace": "bundled:web07", "name": "web07", "rate": 20, "size_model": "fixed:2000", "limit": 24000}],
    "reward": {"kind": "cost", "miss_cost": 0.0002, "memory_cost_per_gb_hour": 2.0, "slo_penalty": 0.0, "switch_cost": 0.0},
    "whatif": {"enabled": False},
}
TTL_CFG = {"maxmemory": 6_000_000, "maxmemory_policy": "allkeys-lru"}


def ab_config(control: dict, treatment: dict, *, horizon: int = 36, **kw: Any) -> ABConfig:
    return ABConfig.model_validate(
        {"name": "test-ab", "horizon_intervals": horizon, "env": SCAN_ENV, "control": control,
         "treatment": treatment, **kw}
    )
