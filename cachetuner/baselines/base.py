"""The ``Tuner`` protocol every baseline and the trained policy implement, and the name registry.

A tuner sees exactly what a deployed controller would see (the env's observation and ``info``
after each interval) and answers with the :class:`~cachetuner.config.RedisConfig` to run for the
next interval. The evaluation loop applies it with ``env.unwrapped.step_config`` so that every
tuner, learned or not, is charged by the same cost function on the same traffic.

Hindsight tuners (``best-static``, ``oracle``) additionally fork the env they are handed in
:meth:`Tuner.reset` to look into the future; that is what makes them bounds rather than
deployable controllers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import gymnasium as gym

from cachetuner.config import RedisConfig
from cachetuner.errors import ConfigError


@runtime_checkable
class Tuner(Protocol):
    """Chooses the configuration for the next interval from what happened in the last one."""

    #: Registry name, used in reports and plots.
    name: str

    def reset(self, env: gym.Env) -> None:
        """Start a new episode on ``env`` (already reset; its state is the episode's first state)."""
        ...

    def decide(self, obs: Any, info: dict[str, Any]) -> RedisConfig:
        """The configuration to apply before the next interval."""
        ...


TunerFactory = Callable[..., Tuner]

_REGISTRY: dict[str, TunerFactory] = {}


def register_tuner(name: str) -> Callable[[TunerFactory], TunerFactory]:
    """Class decorator: make a tuner constructible by ``name`` via :func:`make_tuner`."""

    def deco(factory: TunerFactory) -> TunerFactory:
        if name in _REGISTRY:
            raise ValueError(f"tuner {name!r} registered twice")
        _REGISTRY[name] = factory
        return factory

    return deco


def tuner_names() -> list[str]:
    """Registered tuner names, in registration order."""
    return list(_REGISTRY)


def make_tuner(name: str, **kwargs: Any) -> Tuner:
    """Build the tuner registered as ``name``; an unknown name lists the valid ones."""
    if name not in _REGISTRY:
        raise ConfigError(f"unknown tuner {name!r}; valid tuners: {', '.join(_REGISTRY)}")
    return _REGISTRY[name](**kwargs)
