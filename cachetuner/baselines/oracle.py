"""Per-interval hindsight oracle: lookahead on a fork of the real state (greedy one-step by default)."""

from __future__ import annotations

from typing import Any

from cachetuner.baselines.base import register_tuner
from cachetuner.baselines.settings import BaselinesConfig
from cachetuner.baselines.space import fork_env, grid
from cachetuner.config import RedisConfig


@register_tuner("oracle")
class Oracle:
    """Before every interval, fork the env (simulator state included), run the coming ``horizon``
    intervals under each grid config (and the current one) held fixed, and apply for the next
    interval the config whose summed cost (memory + misses + SLO + switching: the env's own cost) is
    lowest; ties keep the current config. Then re-decide from the actual new state (receding horizon).

    It sees the coming intervals' actual requests, so with ``horizon=1`` it beats any online tuner on
    each interval's cost. It is greedy, not the optimum over the episode: with a short horizon it
    never accepts a costlier interval now (a shrink that pays off only later, a policy switch that
    needs a warm-up) for a cheaper future, so best-static can beat it on a whole episode, and a
    planning tuner could too. Cost: ``len(grid) * horizon`` interval simulations per interval.
    """

    name = "oracle"

    def __init__(self, settings: BaselinesConfig | None = None, seed: int = 0) -> None:
        self.settings = settings or BaselinesConfig()
        self.env: Any = None
        self.candidates: list[RedisConfig] = []

    def reset(self, env: Any) -> None:
        self.env = env
        self.candidates = grid(env, self.settings.grid)

    def decide(self, obs: Any, info: dict[str, Any]) -> RedisConfig:
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
        total = 0.0
        for _ in range(self.settings.oracle.horizon):
            _, _, terminated, truncated, info = fork.step_config(cfg)
            total += float(info["cost"]["total"])
            if terminated or truncated:
                break
        return total
