"""Cliffhanger-style online hill climbing on the env's what-if hit-ratio estimates."""

from __future__ import annotations

import math
from typing import Any

from cachetuner.baselines.base import register_tuner
from cachetuner.baselines.settings import BaselinesConfig
from cachetuner.baselines.space import config_space
from cachetuner.config import RedisConfig
from cachetuner.env.whatif import MIRROR, whatif_label


@register_tuner("hill-climb")
class HillClimb:
    """Follow the local slope of the hit-ratio curve, as Cliffhanger (Cidon et al., NSDI'16) does with
    shadow queues, using the env's SHARDS what-if mini caches (``info["whatif"]``) as the shadows.

    Each interval, for the current policy and the what-if sizes just below and above the current one
    (factors ``d < 1 < u``):

    - grow to ``u x`` if the misses saved, ``(h(u) - h(1)) * gets * miss_cost``, exceed the memory
      cost of the extra ``(u - 1) x maxmemory``;
    - else shrink to ``d x`` if the memory saved exceeds the misses added;
    - else hold.

    ``h(1)`` is the mirror mini cache (same sampling bias as the others, so the slope is unbiased by
    the sampling). The policy switches to the what-if policy with the best estimated hit ratio at the
    current size when it wins by ``settings.hill_climb.policy_margin``. Estimates are smoothed with an
    exponential moving average (half-weight per interval) because one interval of a 1% key sample is
    noisy. Timeout is left as it is. Online: uses only the past.
    """

    name = "hill-climb"

    def __init__(self, settings: BaselinesConfig | None = None, seed: int = 0) -> None:
        self.settings = settings or BaselinesConfig()
        self.env: Any = None
        self.ema: dict[str, float] = {}

    def reset(self, env: Any) -> None:
        self.env = env
        self.ema = {}

    def _smooth(self, whatif: dict[str, float]) -> None:
        for k, v in whatif.items():
            if v is None or not math.isfinite(v):
                continue
            self.ema[k] = v if k not in self.ema else 0.5 * self.ema[k] + 0.5 * v

    def decide(self, obs: Any, info: dict[str, Any]) -> RedisConfig:
        base = self.env.unwrapped
        cur: RedisConfig = base.backend.config
        self._smooth(info.get("whatif") or {})
        snap = info.get("snapshot")
        wcfg = base.cfg.whatif
        if snap is None or not snap.gets or not self.ema:
            return cur
        space = config_space(self.env)
        # Policy: best what-if policy at (about) the current size.
        policy: str = cur.maxmemory_policy
        at_one: dict[str, float] = {}
        for p in wcfg.policies:
            h = self._h(p, 1.0, cur) if p in space.policies else None
            if h is not None:
                at_one[p] = h
        if at_one:
            best_p = max(at_one, key=at_one.__getitem__)
            here = at_one.get(policy, self.ema.get(whatif_label(MIRROR, 1.0)))
            if here is None or at_one[best_p] > here + self.settings.hill_climb.policy_margin:
                policy = best_p
        # Size: compare the marginal miss cost with the marginal memory cost one what-if step each way.
        rw = base.cfg.reward
        gets = snap.gets
        mem_cost_per_byte = rw.memory_cost_per_gb_hour / 2**30 * base.cfg.interval_s / 3600.0
        factors = sorted(wcfg.sizes)
        ups = [f for f in factors if 1.0 < f <= self.settings.hill_climb.max_step]
        downs = [f for f in factors if 1.0 / self.settings.hill_climb.max_step <= f < 1.0]
        h1 = self._h(policy, 1.0, cur)
        size = cur.maxmemory
        if h1 is not None:
            u = ups[0] if ups else None
            d = downs[-1] if downs else None
            hu = self._h(policy, u, cur) if u else None
            hd = self._h(policy, d, cur) if d else None
            if u and hu is not None and (hu - h1) * gets * rw.miss_cost > (u - 1.0) * cur.maxmemory * mem_cost_per_byte:
                size = cur.maxmemory * u
            elif d and hd is not None and (1.0 - d) * cur.maxmemory * mem_cost_per_byte > (h1 - hd) * gets * rw.miss_cost:
                size = cur.maxmemory * d
        return cur.evolve(maxmemory=space.clip(size), maxmemory_policy=policy)

    def _h(self, policy: str, factor: float | None, cur: RedisConfig) -> float | None:
        """Smoothed what-if hit ratio of ``policy`` at ``factor`` x current size (mirror for the current
        policy at 1.0; the nearest what-if sizes otherwise)."""
        if factor is None:
            return None
        if abs(factor - 1.0) < 1e-9:
            if policy == cur.maxmemory_policy:
                return self.ema.get(whatif_label(MIRROR, 1.0))
            # No x1.0 mini cache for other policies: interpolate between the neighbours.
            lo = [f for f in self.env.unwrapped.cfg.whatif.sizes if f < 1.0]
            hi = [f for f in self.env.unwrapped.cfg.whatif.sizes if f > 1.0]
            if not lo or not hi:
                return None
            a, b = self.ema.get(whatif_label(policy, max(lo))), self.ema.get(whatif_label(policy, min(hi)))
            if a is None or b is None:
                return None
            fa, fb = max(lo), min(hi)
            return a + (b - a) * (1.0 - fa) / (fb - fa)
        return self.ema.get(whatif_label(policy, factor))
