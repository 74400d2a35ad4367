"""Per-interval hindsight oracle: lookahead on a fork of the real state (greedy one-step by default)."""

from __future__ import annotations

from typing import Any

from cachetuner.baselines.base import register_tuner
from cachetuner.baselines.settings import BaselinesConfig
from cachetuner.baselines.space import fork_env, grid
from cachetuner.config import RedisConfig


@register_tuner("oracle")
class Oracle:
    """Every ``replan_every`` intervals, fork the env (simulator state included), run the coming
    ``horizon`` intervals under each grid config (and the current one) held fixed, and apply the config
    whose summed cost (memory + misses + SLO + switching: the env's own cost) is lowest, until the next
    decision; ties keep the current config. Each decision starts from the actual state the previous
    ones led to (receding horizon). Defaults (1, 1): the greedy one-step lookahead.

    ``horizon=None`` looks to the end of the episode. Then the first decision is at least as good as
    best-static (whose config is a candidate, held to the end from the same state and RNG), and every
    later decision keeps the current plan unless another is cheaper to the end, so the episode cost
    never exceeds best-static's (on the same grid): a true bound for the gap a tuner closes.

    It sees the coming intervals' actual requests, so with ``horizon=1`` it beats any online tuner on
    each interval's cost. It is greedy, not the optimum over the episode: with a short horizon it
    never accepts a costlier interval now (a shrink that pays off only later, a policy switch that
    needs a warm-up) for a cheaper future, so best-static can beat it on a whole episode, and a
    planning tuner could too. Cost: ``len(grid) * horizon / replan_every`` interval simulations per
    interval.
    """

    name = "oracle"

    def __init__(self, settings: BaselinesConfig | None = None, seed: int = 0) -> None:
        self.settings = settings or BaselinesConfig()
        self.env: Any = None
        self.candidates: list[RedisConfig] = []

    def reset(self, env: Any) -> None:
        self.env = env
        self.candidates = grid(env, self.settings.grid)
        self.steps = 0
        self.choice: RedisConfig | None = None

    def decide(self, obs: Any, info: dict[str, Any]) -> RedisConfig:
        if self.choice is not None and self.steps % self.settings.oracle.replan_every:
            self.steps += 1
            return self.choice
        self.steps += 1
        self.choice = self._plan()
        return self.choice

    def _plan(self) -> RedisConfig:
        current = self.env.unwrapped.backend.config
        best, best_cost = current, self._cost(current)
        for cfg in self.candidates:
            if cfg == current:
                continue
            c = self._cost(cfg)
            if c < best_cost - 1e-12:
                best, best_cost = cfg, c
        return best

    def _cost(self, cfg: RedisConfig) -> float:
        fork = fork_env(self.env)
        horizon = self.settings.oracle.horizon
        total, n, done = 0.0, 0, False
        while not done and (horizon is None or n < horizon):
            _, _, terminated, truncated, info = fork.step_config(cfg)
            total += float(info["cost"]["total"])
            n += 1
            done = bool(terminated or truncated)
        return total
