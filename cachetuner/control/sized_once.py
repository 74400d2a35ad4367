"""``sized-once``: a careful operator with the curves, who measures, sizes the cache once, and leaves it.

The question it answers: how much of what the online controllers save comes from *sizing* (reading the
cost curve once) and how much from *following* the traffic? It runs the initial config while it measures
(``observe_intervals``, and until the curves rest on ``min_weight`` sampled GETs, as ``mrc``'s do), then
sets the cheapest (size, policy) on the windowed curves at the mean GET rate seen so far, the offline
``cachetuner recommend`` answer on the traffic so far, and never changes it again. Not hindsight: it reads
only the past.
"""

from __future__ import annotations

from typing import ClassVar

from cachetuner.config import RedisConfig
from cachetuner.control.base import DecisionContext, register_controller
from cachetuner.control.settings import ControlSettings
from cachetuner.mrc.cost import cost_curve


@register_controller("sized-once")
class SizedOnce:
    """Measures for ``observe_intervals`` at the initial config, then sets the cost-optimal (size, policy)
    from the miss-ratio curves once and holds it: an operator who sized the cache with the curves."""

    name = "sized-once"
    hindsight: ClassVar[bool] = False

    def __init__(self, settings: ControlSettings, seed: int = 0) -> None:
        self.settings = settings.sized_once
        self.n_candidates = settings.mrc.n_candidates
        self.held: RedisConfig | None = None
        self._intervals = 0
        self._gets = 0.0

    def reset(self, ctx: DecisionContext) -> None:
        self.held, self._intervals, self._gets = None, 0, 0.0

    def decide(self, ctx: DecisionContext) -> RedisConfig:
        if self.held is not None:
            return self.held
        self._intervals += 1
        self._gets += float(ctx.snapshot.gets)
        curves = ctx.curves
        if self._intervals < self.settings.observe_intervals or curves is None or not curves.ready(self.settings.min_weight):
            return ctx.config
        policies = [p for p in ctx.space.policies if p in curves.policies]
        if not policies:
            return ctx.config
        best = cost_curve(curves, ctx.prices, self._gets / self._intervals, (ctx.space.min_bytes, ctx.space.max_bytes),
                          policies=policies, n=self.n_candidates)
        if not best.best_policy:
            return ctx.config
        self.held = ctx.config.evolve(maxmemory=ctx.space.clip(best.best_size), maxmemory_policy=best.best_policy)
        return self.held
