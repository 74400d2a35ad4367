"""The daemon's ``Policy`` protocol and its name registry.

A daemon policy sees one target's fresh metrics snapshot and current config and proposes the next
config; it never applies anything (the runner does, after the guardrails). Implementations:

* ``ppo``: a trained stable-baselines3 model; observations are built by the training env itself
  (:class:`~cachetuner.daemon.envpolicy.EnvPolicy`), so they match training exactly.
* every baseline registered in :mod:`cachetuner.baselines` (``static``, ``hill-climb``, ...), driven
  through the same env adapter.
* ``hold``: never proposes a change (observe-only deployments).
* ``random``: deliberately adversarial — proposes random sizes, policies and timeouts far outside
  any sane bounds. Used by ``cachetuner chaos`` and the tests to prove the guardrails hold.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from cachetuner.backend import CacheBackend
from cachetuner.config import REDIS_POLICIES, RedisConfig
from cachetuner.daemon.config import DaemonConfig, TargetConfig
from cachetuner.errors import ConfigError
from cachetuner.metrics import MetricsSnapshot


@dataclass
class PolicyInput:
    """What a policy may look at: one fresh interval of one target."""

    target: str
    snapshot: MetricsSnapshot
    current: RedisConfig


@runtime_checkable
class Policy(Protocol):
    name: str

    def decide(self, obs: PolicyInput) -> RedisConfig:
        """The config to run next (before guardrails)."""
        ...

    def close(self) -> None: ...


#: ``backend()`` returns the target's backend once it exists (None while Redis is unreachable).
BackendRef = Callable[[], "CacheBackend | None"]
PolicyFactory = Callable[[DaemonConfig, TargetConfig, BackendRef], Policy]
_REGISTRY: dict[str, PolicyFactory] = {}


def register_policy(name: str) -> Callable[[PolicyFactory], PolicyFactory]:
    def deco(f: PolicyFactory) -> PolicyFactory:
        if name in _REGISTRY:
            raise ValueError(f"daemon policy {name!r} registered twice")
        _REGISTRY[name] = f
        return f

    return deco


def _baseline_names() -> list[str]:
    try:
        import cachetuner.baselines as b  # registers the tuners on import
        from cachetuner.baselines.base import tuner_names

        _ = b
        return tuner_names()
    except ImportError:
        return []


def policy_names() -> list[str]:
    return list(_REGISTRY) + [n for n in _baseline_names() if n not in _REGISTRY]


def make_policy(cfg: DaemonConfig, target: TargetConfig, backend: BackendRef) -> Policy:
    """The policy named ``cfg.policy.name`` for ``target``; unknown names list the valid ones."""
    name = cfg.policy.name
    if name in _REGISTRY:
        return _REGISTRY[name](cfg, target, backend)
    if name in _baseline_names():
        from cachetuner.daemon.envpolicy import EnvPolicy

        return EnvPolicy.for_tuner(cfg, target, backend)
    raise ConfigError(f"policy.name: unknown policy {name!r}; valid policies: {', '.join(policy_names())}")


class HoldPolicy:
    name = "hold"

    def decide(self, obs: PolicyInput) -> RedisConfig:
        return obs.current

    def close(self) -> None:
        pass


class RandomPolicy:
    """Adversarial proposals: maxmemory x e^U(-spread, spread) (and sometimes 0 = unlimited or 1 byte),
    any of ``policies`` (default: all eight), any of ``timeouts`` (default: several outside any sane list)."""

    name = "random"

    def __init__(
        self,
        seed: int = 0,
        spread: float = 2.5,
        p_extreme: float = 0.15,
        policies: list[str] | None = None,
        timeouts: list[int] | None = None,
    ) -> None:
        self.rng = np.random.default_rng(seed)
        self.spread = spread
        self.p_extreme = p_extreme
        self.policies = list(policies or REDIS_POLICIES)
        self.timeouts = list(timeouts or [0, 1, 30, 300, 86400])

    def decide(self, obs: PolicyInput) -> RedisConfig:
        cur = obs.current
        base = cur.maxmemory if cur.maxmemory > 0 else 64 * 1024 * 1024
        r = self.rng.random()
        if r < self.p_extreme / 2:
            mm = 0
        elif r < self.p_extreme:
            mm = int(self.rng.choice([1, 1 << 40]))
        else:
            mm = max(1, int(base * math.exp(self.rng.uniform(-self.spread, self.spread))))
        return cur.evolve(
            maxmemory=mm,
            maxmemory_policy=str(self.rng.choice(self.policies)),
            timeout=int(self.rng.choice(self.timeouts)),
        )

    def close(self) -> None:
        pass


@register_policy("hold")
def _hold(cfg: DaemonConfig, target: TargetConfig, backend: BackendRef) -> Policy:
    return HoldPolicy()


@register_policy("random")
def _random(cfg: DaemonConfig, target: TargetConfig, backend: BackendRef) -> Policy:
    params: dict[str, Any] = dict(cfg.policy.params)
    seed = int(params.pop("seed", cfg.policy.seed)) + sum(map(ord, target.name))
    try:
        return RandomPolicy(seed=seed, **params)
    except TypeError as e:
        raise ConfigError(f"policy.params: {e}") from None


@register_policy("ppo")
def _ppo(cfg: DaemonConfig, target: TargetConfig, backend: BackendRef) -> Policy:
    from cachetuner.daemon.envpolicy import EnvPolicy

    return EnvPolicy.for_ppo(cfg, target, backend)
