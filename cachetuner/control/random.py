"""A deliberately adversarial controller: the guardrails' test opponent."""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from cachetuner.config import REDIS_POLICIES, RedisConfig
from cachetuner.control.base import DecisionContext, register_controller
from cachetuner.control.settings import ControlSettings


@register_controller("random")
class RandomController:
    """Proposes maxmemory x e^U(-spread, spread) (and sometimes 0 = unlimited, 1 byte or 1 TiB), any of
    ``policies`` (default: all eight) and any of ``timeouts`` (default: several outside any sane list),
    ignoring the bounds on purpose. Used by ``cachetuner chaos`` and the tests to prove that nothing
    outside the bounds is ever applied."""

    name = "random"
    hindsight: ClassVar[bool] = False

    def __init__(
        self,
        settings: ControlSettings,
        seed: int = 0,
        spread: float = 2.5,
        p_extreme: float = 0.15,
        policies: list[str] | None = None,
        timeouts: list[int] | None = None,
    ) -> None:
        self.rng = np.random.default_rng(seed)
        self.spread = spread
        self.p_extreme = p_extreme
        self.policies = list(policies or REDIS_POLICIES)
        self.timeouts = list(timeouts or [0, 1, 30, 300, 86400])

    def reset(self, ctx: DecisionContext) -> None:
        return None

    def decide(self, ctx: DecisionContext) -> RedisConfig:
        cur = ctx.config
        base = cur.maxmemory if cur.maxmemory > 0 else 64 * 1024 * 1024
        r = self.rng.random()
        if r < self.p_extreme / 2:
            mm = 0
        elif r < self.p_extreme:
            mm = int(self.rng.choice([1, 1 << 40]))
        else:
            mm = max(1, int(base * math.exp(self.rng.uniform(-self.spread, self.spread))))
        return cur.evolve(
            maxmemory=mm,
            maxmemory_policy=str(self.rng.choice(self.policies)),
            timeout=int(self.rng.choice(self.timeouts)),
        )
