"""Per-interval hindsight oracle: greedy one-step lookahead on a fork of the real state."""

from __future__ import annotations

from typing import Any

from cachetuner.baselines.base import register_tuner
from cachetuner.baselines.settings import BaselinesConfig
from cachetuner.baselines.space import fork_env, grid
from cachetuner.config import RedisConfig


@register_tuner("oracle")
class Oracle:
    """Before every interval, fork the env (simulator state included), run the coming interval under
    each grid config plus the current one, and pick the config whose interval cost (memory + misses
    + SLO + switching, the env's own cost) is lowest; ties keep the current config.

    It sees the next interval's actual requests, so it beats any online tuner on one-step cost. It is
    greedy, not a true optimum over the episode: it never accepts a costlier interval now (e.g. a
    warm-up after switching policy) for a cheaper future, so a tuner that plans ahead can in
    principle beat it on a whole episode. Cost: ``len(grid)`` interval simulations per interval.
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
        _, _, _, _, info = fork_env(self.env).step_config(cfg)
        return float(info["cost"]["total"])
