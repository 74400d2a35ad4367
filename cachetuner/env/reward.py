"""Rewards: the operating cost of one interval, and the seed design's shaped alternative.

``cost`` (default). The money one interval costs, in the units of ``miss_cost``::

    memory = memory_cost_per_gb_hour * GiB(maxmemory held) * interval_s / 3600
    miss   = miss_cost * backend_calls          backend_calls = L1 misses not served by L2
    slo    = slo_penalty * ([p95 > slo_p95_ms] + sum over tenant_slo of weight * [tenant p95 > its target])
    switch = switch_cost * [config differs from the previous interval's]
    stale  = stale_cost * stale_hits        only when stale_cost > 0 (default 0: no term, no key)
    reward = -(memory + miss + slo + switch + stale) / (miss_cost * max(gets, 1))   (normalise=True)

so that the reward reads "-(miss ratio + memory cost in misses per get + ...)" whatever the request
rate. ``maxmemory = 0`` (unlimited, live caches only) charges ``used_memory`` instead. A change of the
client-side TTL multipliers is not a config switch (no ``CONFIG SET``, no cache disruption); the
``stale`` term is what prices longer TTLs against their misses saved, on workloads with source updates.

``seed``. The seed design's ``R = 0.6 dHR + 0.3 log(1/dLatency) - 0.1 dMemUtil`` with
``dHR = HR_t - HR_{t-1}``, ``dLatency = p95_t / p95_{t-1}`` (both floored at 0.01 ms, so the term is
``log(p95_{t-1} / p95_t)``, clipped to [-5, 5]), and ``dMemUtil = util_t - util_{t-1}``. It rewards
changes, not levels, and ignores cost; kept for comparison with the original design.

Both are clipped to ``[-clip, clip]``; ``info["cost"]`` always carries the unnormalised cost terms.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from cachetuner.config import RedisConfig
from cachetuner.env.config import RewardConfig
from cachetuner.metrics import MetricsSnapshot
from cachetuner.registry import Registry

_GIB = float(1024**3)
_LAT_FLOOR_MS = 0.01


def interval_cost(
    snap: MetricsSnapshot, *, changed: bool, cfg: RewardConfig, slo_p95_ms: float
) -> dict[str, float]:
    """Unnormalised cost terms of one interval (``info["cost"]``)."""
    held = snap.maxmemory if snap.maxmemory > 0 else snap.used_memory
    memory = cfg.memory_cost_per_gb_hour * (held / _GIB) * (snap.interval_s / 3600.0)
    backend_calls = max(snap.misses - snap.l2_hits, 0)
    miss = cfg.miss_cost * backend_calls
    p95 = snap.latency_p95_ms
    slo = cfg.slo_penalty if (math.isfinite(p95) and p95 > slo_p95_ms) else 0.0
    for name, target in cfg.tenant_slo.items():
        t = snap.tenants.get(name)
        if t is not None and target.breached(t.gets, t.latency_p95_ms):
            slo += target.weight * cfg.slo_penalty
    switch = cfg.switch_cost if changed else 0.0
    cost = {"memory": memory, "miss": miss, "slo": slo, "switch": switch, "total": memory + miss + slo + switch}
    if cfg.stale_cost > 0:
        cost["stale"] = cfg.stale_cost * snap.stale_hits
        cost["total"] += cost["stale"]
    return cost


def _clip(x: float, c: float) -> float:
    return float(min(max(x, -c), c)) if math.isfinite(x) else -c


def cost_reward(cost: dict[str, float], snap: MetricsSnapshot, prev: MetricsSnapshot, cfg: RewardConfig) -> float:
    norm = cfg.miss_cost * max(snap.gets, 1) if cfg.normalise else 1.0
    return _clip(-cost["total"] / norm, cfg.clip)


def seed_reward(cost: dict[str, float], snap: MetricsSnapshot, prev: MetricsSnapshot, cfg: RewardConfig) -> float:
    d_hr = snap.hit_ratio - prev.hit_ratio
    before = max(prev.latency_p95_ms, _LAT_FLOOR_MS) if math.isfinite(prev.latency_p95_ms) else _LAT_FLOOR_MS
    now = max(snap.latency_p95_ms, _LAT_FLOOR_MS) if math.isfinite(snap.latency_p95_ms) else _LAT_FLOOR_MS
    lat = min(max(math.log(before / now), -5.0), 5.0)
    d_mem = min(snap.memory_utilisation, 2.0) - min(prev.memory_utilisation, 2.0)
    return _clip(cfg.w_hit * d_hr + cfg.w_latency * lat - cfg.w_memory * d_mem, cfg.clip)


RewardFn = Callable[[dict[str, float], MetricsSnapshot, MetricsSnapshot, RewardConfig], float]

#: ``EnvConfig.reward.kind`` -> reward function ``(cost, snapshot, previous snapshot, cfg) -> reward``.
REWARDS: Registry[RewardFn] = Registry("reward", "env.reward.kind")
REWARDS.add("cost", cost_reward)
REWARDS.add("seed", seed_reward)


def get_reward_fn(kind: str) -> RewardFn:
    """The reward function for ``env.reward.kind``; an unknown kind raises a one-line
    :class:`~cachetuner.errors.UnknownNameError` (a ``ConfigError``) naming the field and the valid kinds."""
    return REWARDS.get(kind)


def config_changed(a: RedisConfig, b: RedisConfig) -> bool:
    return a != b
