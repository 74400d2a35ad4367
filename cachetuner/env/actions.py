"""Action spaces: how an integer action becomes a bounded :class:`RedisConfig` (and client TTL multipliers).

One small codec per space, registered by name in :data:`ACTION_SPACES` (``EnvConfig.actions.space``).
Memory moves are *relative* (a multiplicative step of the current ``maxmemory``) so that one policy
works across workloads whose working sets differ by orders of magnitude; policies and timeouts are
absolute choices. The optional TTL dimensions decode into a :class:`~cachetuner.ttl.knobs.ClientTTL`
by :meth:`ActionCodec.decode_ttl`, separately from the config: they are a client setting, never a
``CONFIG SET``.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
from gymnasium import spaces

from cachetuner.config import RedisConfig
from cachetuner.env.config import DISCRETE12_POLICIES, ActionConfig
from cachetuner.errors import ConfigError
from cachetuner.registry import Registry
from cachetuner.ttl.knobs import QOS_ORDER, ClientTTL

#: ``_choices`` name of the shared TTL dimension; per-class ones are ``ttl:CLASS``.
TTL_SHARED = "ttl"


class ActionCodec(Protocol):
    """Turns actions of :attr:`space` into configs within the memory bounds."""

    space: spaces.Space

    def decode(
        self, action: Any, current: RedisConfig, bounds: tuple[int, int], anchor: RedisConfig | None = None
    ) -> RedisConfig:
        """``anchor``: the MRC-optimal config of the last interval (``mrc-offset`` moves relative to it)."""
        ...

    def decode_ttl(self, action: Any, current: ClientTTL) -> ClientTTL:
        """The client TTL multipliers the action stands for (``current`` when the space has no TTL dimension)."""
        ...

    def describe(self) -> str:
        """One line for docs and logs."""
        ...


def move_memory(current: int, step: float, bounds: tuple[int, int]) -> int:
    """``current * (1 + step)`` clipped to ``bounds`` (a current value outside the bounds is clipped first)."""
    lo, hi = bounds
    base = min(max(current, lo), hi)
    return int(min(max(round(base * (1.0 + step)), lo), hi))


def clip_config(config: RedisConfig, bounds: tuple[int, int], actions: ActionConfig) -> RedisConfig:
    """What :meth:`CacheTuningEnv.step_config` applies: maxmemory within the bounds, timeout within the
    range of the timeout choices. Policies are not restricted (baselines may use any Redis policy)."""
    lo, hi = bounds
    tmin, tmax = min(actions.timeouts), max(actions.timeouts)
    return config.evolve(
        maxmemory=int(min(max(config.maxmemory, lo), hi)),
        timeout=int(min(max(config.timeout, tmin), tmax)),
    )


def _check(space: spaces.Space, action: Any) -> np.ndarray:
    arr = np.asarray(action)
    if not space.contains(arr.astype(space.dtype) if arr.shape == space.shape else arr):
        raise ValueError(f"action {action!r} is not in {space}")
    return arr


def _no_ttl(cfg: ActionConfig, space: str) -> None:
    if cfg.ttl_multipliers:
        raise ConfigError(f"env.actions.ttl_multipliers: needs space 'multidiscrete', not {space!r}")


class MultiDiscreteCodec:
    """``[memory step, policy, timeout, (samples), (lfu-log-factor), (lfu-decay-time), (TTL multipliers)]``.

    TTL dimensions come last (one ``ttl`` shared by every class, or one ``ttl:CLASS`` per class of
    ``ttl_classes``) so that the other dimensions keep their indices."""

    def __init__(self, cfg: ActionConfig) -> None:
        self.cfg = cfg
        self._choices: list[tuple[str, list[Any]]] = [
            ("memory", list(cfg.memory_steps)),
            ("maxmemory_policy", list(cfg.policies)),
            ("timeout", list(cfg.timeouts)),
        ]
        for field, values in (
            ("maxmemory_samples", cfg.samples),
            ("lfu_log_factor", cfg.lfu_log_factors),
            ("lfu_decay_time", cfg.lfu_decay_times),
        ):
            if values:
                self._choices.append((field, list(values)))
        if cfg.ttl_multipliers:
            names = [f"{TTL_SHARED}:{c}" for c in cfg.ttl_classes] or [TTL_SHARED]
            self._choices += [(n, list(cfg.ttl_multipliers)) for n in names]
        self.space = spaces.MultiDiscrete([len(v) for _, v in self._choices], dtype=np.int64)

    def decode(
        self, action: Any, current: RedisConfig, bounds: tuple[int, int], anchor: RedisConfig | None = None
    ) -> RedisConfig:
        arr = _check(self.space, action)
        changes: dict[str, Any] = {}
        for (field, values), i in zip(self._choices, arr.tolist(), strict=True):
            if field == "memory":
                changes["maxmemory"] = move_memory(current.maxmemory, values[i], bounds)
            elif not field.startswith(TTL_SHARED):
                changes[field] = values[i]
        return current.evolve(**changes)

    def decode_ttl(self, action: Any, current: ClientTTL) -> ClientTTL:
        arr = _check(self.space, action)
        changes: dict[str, float] = {}
        for (field, values), i in zip(self._choices, arr.tolist(), strict=True):
            if field == TTL_SHARED:
                changes.update(dict.fromkeys(QOS_ORDER, float(values[i])))
            elif field.startswith(TTL_SHARED + ":"):
                changes[field.split(":", 1)[1]] = float(values[i])
        return current.evolve(**changes) if changes else current

    def describe(self) -> str:
        return "MultiDiscrete(" + ", ".join(f"{f}={v}" for f, v in self._choices) + ")"


class Discrete12Codec:
    """The seed design's ``Discrete(12)``: ``a = 4 * move + policy``, move in (down, hold, up) by
    ``discrete_step`` and policy in :data:`DISCRETE12_POLICIES`; the timeout is left unchanged."""

    def __init__(self, cfg: ActionConfig) -> None:
        _no_ttl(cfg, "discrete12")
        self.cfg = cfg
        self.moves = (-cfg.discrete_step, 0.0, cfg.discrete_step)
        self.policies = DISCRETE12_POLICIES
        self.space = spaces.Discrete(len(self.moves) * len(self.policies))

    def decode(
        self, action: Any, current: RedisConfig, bounds: tuple[int, int], anchor: RedisConfig | None = None
    ) -> RedisConfig:
        a = int(_check(self.space, action))
        move, policy = divmod(a, len(self.policies))
        return current.evolve(
            maxmemory=move_memory(current.maxmemory, self.moves[move], bounds),
            maxmemory_policy=self.policies[policy],
        )

    def decode_ttl(self, action: Any, current: ClientTTL) -> ClientTTL:
        return current

    def describe(self) -> str:
        return f"Discrete(12) = 3 moves {self.moves} x 4 policies {list(self.policies)}"


class MRCOffsetCodec:
    """``Discrete(1 + len(mrc_offsets))``: 0 keeps the config in force; ``k`` runs the MRC optimum's
    policy at its size times ``offset_factor ** mrc_offsets[k-1]`` (clipped to the bounds).

    Why: the miss-ratio curves already say where the cost bottoms out; the policy's job is the part a
    formula does badly — when to move (hold through a transient, wait for the curve to settle) and how
    far to trust a noisy optimum — and it can jump straight to a far optimum and stay there. Without an
    optimum yet (curves not ready) every action keeps the current config.
    """

    def __init__(self, cfg: ActionConfig) -> None:
        _no_ttl(cfg, "mrc-offset")
        self.cfg = cfg
        self.offsets = list(cfg.mrc_offsets)
        self.space = spaces.Discrete(1 + len(self.offsets))

    def decode(
        self, action: Any, current: RedisConfig, bounds: tuple[int, int], anchor: RedisConfig | None = None
    ) -> RedisConfig:
        a = int(_check(self.space, action))
        if a == 0 or anchor is None:
            return current
        lo, hi = bounds
        size = anchor.maxmemory * self.cfg.offset_factor ** self.offsets[a - 1]
        return current.evolve(maxmemory=int(min(max(round(size), lo), hi)), maxmemory_policy=anchor.maxmemory_policy)

    def decode_ttl(self, action: Any, current: ClientTTL) -> ClientTTL:
        return current

    def describe(self) -> str:
        return f"Discrete({self.space.n}) = keep | MRC optimum x {self.cfg.offset_factor}^{self.offsets}"


#: ``EnvConfig.actions.space`` name -> codec class.
ACTION_SPACES: Registry[type] = Registry("action space", "env.actions.space")
ACTION_SPACES.add("multidiscrete", MultiDiscreteCodec)
ACTION_SPACES.add("discrete12", Discrete12Codec)
ACTION_SPACES.add("mrc-offset", MRCOffsetCodec)


def make_action_codec(cfg: ActionConfig) -> ActionCodec:
    return ACTION_SPACES.get(cfg.space)(cfg)
