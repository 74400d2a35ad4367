"""``hill-climb``: Cliffhanger-style gradient climbing on the local slope of the hit-ratio curve."""

from __future__ import annotations

from typing import ClassVar

from cachetuner.config import RedisConfig
from cachetuner.control.base import DecisionContext, register_controller
from cachetuner.control.settings import ControlSettings


@register_controller("hill-climb")
class HillClimb:
    """Cliffhanger (Cidon et al., NSDI'16) estimates the local gradient of the hit-rate curve with small
    shadow queues just beyond the cache and moves memory towards where it buys most hits. Here the
    shadow queue is the miss-ratio curve one step (``max_step``) either side of the current size: grow
    by that step when the misses it saves are worth more than the memory it costs, shrink when the
    memory saved is worth more than the misses it adds, else hold. The eviction policy follows the best
    curve at the current size when it wins by ``policy_margin``. It only ever looks one step away, so
    it climbs slowly to a far optimum and can stop on a plateau (its known weakness; ``mrc`` sees the
    whole curve). Online: uses only the past.
    """

    name = "hill-climb"
    hindsight: ClassVar[bool] = False

    def __init__(self, settings: ControlSettings, seed: int = 0) -> None:
        self.settings = settings.hill_climb

    def reset(self, ctx: DecisionContext) -> None:
        return None

    def decide(self, ctx: DecisionContext) -> RedisConfig:
        cur = ctx.config
        curves = ctx.curves
        gets = ctx.snapshot.gets
        if curves is None or not gets or not curves.ready(1.0):
            return cur
        mono = curves.monotone()
        size = float(cur.maxmemory)
        policy: str = cur.maxmemory_policy
        candidates = [p for p in mono.policies if p in ctx.space.policies]
        if candidates:
            here = {p: float(mono.hit_ratio(p, size)) for p in candidates}
            best = max(here, key=here.__getitem__)
            if policy not in here or here[best] > here[policy] + self.settings.policy_margin:
                policy = best
        if policy not in mono.hit:
            return cur.evolve(maxmemory_policy=policy)
        f = self.settings.max_step
        h0 = float(mono.hit_ratio(policy, size))
        up, down = size * f, size / f
        p = ctx.prices
        gain_up = (float(mono.hit_ratio(policy, up)) - h0) * gets * p.miss
        cost_up = float(p.memory_cost(up - size))
        loss_down = (h0 - float(mono.hit_ratio(policy, down))) * gets * p.miss
        save_down = float(p.memory_cost(size - down))
        if gain_up > cost_up and up <= ctx.space.max_bytes * f:
            size = up
        elif save_down > loss_down:
            size = down
        return cur.evolve(maxmemory=ctx.space.clip(size), maxmemory_policy=policy)
