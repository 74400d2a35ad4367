"""Controllers that never adapt: what most users run, an explicit config, and "leave it as it is"."""

from __future__ import annotations

from typing import Any, ClassVar

from cachetuner.config import RedisConfig
from cachetuner.control.base import DecisionContext, register_controller
from cachetuner.control.settings import ControlSettings
from cachetuner.errors import ConfigError
from cachetuner.yamlconfig import validate


@register_controller("static-default")
class StaticDefault:
    """``allkeys-lru``, ``maxmemory-samples 5`` at one fixed size, never changed: a cache sized once
    and left alone. The size is ``settings.static_maxmemory`` (clipped to the bounds), else the
    episode's initial maxmemory."""

    name = "static-default"
    hindsight: ClassVar[bool] = False

    def __init__(self, settings: ControlSettings, seed: int = 0) -> None:
        self.settings = settings
        self.config: RedisConfig | None = None

    def reset(self, ctx: DecisionContext) -> None:
        size = self.settings.static_maxmemory or ctx.config.maxmemory
        self.config = ctx.config.evolve(
            maxmemory=ctx.space.clip(size), maxmemory_policy="allkeys-lru", maxmemory_samples=5
        )

    def decide(self, ctx: DecisionContext) -> RedisConfig:
        assert self.config is not None, "reset() first"
        return self.config


@register_controller("fixed")
class FixedConfig:
    """One explicit configuration for the whole run (``config=`` a RedisConfig or its dict): what
    production runs today, written out in an A/B or daemon YAML."""

    name = "fixed"
    hindsight: ClassVar[bool] = False

    def __init__(self, settings: ControlSettings, seed: int = 0, config: RedisConfig | dict[str, Any] | None = None) -> None:
        if config is None:
            raise ConfigError("controller 'fixed' needs config: {maxmemory: ..., maxmemory_policy: ...}")
        # one-line ConfigError naming the controller and field, as mrc-history's start config does
        self.config = config if isinstance(config, RedisConfig) else validate(RedisConfig, config, f"{self.name} config")

    def reset(self, ctx: DecisionContext) -> None:
        return None

    def decide(self, ctx: DecisionContext) -> RedisConfig:
        return self.config


@register_controller("recommended")
class Recommended(FixedConfig):
    """The static config `cachetuner recommend` computes on a stretch of history, held for the whole run: an
    operator who sized the cache from last week's traffic with the curves. A suite with `history:` builds it from
    the part of each trace it does not replay (`config=` otherwise)."""

    name = "recommended"

    def __init__(self, settings: ControlSettings, seed: int = 0, config: RedisConfig | dict[str, Any] | None = None) -> None:
        if config is None:
            raise ConfigError("controller 'recommended' needs history: list it in a suite with `history:` (the share of "
                              "each trace it is sized on), or give config=")
        super().__init__(settings, seed, config=config)


@register_controller("current")
class KeepCurrent:
    """Never changes anything: the cache keeps the configuration it has (set by the daemon or by hand).
    The A/B harness's control arm in live shadow mode."""

    name = "current"
    hindsight: ClassVar[bool] = False

    def __init__(self, settings: ControlSettings, seed: int = 0) -> None:
        pass

    def reset(self, ctx: DecisionContext) -> None:
        return None

    def decide(self, ctx: DecisionContext) -> RedisConfig:
        return ctx.config


@register_controller("hold")
class Hold(KeepCurrent):
    """The daemon's observe-only controller: proposes the config in force (no change is ever applied)."""

    name = "hold"
