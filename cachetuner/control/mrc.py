"""``mrc``: cost-optimal size and policy from full-range miss-ratio curves (Macaron-style).

Why: the cost of a cache config is memory held plus the model calls its misses cause; with the hit
ratio of every size and policy predicted from miniature simulations (``ctx.curves``), the cheapest
config is a minimisation, not a search. Macaron (Yang et al., SOSP'24) sizes a cloud cache this way
from miniature-simulation curves; this is the single-cache, per-interval version with the SLO term
predicted through the latency model.

A curve is a *steady-state* prediction, and moving is not free, so the controller settles:

- it waits until every curve point rests on ``min_weight`` sampled GETs;
- a target must be the optimum ``confirm`` intervals in a row (noise in a flat cost curve makes the
  argmin jump between distant sizes; a real shift keeps pointing the same way);
- a move must repay, within ``payback_intervals``, the switch cost plus the *refill* cost of the
  bytes at stake: a grown cache starts with the smaller one's contents and reaches the curve's hit
  ratio only after the extra bytes have been filled by misses (estimated as half the hit-ratio gain
  over the fill time, fill time = added bytes / bytes inserted per interval). A shrink is charged the
  same amount, the price of growing back: without it a flat cost curve makes the controller drop a
  warm cache for a small saving and pay the refill later;
- and the saving must exceed a ``hysteresis`` share of the current cost.

Online: it uses only the past.
"""

from __future__ import annotations

from typing import ClassVar

from cachetuner.config import RedisConfig
from cachetuner.control.base import DecisionContext, register_controller
from cachetuner.control.settings import ControlSettings
from cachetuner.mrc.cost import CostCurve, cost_curve


@register_controller("mrc")
class MRCController:
    """Each interval, the (size, policy) that minimises predicted memory + miss (+ SLO) cost on the
    miss-ratio curves, moved to only when the saving is confirmed, repays its refill and clears a
    hysteresis band."""

    name = "mrc"
    hindsight: ClassVar[bool] = False

    def __init__(self, settings: ControlSettings, seed: int = 0) -> None:
        self.settings = settings.mrc
        self.gets: float | None = None
        self.last: CostCurve | None = None
        self._candidate: tuple[str, int] | None = None
        self._streak = 0

    def reset(self, ctx: DecisionContext) -> None:
        self.gets = None
        self.last = None
        self._candidate = None
        self._streak = 0

    def decide(self, ctx: DecisionContext) -> RedisConfig:
        s = self.settings
        g = float(ctx.snapshot.gets)
        self.gets = g if self.gets is None else (1 - s.gets_smoothing) * self.gets + s.gets_smoothing * g
        cur = ctx.config
        curves = ctx.curves
        if curves is None or not self.gets or not curves.ready(s.min_weight):
            return cur
        policies = [p for p in curves.policies if p in ctx.space.policies]
        if not s.change_policy:
            policies = [p for p in policies if p == cur.maxmemory_policy]
        if not policies:
            return cur
        cc = cost_curve(curves, ctx.prices, self.gets, (ctx.space.min_bytes, ctx.space.max_bytes),
                        policies=policies, n=s.n_candidates)
        self.last = cc
        if not cc.cost:
            return cur
        best_policy = cc.best_policy
        # policies within the hysteresis band of each other: keep the one in force (no flapping)
        if (cur.maxmemory_policy in cc.cost and cur.maxmemory_policy != best_policy
                and cc.cost_at(cur.maxmemory_policy, cc.best_size) <= cc.best_cost * (1 + s.hysteresis)):
            best_policy = cur.maxmemory_policy
        target = (best_policy, ctx.space.clip(cc.best_size))
        if self._near(target, self._candidate, cc):
            self._streak += 1
        else:
            self._candidate, self._streak = target, 1
        now = cc.cost_at(cur.maxmemory_policy, cur.maxmemory)
        if now != now:  # no curve for the policy in force (e.g. a volatile-* policy): move as soon as confirmed
            return self._move(cur, target) if self._streak >= s.confirm else cur
        saving = now - cc.cost_at(*target)
        if self._streak < s.confirm or saving <= s.hysteresis * max(now, 0.0):
            return cur
        refill = self._refill_cost(ctx, cc, cur, target)
        if saving * s.payback_intervals <= ctx.prices.switch + refill:
            return cur
        return self._move(cur, target)

    @staticmethod
    def _move(cur: RedisConfig, target: tuple[str, int]) -> RedisConfig:
        return cur.evolve(maxmemory=target[1], maxmemory_policy=target[0])

    @staticmethod
    def _near(a: tuple[str, int], b: tuple[str, int] | None, cc: CostCurve) -> bool:
        """Sizes within one candidate step (the grid's spacing); the policy may differ."""
        if b is None:
            return False
        step = float(cc.sizes[1] / cc.sizes[0]) if len(cc.sizes) > 1 else 1.0
        return max(a[1], b[1]) <= min(a[1], b[1]) * step * 1.0001

    def _refill_cost(self, ctx: DecisionContext, cc: CostCurve, cur: RedisConfig, target: tuple[str, int]) -> float:
        """Misses a cache grown from the smaller to the larger of the two sizes pays before it holds what
        the curve assumes: half the per-interval hit gain over the fill time."""
        curves = ctx.curves
        assert curves is not None and self.gets is not None
        small, big = sorted((cur.maxmemory, target[1]))
        if big <= small or target[0] not in curves.hit:
            return 0.0
        mono = curves.monotone()
        h_small = float(mono.hit_ratio(target[0], small))
        h_big = float(mono.hit_ratio(target[0], big))
        misses = max(self.gets * (1.0 - h_small), 1.0)
        fill_intervals = (big - small) / (misses * max(curves.object_bytes, 1.0))
        gain = max(h_big - h_small, 0.0) * self.gets * ctx.prices.miss
        return 0.5 * gain * min(fill_intervals, self.settings.payback_intervals)
