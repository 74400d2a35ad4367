"""Static baselines: what most users run, and the best fixed config in hindsight."""

from __future__ import annotations

from typing import Any

from cachetuner.baselines.base import register_tuner
from cachetuner.baselines.settings import BaselinesConfig
from cachetuner.baselines.space import config_space, fork_env, grid
from cachetuner.config import RedisConfig


@register_tuner("static-default")
class StaticDefault:
    """``allkeys-lru``, ``maxmemory-samples 5`` at one fixed size, never changed.

    The size is ``settings.static_maxmemory`` (clipped to the env's bounds), else the env's initial
    maxmemory: a cache that was sized once and left alone.
    """

    name = "static-default"

    def __init__(self, settings: BaselinesConfig | None = None, seed: int = 0) -> None:
        self.settings = settings or BaselinesConfig()
        self.config: RedisConfig | None = None

    def reset(self, env: Any) -> None:
        start = env.unwrapped.backend.config
        size = self.settings.static_maxmemory or start.maxmemory
        self.config = start.evolve(
            maxmemory=config_space(env).clip(size), maxmemory_policy="allkeys-lru", maxmemory_samples=5
        )

    def decide(self, obs: Any, info: dict[str, Any]) -> RedisConfig:
        assert self.config is not None, "reset() first"
        return self.config


@register_tuner("best-static")
class BestStatic:
    """The single config with the lowest total episode cost, found in hindsight.

    At :meth:`reset` it forks the env and plays the whole episode once per grid config
    (sizes x policies x timeouts, :class:`~cachetuner.baselines.settings.GridSettings`), then runs the
    winner throughout. It knows the future; it is the bar a learned policy must clear to be worth
    its complexity.
    """

    name = "best-static"

    def __init__(self, settings: BaselinesConfig | None = None, seed: int = 0) -> None:
        self.settings = settings or BaselinesConfig()
        self.config: RedisConfig | None = None
        self.costs: dict[RedisConfig, float] = {}

    def reset(self, env: Any) -> None:
        self.costs = {}
        for cfg in grid(env, self.settings.grid):
            self.costs[cfg] = episode_cost(fork_env(env), cfg)
        self.config = min(self.costs, key=self.costs.__getitem__)

    def decide(self, obs: Any, info: dict[str, Any]) -> RedisConfig:
        assert self.config is not None, "reset() first"
        return self.config


def episode_cost(env: Any, cfg: RedisConfig) -> float:
    """Total cost of running ``cfg`` from ``env``'s current state to the end of its episode."""
    total, done = 0.0, False
    while not done:
        _, _, terminated, truncated, info = env.step_config(cfg)
        total += float(info["cost"]["total"])
        done = bool(terminated or truncated)
    return total
