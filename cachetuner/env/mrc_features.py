"""Observation features from the miss-ratio curves: where the cost bottoms out, and how far away it is.

Why: a policy that sees only the local what-if slope needs many intervals to reach a far optimum and
cannot tell a flat cost curve from a steep one. These features give it the predicted cost curve over
the whole size range (relative to its minimum), the optimum's position and policy, and how much
moving there would save, all scale-free so that one policy serves any working set and price.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from cachetuner.config import RedisConfig


def mrc_feature_names(cfg: Any) -> list[str]:
    n = cfg.observation.mrc_curve_points
    pols = list(cfg.mrc.policies)
    return [
        "mrc:ready",
        "mrc:maturity",
        "mrc:move_proposed",
        "mrc:optimum_position",
        *(f"mrc:optimum_policy={p}" for p in pols),
        "mrc:saving_vs_current",
        *(f"mrc:cost@{i}" for i in range(n)),
    ]


def mrc_features(env: Any, config: RedisConfig) -> list[float]:
    """Values for :func:`mrc_feature_names` (zeros until the curves are ready): readiness, maturity (the
    curves' windowed evidence relative to a full window), whether the ``mrc`` rule proposes a move now,
    the optimum's position and policy, the saving vs the config in force, and the cost curve."""
    cfg = env.cfg
    n = cfg.observation.mrc_curve_points
    pols = list(cfg.mrc.policies)
    cc = env._cost_curve  # noqa: SLF001 (the env's own state)
    if cc is None or not cc.cost or env.mrc is None:
        return [0.0] * (5 + len(pols) + n)
    curves = env.mrc.curves()
    saturation = env.cfg.mrc.half_life_gets / math.log(2)
    maturity = min(min(float(w.min()) for w in curves.weight.values()) / saturation, 1.0)
    anchor = env.anchor
    moved = 1.0 if anchor is not None and anchor != config else 0.0
    lo, hi = env.bounds
    pos = math.log(max(cc.best_size, lo) / lo) / math.log(hi / lo) if hi > lo else 0.0
    now = cc.cost_at(config.maxmemory_policy, config.maxmemory)
    best = cc.best_cost
    saving = (now - best) / now if (now == now and now > 0) else 1.0
    envelope = np.min(np.stack(list(cc.cost.values())), axis=0)
    xs = np.geomspace(lo, hi, n)
    curve = np.interp(np.log(xs), np.log(cc.sizes.astype(float)), envelope)
    rel = np.clip((curve - best) / max(best, 1e-12), 0.0, 3.0) / 3.0
    return [1.0, maturity, moved, float(pos), *(1.0 if cc.best_policy == p else 0.0 for p in pols), float(np.clip(saving, 0, 1)),
            *rel.tolist()]
