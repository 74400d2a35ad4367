"""Hindsight controllers: they see the coming intervals' actual requests through ``ctx.fork()``.

They are references, not deployable controllers: ``best-static`` (the best fixed config), ``oracle``
(receding-horizon lookahead) and ``dp-hindsight`` (a dynamic-programming schedule over intervals x
configs). The evaluation's ``regret`` is measured against the cheapest of them on each workload.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Any, ClassVar

import numpy as np

from cachetuner.config import RedisConfig
from cachetuner.control.base import DecisionContext, register_controller
from cachetuner.control.settings import ControlSettings
from cachetuner.errors import BackendError


def _fork(ctx: DecisionContext) -> Any:
    if ctx.fork is None:
        raise BackendError("hindsight controllers (best-static, oracle, dp-hindsight) need a simulated env to fork")
    return ctx.fork()


def _grid(ctx: DecisionContext, settings: ControlSettings) -> list[RedisConfig]:
    """The grid's configs, plus the episode's initial size under each grid policy and timeout (so that
    the hindsight references also cover the config static-default runs)."""
    g = settings.grid
    pols: list[str] | None = list(g.policies) if g.policies else None
    touts = list(g.timeouts) if g.timeouts else None
    cfgs = ctx.space.grid(ctx.config, g.n_sizes, pols, touts)
    start = ctx.space.clip(settings.static_maxmemory or ctx.config.maxmemory)
    extra = [c.evolve(maxmemory=start) for c in cfgs]
    return list(dict.fromkeys(cfgs + extra))


def play(env: Any, configs: Iterable[RedisConfig]) -> list[float]:
    """Per-interval cost of running ``configs`` in turn from ``env``'s state, until they or the episode end."""
    costs: list[float] = []
    for cfg in configs:
        _, _, terminated, truncated, info = env.step_config(cfg)
        costs.append(float(info["cost"]["total"]))
        if terminated or truncated:
            break
    return costs


def held_costs(env: Any, cfg: RedisConfig, horizon: int | None = None) -> list[float]:
    """Per-interval cost of holding ``cfg`` from ``env``'s state for ``horizon`` intervals (None = to the end)."""
    return play(env, itertools.repeat(cfg) if horizon is None else itertools.repeat(cfg, horizon))


@register_controller("best-static")
class BestStatic:
    """The single grid config with the lowest episode cost, found by playing the whole episode once per
    config on forks of the initial state; then held throughout. The bar a tuner must clear to be worth
    its complexity."""

    name = "best-static"
    hindsight: ClassVar[bool] = True

    def __init__(self, settings: ControlSettings, seed: int = 0) -> None:
        self.settings = settings
        self.config: RedisConfig | None = None
        self.costs: dict[RedisConfig, float] = {}

    def reset(self, ctx: DecisionContext) -> None:
        self.costs = {cfg: sum(held_costs(_fork(ctx), cfg)) for cfg in _grid(ctx, self.settings)}
        self.config = min(self.costs, key=self.costs.__getitem__)

    def decide(self, ctx: DecisionContext) -> RedisConfig:
        assert self.config is not None, "reset() first"
        return self.config


@register_controller("dp-hindsight")
class DPHindsight:
    """A schedule over intervals x grid configs by dynamic programming, executed for real.

    At reset every grid config is held to the episode end on a fork (as best-static does), giving the
    cost ``C[c, t]`` of interval ``t`` under config ``c``; the schedule minimises
    ``sum_t C[c_t, t] + switch * [c_t != c_{t-1}]``. Approximation: ``C[c, t]`` is the cost of a cache
    that has run ``c`` since the start, so a plan ignores the warm-up a switch really pays (a grown
    cache starts cold). Plans are therefore also made with dearer switches, each is replayed on a fork,
    and the cheapest *realised* one is executed, best-static's held config included: dp-hindsight is
    never costlier than best-static on the same grid.
    """

    name = "dp-hindsight"
    hindsight: ClassVar[bool] = True

    def __init__(self, settings: ControlSettings, seed: int = 0) -> None:
        self.settings = settings
        self.plan: list[RedisConfig] = []
        self.t = 0

    def reset(self, ctx: DecisionContext) -> None:
        grid = _grid(ctx, self.settings)
        rows = [held_costs(_fork(ctx), cfg) for cfg in grid]
        n = min(len(r) for r in rows)
        c = np.array([r[:n] for r in rows])  # (configs, intervals)
        static = int(np.argmin(c.sum(axis=1)))
        # The planned cost ignores warm-up after a switch, so plans are also made with dearer switches and
        # each is replayed for real on a fork; the cheapest realised plan (best-static included) is kept.
        unit = max(ctx.prices.switch, float(c.mean()))
        best_plan, best_cost = [static] * n, float(c[static].sum())
        for penalty in (ctx.prices.switch, unit, 3 * unit, 10 * unit):
            plan = _dp_plan(c, penalty)
            if plan == best_plan:
                continue
            realised = sum(play(_fork(ctx), (grid[i] for i in plan)))
            if realised < best_cost:
                best_plan, best_cost = plan, realised
        self.plan = [grid[i] for i in best_plan]
        self.t = 0

    def decide(self, ctx: DecisionContext) -> RedisConfig:
        cfg = self.plan[min(self.t, len(self.plan) - 1)] if self.plan else ctx.config
        self.t += 1
        return cfg


def _dp_plan(c: np.ndarray, switch: float) -> list[int]:
    """Indices of the schedule minimising ``sum_t c[k_t, t] + switch * [k_t != k_{t-1}]`` (Viterbi)."""
    k, n = c.shape
    value = c[:, -1].copy()
    choice = np.zeros((k, n), dtype=np.int64)
    for t in range(n - 2, -1, -1):
        best_next = int(np.argmin(value))
        move = value[best_next] + switch
        choice[:, t + 1] = np.where(value <= move, np.arange(k), best_next)
        value = c[:, t] + np.minimum(value, move)
    plan = [int(np.argmin(value))]
    for t in range(1, n):
        plan.append(int(choice[plan[-1], t]))
    return plan


@register_controller("oracle")
class Oracle:
    """Every ``replan_every`` intervals, hold each grid config (and the current one) for ``horizon``
    intervals on a fork of the real state and apply the cheapest; ties keep the current config.

    ``horizon=None`` looks to the episode end: the first decision is then at least as good as
    best-static's, and each later one keeps the plan unless another is cheaper to the end. With a short
    horizon it is greedy (it never accepts a costlier interval now for a cheaper future), so
    best-static can beat it. Cost: ``len(grid) * horizon / replan_every`` interval simulations per
    interval.
    """

    name = "oracle"
    hindsight: ClassVar[bool] = True

    def __init__(self, settings: ControlSettings, seed: int = 0) -> None:
        self.settings = settings
        self.candidates: list[RedisConfig] = []
        self.steps = 0
        self.choice: RedisConfig | None = None

    def reset(self, ctx: DecisionContext) -> None:
        self.candidates = _grid(ctx, self.settings)
        self.steps = 0
        self.choice = None

    def decide(self, ctx: DecisionContext) -> RedisConfig:
        if self.choice is not None and self.steps % self.settings.oracle.replan_every:
            self.steps += 1
            return self.choice
        self.steps += 1
        horizon = self.settings.oracle.horizon
        best, best_cost = ctx.config, sum(held_costs(_fork(ctx), ctx.config, horizon))
        for cfg in self.candidates:
            if cfg == ctx.config:
                continue
            cost = sum(held_costs(_fork(ctx), cfg, horizon))
            if cost < best_cost - 1e-12:
                best, best_cost = cfg, cost
        self.choice = best
        return best
