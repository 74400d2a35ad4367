"""Cost per get at static sizes (``cachetuner env sweep``): where the cost-optimal size lies.

Each workload is replayed over its pinned window from the beginning once per size, with
``maxmemory = fraction * working set`` and the policy held fixed. An optimum at either end of the
range means the trade-off is trivial for that workload with the configured prices.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from cachetuner.env.cache_env import CacheTuningEnv
from cachetuner.env.config import EnvConfig
from cachetuner.env.sim_backend import SimBackend
from cachetuner.errors import ConfigError

#: The cost terms summed per size (``info["cost"]`` keys).
COST_TERMS = ("memory", "miss", "slo", "switch", "total")


def cost_sweep(
    cfg: EnvConfig,
    fractions: Sequence[float],
    policy: str = "allkeys-lru",
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """The ``env sweep --json`` report: per workload, cost per get at each fraction and the best one.

    The memory bounds are widened to cover ``fractions`` so that no size is clipped. ``progress``
    gets one line per (workload, size) as it finishes.
    """
    fr = [float(f) for f in fractions]
    if not fr:
        raise ConfigError("fractions: need at least one maxmemory fraction")
    wide = cfg.bounds.model_copy(update={"min_fraction": min(fr), "max_fraction": max(fr) + 1e-9,
                                          "min_bytes": None, "max_bytes": None})  # fmt: skip
    cfg = cfg.model_copy(update={"bounds": wide})
    env = CacheTuningEnv(cfg)
    backend = env.backend
    assert isinstance(backend, SimBackend)
    rows = []
    try:
        for w in range(len(cfg.workloads)):
            per = []
            for f in fr:
                env.reset(seed=0, options={"workload": w, "start": "begin"})
                target = env.backend.config.evolve(maxmemory=int(f * backend.working_set), maxmemory_policy=policy)
                tot = dict.fromkeys(COST_TERMS, 0.0)
                gets = hits = 0
                rewards = []
                done = False
                while not done:
                    _o, r, _te, done, info = env.step_config(target)
                    rewards.append(r)
                    for k in tot:
                        tot[k] += info["cost"][k]
                    gets += info["snapshot"].gets
                    hits += info["snapshot"].hits
                per.append({"fraction": f, "maxmemory": target.maxmemory, "hit_ratio": round(hits / max(gets, 1), 4),
                            "cost_per_get": round(tot["total"] / max(gets, 1) / cfg.reward.miss_cost, 4),
                            "memory_per_get": round(tot["memory"] / max(gets, 1) / cfg.reward.miss_cost, 4),
                            "mean_reward": round(float(np.mean(rewards)), 4)})  # fmt: skip
                if progress is not None:
                    progress(f"{env.workload_name} x{f}: {per[-1]}")
            best = min(per, key=lambda p: p["cost_per_get"])
            rows.append({"workload": env.workload_name, "working_set": backend.working_set, "sizes": per,
                         "best_fraction": best["fraction"],
                         "interior": best["fraction"] not in (min(fr), max(fr))})  # fmt: skip
    finally:
        env.close()
    return {"policy": policy, "reward": cfg.reward.model_dump(), "workloads": rows}


__all__ = ["COST_TERMS", "cost_sweep"]
