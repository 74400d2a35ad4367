"""``mrc``: the online classical controller (see :mod:`cachetuner.mrc.decide` for the rule and why)."""

from __future__ import annotations

from typing import Any, ClassVar

from cachetuner.config import RedisConfig
from cachetuner.control.base import DecisionContext, register_controller
from cachetuner.control.settings import ControlSettings
from cachetuner.errors import ConfigError
from cachetuner.mrc.decide import MRCDecider
from cachetuner.yamlconfig import validate


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


@register_controller("mrc-history")
class MRCHistoryController(MRCController):
    """``mrc`` deployed by an operator who has last week's traffic: its curves watch that traffic before the first
    decision (the requests a suite's ``history:`` skips; in the daemon, ``policy.history``), it starts without the
    cold phase (whose rules are bets made while the curves have no evidence), and its first decision runs
    ``config=`` (``cachetuner recommend``'s config on that history, which ``recommended`` holds), from which the rule
    follows the traffic. Without a history it is refused (it would be ``mrc``)."""

    name = "mrc-history"
    #: evaluate_controllers runs this controller's env with ``mrc.warm_from_skipped``
    warm_curves: ClassVar[bool] = True

    def __init__(self, settings: ControlSettings, seed: int = 0, config: RedisConfig | dict[str, Any] | None = None) -> None:
        super().__init__(settings, seed)
        self.start = config if config is None or isinstance(config, RedisConfig) else validate(
            RedisConfig, config, "mrc-history config")

    def reset(self, ctx: DecisionContext) -> None:
        if self.start is not None and self.start.maxmemory_policy not in ctx.space.policies:
            raise ConfigError(f"mrc-history config: maxmemory_policy {self.start.maxmemory_policy!r} is not one of the "
                              f"allowed policies ({', '.join(ctx.space.policies)})")
        s = self.decider.settings
        self.decider.reset(warm=ctx.curves is not None and ctx.curves.ready(s.min_weight), start=self.start)
