"""Client-side TTL multipliers per QoS class: the TTL knob a tuner may turn, kept apart from Redis's.

Why a separate object and not a :class:`~cachetuner.config.RedisConfig` field: Redis has no server-side
setting for key lifetimes (see :mod:`cachetuner.ttl.base`); the application writes every TTL. A
multiplier is therefore applied by the client to the TTL of each write it makes (a ``SET`` or the
read-through fill of a miss) and must never reach ``CONFIG SET``. :class:`ClientTTL` holds one factor
per QoS class (1.0 = the TTL policy's own value); the env keeps the one in force as state next to the
:class:`RedisConfig` and hands it to a backend that implements :class:`ClientTTLBackend`.
"""

from __future__ import annotations

import math
from typing import Protocol, runtime_checkable

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from cachetuner.ttl.keyspace import QOS_CLASSES, KeySpace

#: The QoS classes in their fixed order (the order of :meth:`ClientTTL.per_class`).
QOS_ORDER: tuple[str, ...] = tuple(QOS_CLASSES)


def _factor(description: str) -> float:
    return Field(1.0, gt=0, le=100, allow_inf_nan=False, description=description)  # type: ignore[no-any-return]


class ClientTTL(BaseModel):
    """Multipliers of the TTL each QoS class's writes carry (on top of the TTL policy and the class factor).

    A key without TTL (``0``) keeps none whatever the factor: a multiplier scales lifetimes, it does not
    create them.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    gold: float = _factor("x the TTL of gold tenants' writes")
    silver: float = _factor("x the TTL of silver tenants' writes (and of a trace without tenants)")
    bronze: float = _factor("x the TTL of bronze tenants' writes")

    @classmethod
    def shared(cls, factor: float) -> ClientTTL:
        """The same factor for every class."""
        return cls(**dict.fromkeys(QOS_ORDER, factor))

    @property
    def identity(self) -> bool:
        """True when every factor is 1 (TTLs are written as the policy sets them)."""
        return all(getattr(self, c) == 1.0 for c in QOS_ORDER)

    def per_class(self) -> np.ndarray:
        """float64 factors in :data:`QOS_ORDER`."""
        return np.array([getattr(self, c) for c in QOS_ORDER], dtype=np.float64)

    def mean_factor(self) -> float:
        """Geometric mean over the classes (what one shared TTL dimension observes)."""
        return float(math.exp(np.log(self.per_class()).mean()))

    def evolve(self, **changes: float) -> ClientTTL:
        return ClientTTL(**{**self.model_dump(), **changes})

    def scale(self, ttls: np.ndarray, key_class: np.ndarray) -> np.ndarray:
        """``ttls`` times each request's class factor; ``key_class`` is the :func:`key_class_index` of
        each request's key."""
        return np.asarray(ttls, dtype=np.float64) * self.per_class()[key_class]


def key_class_index(keyspace: KeySpace) -> np.ndarray:
    """Per key id: the index of its tenant's QoS class in :data:`QOS_ORDER` (int8)."""
    tenant_class = np.array([QOS_ORDER.index(c) for c in keyspace.classes], dtype=np.int8)
    return tenant_class[keyspace.tenant]


@runtime_checkable
class ClientTTLBackend(Protocol):
    """A backend whose client writes can carry :class:`ClientTTL` multipliers (optional extension of
    :class:`~cachetuner.backend.CacheBackend`; the simulated backend implements it, the live one not yet)."""

    @property
    def client_ttl(self) -> ClientTTL: ...

    def set_client_ttl(self, ttl: ClientTTL) -> None:
        """Multiply the TTLs of the writes of the next intervals (no ``CONFIG SET``: client side only)."""
        ...
