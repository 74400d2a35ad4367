"""Eviction-knob variants under a memory budget: which ones get a miniature cache, and the rule that picks one.

Why: under the ``budget`` price regime memory is free up to the cap, the size sits there, and only the eviction
policy and its knobs (``maxmemory-samples``; ``lfu-log-factor`` and ``lfu-decay-time`` for LFU) move the hit
ratio. ``cachetuner bench knobs`` measured what choosing the knobs per trace could add in hindsight (0.68 pp of hit
ratio on average over the shared traces at 5 % and 20 % budgets, 3.6 pp at most) and that no single setting is
better everywhere, so a fixed new default cannot take it: the choice has to follow the workload.

How: each :class:`KnobVariant` gets one more miniature cache, at the budget's cap only (the one size that matters
there), fed by the same key sample as the curves, so its hit ratio is read against the policy curves' own point at
that size on the same evidence. :class:`KnobChooser` then treats every (policy, knobs) pair as an *arm* and moves to
a better one with the rule the ``mrc`` controller already uses for a policy under a budget: a predicted gain of
``policy_min_gain`` confirmed for ``confirm`` intervals, or of ``policy_sustained_gain`` held for
``policy_patience`` intervals in a row. The default variants come from Redis's own documentation
(``redis.conf``: 10 samples "approximates very closely true LRU"; the LFU log-factor table's 1 and 100), not
from the shared traces.

Approximations: a variant's miniature cache runs its knobs from the start, while the live cache switches mid-run
(an LFU counter built under one log factor is read under another until it decays); the prediction is the variant's
steady state, as every point of the curves is.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from cachetuner.config import Policy, RedisConfig
from cachetuner.mrc.curves import MissRatioCurves

#: The fields an arm is made of (the policy and its knobs; maxmemory and timeout are not part of it).
ARM_FIELDS = ("maxmemory_policy", "maxmemory_samples", "lfu_log_factor", "lfu_decay_time")


class KnobVariant(BaseModel):
    """One eviction-knob setting with a miniature cache at the budget's cap; ``None`` = the base config's value."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    policy: Policy
    maxmemory_samples: int | None = Field(None, ge=1, le=64)
    lfu_log_factor: int | None = Field(None, ge=0, le=255)
    lfu_decay_time: int | None = Field(None, ge=0, le=2**31 - 1)

    def apply(self, base: RedisConfig) -> RedisConfig:
        """``base`` with this variant's policy and knobs."""
        upd: dict[str, object] = {"maxmemory_policy": self.policy}
        upd.update({f: getattr(self, f) for f in ARM_FIELDS[1:] if getattr(self, f) is not None})
        return base.evolve(**upd)


def default_variants() -> list[KnobVariant]:
    """Redis's documented alternatives to its defaults (a fresh list per model)."""
    return [
        KnobVariant(policy="allkeys-lru", maxmemory_samples=10),
        KnobVariant(policy="allkeys-lfu", maxmemory_samples=10),
        KnobVariant(policy="allkeys-lfu", lfu_log_factor=1),
        KnobVariant(policy="allkeys-lfu", lfu_log_factor=100),
    ]


def arm_of(cfg: RedisConfig) -> tuple[object, ...]:
    """The (policy, knobs) a config runs."""
    return tuple(getattr(cfg, f) for f in ARM_FIELDS)


class KnobChooser:
    """Picks the (policy, knobs) arm under a budget from the curves' points at the cap (see the module)."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self._candidate: tuple[object, ...] | None = None
        self._streak = 0

    def arms(self, curves: MissRatioCurves, policies: tuple[str, ...]) -> dict[tuple[object, ...], tuple[RedisConfig, float]]:
        """Every arm with a prediction at the cap: each policy's curve point (the base config's knobs) and each
        variant; ``{arm: (config, hit ratio)}``."""
        assert curves.knob_size is not None and curves.base_config is not None
        mono = curves.monotone()
        out: dict[tuple[object, ...], tuple[RedisConfig, float]] = {}
        for p in policies:
            if p in mono.hit:
                cfg = curves.base_config.evolve(maxmemory_policy=p)
                out[arm_of(cfg)] = (cfg, float(mono.hit_ratio(p, curves.knob_size)))
        for pt in curves.knobs:
            if pt.config.maxmemory_policy in policies:
                out.setdefault(arm_of(pt.config), (pt.config, pt.hit))
        return out

    def choose(self, curves: MissRatioCurves | None, nxt: RedisConfig, policies: tuple[str, ...], *, min_weight: float,
               min_gain: float, sustained_gain: float, confirm: int, patience: int) -> RedisConfig:
        """``nxt`` with the policy and knobs of the best arm when the move clears the rule, else ``nxt`` as is.

        Acts only when the curves carry knob points with ``min_weight`` evidence, the curves are ready, ``nxt`` is
        within 25 % of the cap (a cache held well below it is not what the points predict) and the arm ``nxt`` runs
        has a prediction (a config with other knobs is left alone)."""
        if (curves is None or curves.knob_size is None or not curves.knobs or not curves.ready(min_weight)
                or any(pt.evidence < min_weight for pt in curves.knobs) or nxt.maxmemory * 1.25 < curves.knob_size):
            self.reset()
            return nxt
        arms = self.arms(curves, policies)
        now = arms.get(arm_of(nxt))
        if now is None or not arms:
            self.reset()
            return nxt
        best = max(arms, key=lambda a: arms[a][1])
        gain = arms[best][1] - now[1]
        if best == arm_of(nxt) or gain < sustained_gain:
            self.reset()
            return nxt
        if best != self._candidate:
            self._candidate, self._streak = best, 0
        self._streak += 1
        if (gain >= min_gain and self._streak >= confirm) or self._streak >= patience:
            self.reset()
            cfg = arms[best][0]
            return nxt.evolve(**{f: getattr(cfg, f) for f in ARM_FIELDS})
        return nxt


__all__ = ["ARM_FIELDS", "KnobChooser", "KnobVariant", "arm_of", "default_variants"]
