"""Eviction-policy registry: ``maxmemory-policy`` names to the integer ids the compiled kernel uses.

A policy is three independent choices, exactly as Redis encodes them in ``MAXMEMORY_FLAG_*``:
which keys are candidates (all keys or keys with a TTL), how a candidate is scored (LRU idle time,
LFU 255-counter, TTL, or none for random), and whether scoring is sampled (Redis) or exact. Adding a
policy means one :class:`PolicySpec` here plus, for a new score, one branch in
:func:`cachetuner.sim.kernel.evict.candidate_score`.
"""

from __future__ import annotations

from dataclasses import dataclass

from cachetuner.config import REDIS_POLICIES, SIM_ONLY_POLICIES
from cachetuner.registry import Registry

# Candidate sets.
KEYS_NONE = 0      # noeviction
KEYS_ALL = 1       # allkeys-*
KEYS_VOLATILE = 2  # volatile-*: only keys with a TTL (Redis: db->expires)

# Scores / selection methods (kernel dispatch).
SCORE_NONE = 0     # noeviction: never evicts
SCORE_LRU = 1      # idle time from the 24-bit LRU clock (seconds resolution), sampled into the pool
SCORE_LFU = 2      # 255 - decayed Morris counter, sampled into the pool
SCORE_RANDOM = 3   # uniformly random victim (dictGetRandomKey)
SCORE_TTL = 4      # soonest expire first, sampled into the pool
SCORE_EXACT_LRU = 5  # true LRU list (simulator-only reference)


@dataclass(frozen=True)
class PolicySpec:
    """One ``maxmemory-policy``: candidate set and score (see module docstring)."""

    name: str
    keys: int
    score: int

    @property
    def uses_lfu_field(self) -> bool:
        """Redis's ``MAXMEMORY_FLAG_LFU``: the 24-bit object field holds (minutes, counter)."""
        return self.score == SCORE_LFU


#: ``maxmemory-policy`` name -> spec, in kernel-id order (see :data:`POLICY_IDS`).
POLICIES: Registry[PolicySpec] = Registry("maxmemory_policy")
for _spec in (
    PolicySpec("noeviction", KEYS_NONE, SCORE_NONE),
    PolicySpec("allkeys-lru", KEYS_ALL, SCORE_LRU),
    PolicySpec("allkeys-lfu", KEYS_ALL, SCORE_LFU),
    PolicySpec("allkeys-random", KEYS_ALL, SCORE_RANDOM),
    PolicySpec("volatile-lru", KEYS_VOLATILE, SCORE_LRU),
    PolicySpec("volatile-lfu", KEYS_VOLATILE, SCORE_LFU),
    PolicySpec("volatile-random", KEYS_VOLATILE, SCORE_RANDOM),
    PolicySpec("volatile-ttl", KEYS_VOLATILE, SCORE_TTL),
    PolicySpec("exact-lru", KEYS_ALL, SCORE_EXACT_LRU),
):
    POLICIES.add(_spec.name, _spec)
del _spec
assert set(POLICIES) == set(REDIS_POLICIES) | set(SIM_ONLY_POLICIES)

#: Stable integer id per policy (index in this tuple), stored in the kernel's scalar state.
POLICY_IDS: tuple[str, ...] = tuple(POLICIES)


def get_policy(name: str) -> PolicySpec:
    """The spec for ``name``; an unknown name raises a one-line
    :class:`~cachetuner.errors.UnknownNameError` (a ``ConfigError``) listing the valid ones."""
    return POLICIES.get(name)
