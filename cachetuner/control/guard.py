"""The baseline guard: a controller that falls back to static-default when, by its own running estimate,
the controller it wraps has been costing more than static-default would have on the same traffic.

Why: an operator who replaces a hand-set configuration with a tuner wants a bound on what the tuner can
lose, not only a good average. This is *conservative* control in the sense of conservative bandits (Wu et
al., ICML 2016): the inner controller may deviate from the baseline as long as its cumulative cost stays
within ``alpha`` of the baseline's cumulative cost (plus the estimate's noise); once it does not, the
baseline's configuration runs until the allowance, which grows with the baseline's cost, has room again.

What static-default would have cost is estimated online, on the simulated and the live path alike, by
two paired miniature caches (:class:`~cachetuner.mrc.paired.PairedMinis`) on the hash-sampled request
stream: a *mirror* that runs the configuration in force every interval, and one that runs static-default
all along. Per interval, the baseline's misses are the measured misses plus the minis' hit difference
scaled by ``1 / R`` (a difference estimator: errors the minis share cancel); memory is exact (the two
``maxmemory`` values) and each change of the configuration in force is charged the switch price.

The noise term is the Horvitz–Thompson variance of the sampled hit difference, from per-key sums
(:class:`KeyDiffs`): it is zero at ``R = 1`` and wherever the two minis agree.

Approximations (stated): the SLO penalty is left out of the comparison (the baseline's p95 is not
estimated), so are the second tier's hits; the minis start cold at the
first decision, so the difference is underestimated while they fill. No verdict is given before
``min_intervals`` intervals: early on the baseline's cost so far is small, and every move that pays later
(a growth that fills over several intervals) costs first.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from cachetuner.config import RedisConfig
from cachetuner.control.base import Controller, DecisionContext, make_controller, register_controller
from cachetuner.control.settings import ControlSettings, GuardSettings
from cachetuner.control.static import static_default_config
from cachetuner.keysample import LocalIds, grown
from cachetuner.mrc.paired import PairedMinis


@dataclass
class GuardLedger:
    """Running comparison of the path served with the baseline, in the env's cost units.

    ``excess``: path cost − estimated baseline cost so far; ``baseline``: the baseline's estimated cost so
    far; ``variance``: of ``excess`` (:class:`KeyDiffs`); ``events``: each fallback and release, with the
    figures it was decided on (for reports and the audit trail)."""

    intervals: int = 0
    excess: float = 0.0
    baseline: float = 0.0
    variance: float = 0.0
    tripped: bool = False
    trips: int = 0
    intervals_held: int = 0
    events: list[dict[str, Any]] = field(default_factory=list)

    def add(self, excess: float, baseline: float) -> None:
        self.intervals += 1
        self.excess += excess
        self.baseline += baseline

    @property
    def noise(self) -> float:
        """One standard deviation of ``excess`` (sampling noise of the miss difference)."""
        return math.sqrt(max(self.variance, 0.0))


class KeyDiffs:
    """Per sampled key, the running sum of (mirror hit − baseline hit) over its GETs.

    Why per key: SHARDS samples *keys*, each independently with probability ``R``, so the estimate
    ``sum / R`` of the full stream's hit difference has variance ``(1 − R) / R^2 x sum_k D_k^2`` over the
    sampled keys' sums ``D_k`` (a Horvitz–Thompson estimate); a few hot keys whose outcome differs dominate
    it, which per-request or per-interval counts would miss."""

    def __init__(self) -> None:
        self._ids = LocalIds()
        self._d = np.zeros(1024, dtype=np.int64)

    def add(self, keys: np.ndarray, diff: np.ndarray) -> None:
        nz = diff != 0
        if not np.any(nz):
            return
        keys, diff = keys[nz], diff[nz]
        new = self._ids.unseen(keys)
        if self._ids.next_id + len(new) > len(self._d):
            self._d = np.concatenate([self._d, np.zeros(grown(len(self._d), self._ids.next_id + len(new)) - len(self._d),
                                                        dtype=np.int64)])
        self._ids.add(new)
        np.add.at(self._d, self._ids.lookup(keys), diff)

    def sum_sq(self) -> float:
        return float(np.sum(self._d.astype(np.float64) ** 2))


class BaselineGuard:
    """Runs ``inner``'s decisions while they are estimated to cost at most ``alpha`` more than static-default
    (plus ``z`` x the estimate's noise), and static-default's configuration otherwise (see the module doc)."""

    hindsight: ClassVar[bool] = False
    needs_sample = True

    def __init__(self, inner: Controller, settings: ControlSettings, seed: int = 0) -> None:
        self.inner = inner
        self.name = f"{inner.name}-guarded"
        self.settings = settings
        self.cfg: GuardSettings = settings.guard
        self._seed = int(seed)
        self.ledger = GuardLedger()
        self.baseline: RedisConfig | None = None
        self._minis: PairedMinis | None = None
        self._keys = KeyDiffs()
        self._last_in_force: RedisConfig | None = None

    # -- Controller -------------------------------------------------------------------------------------
    def reset(self, ctx: DecisionContext) -> None:
        self.inner.reset(ctx)
        self.baseline = static_default_config(self.settings, ctx)
        self.ledger = GuardLedger()
        self._minis = None
        self._keys = KeyDiffs()
        self._last_in_force = ctx.config

    def decide(self, ctx: DecisionContext) -> RedisConfig:
        assert self.baseline is not None, "reset() first"
        proposal = self.inner.decide(ctx)  # always asked, so that its own state follows every interval
        self._account(ctx)
        led, cfg = self.ledger, self.cfg
        allowance = cfg.alpha * led.baseline + cfg.z * led.noise
        if not led.tripped and led.intervals >= cfg.min_intervals and led.excess > allowance:
            led.tripped, led.trips = True, led.trips + 1
            led.events.append(self._event(ctx, "fallback"))
        elif led.tripped and led.excess <= cfg.release * cfg.alpha * led.baseline:
            led.tripped = False
            led.events.append(self._event(ctx, "release"))
        if led.tripped:
            led.intervals_held += 1
            return self.baseline
        return proposal

    # -- internals ----------------------------------------------------------------------------------------
    def _account(self, ctx: DecisionContext) -> None:
        """Add the interval that just ended (run under ``ctx.config``) to the ledger."""
        snap, prices, in_force = ctx.snapshot, ctx.prices, ctx.config
        assert self.baseline is not None
        if ctx.sample is None:
            from cachetuner.errors import ConfigError

            raise ConfigError(f"controller {self.name!r}: needs the sampled request stream (ctx.sample)")
        if self._minis is None:
            self._minis = PairedMinis(in_force, self.baseline, rate=self._rate(snap), seed=self._seed)
        self._minis.set_configs(in_force, self.baseline)
        mirror, base = self._minis.update(ctx.sample, snap.interval_s, outcomes=True)
        rate = self._minis.rate
        self._keys.add(self._minis.last_keys, self._minis.last_hit_diff)
        extra_misses = (mirror.hits - base.hits) / rate if rate > 0 else 0.0  # the baseline's misses minus the path's
        base_misses = max(snap.misses + extra_misses, 0.0)
        path_mem = float(prices.memory_cost(snap.maxmemory or snap.used_memory))  # what the env charges
        base_mem = float(prices.memory_cost(self.baseline.maxmemory))
        switch = prices.switch if self._last_in_force is not None and in_force != self._last_in_force else 0.0
        self._last_in_force = in_force
        path = path_mem + prices.miss * snap.misses + switch
        baseline = base_mem + prices.miss * base_misses
        self.ledger.add(path - baseline, baseline)
        self.ledger.variance = prices.miss**2 * (1.0 - rate) / rate**2 * self._keys.sum_sq() if rate > 0 else 0.0

    def _rate(self, snap: Any) -> float:
        """``cfg.rate``, raised so that the baseline's miniature cache holds ``min_objects`` objects (bytes per
        object from the cache in force; Waldspurger et al.'s rule for small miniature caches)."""
        from cachetuner.sim.params import SimParams

        assert self.baseline is not None
        obj = snap.used_memory / snap.keys if snap.keys > 0 else 4096.0 + 100.0
        data = max(self.baseline.maxmemory - SimParams().fixed_bytes, 1)
        return float(min(1.0, max(self.cfg.rate, self.cfg.min_objects * obj / data)))

    def _event(self, ctx: DecisionContext, kind: str) -> dict[str, Any]:
        led = self.ledger
        return {"step": int(ctx.step), "intervals": led.intervals, "event": kind, "excess": led.excess, "baseline_cost": led.baseline,
                "noise": led.noise}


def guarded(inner_name: str):  # noqa: ANN201 (a registry factory)
    """Registry factory of ``<inner>-guarded``: the baseline guard around the controller ``inner_name``."""

    def factory(settings: ControlSettings, seed: int = 0, **params: Any) -> BaselineGuard:
        return BaselineGuard(make_controller(inner_name, settings, seed, **params), settings, seed)

    factory.hindsight = False  # type: ignore[attr-defined]
    factory.__doc__ = (f"`{inner_name}` behind the baseline guard: static-default's config whenever `{inner_name}`'s path is "
                       "estimated (paired miniature caches) to cost more than alpha over static-default's")
    return factory


register_controller("mrc-guarded")(guarded("mrc"))
register_controller("ppo-guarded")(guarded("ppo"))


__all__ = ["BaselineGuard", "GuardLedger", "KeyDiffs", "guarded"]
