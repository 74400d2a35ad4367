"""``mrc``: the online classical controller (see :mod:`cachetuner.mrc.decide` for the rule and why)."""

from __future__ import annotations

from typing import ClassVar

from cachetuner.config import RedisConfig
from cachetuner.control.base import DecisionContext, register_controller
from cachetuner.control.settings import ControlSettings
from cachetuner.mrc.decide import MRCDecider


@register_controller("mrc")
class MRCController:
    """Each interval, the (size, policy) that minimises predicted memory + miss (+ SLO) cost on the
    miss-ratio curves, moved to only when the saving is confirmed, repays its refill and clears a
    hysteresis band."""

    name = "mrc"
    hindsight: ClassVar[bool] = False

    def __init__(self, settings: ControlSettings, seed: int = 0) -> None:
        self.decider = MRCDecider(settings.mrc)

    @property
    def last(self):  # noqa: ANN201 (the last cost curve, for plots and debugging)
        return self.decider.last

    def reset(self, ctx: DecisionContext) -> None:
        self.decider.reset()

    def decide(self, ctx: DecisionContext) -> RedisConfig:
        return self.decider.decide_after(ctx.snapshot, ctx.curves, ctx.prices, ctx.config, ctx.space)
