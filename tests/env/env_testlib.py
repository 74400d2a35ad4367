"""Small, fast env configs shared by the env tests (a plain module: tests/ has no packages)."""

from __future__ import annotations

from cachetuner.env import EnvConfig

#: 1200 s of traffic at 100 req/s over 5000 keys: 20 intervals of 60 s.
SMALL = {"n_keys": 5000, "n_requests": 120_000, "rate": 100.0, "sizes": "llm"}


def small_cfg(**overrides: object) -> EnvConfig:
    """Two workloads (Zipf, mixed TTL), 8-step episodes after 2 warm-up intervals."""
    data: dict = {
        "workloads": [
            {"trace": "synthetic:zipf", "params": SMALL, "weight": 2.0},
            {"trace": "synthetic:mixed-ttl", "params": SMALL, "name": "ttl"},
        ],
        "episode_intervals": 8,
        "warmup_intervals": 2,
    }
    data.update(overrides)
    return EnvConfig.model_validate(data)
