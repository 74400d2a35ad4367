"""Guardrails between a policy's proposal and ``CONFIG SET``.

Each guard is a small class with a ``name`` that either allows a proposal, adjusts it (clamps) or
vetoes it; a :class:`GuardChain` runs them in the configured order and records what each did, so
every veto in the audit log and in ``vetoed_total{guard}`` names the guard that cast it.

Defence in depth: whatever the chain says, :func:`bounds_violations` re-checks the *exact* config
right before it is sent to Redis (``TargetRunner._apply``). A guard bug, a rollback to a
known-good from before the bounds were tightened, or a re-apply after a Redis restart can never
put an out-of-bounds config on a target.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, Protocol

from cachetuner.config import REDIS_PARAMS, RedisConfig
from cachetuner.daemon.config import Bounds, TargetConfig
from cachetuner.daemon.slo import SLOReport
from cachetuner.errors import ConfigError, ConfigRefusedError
from cachetuner.metrics import MetricsSnapshot


class OutOfBoundsError(ConfigRefusedError):
    """The final pre-apply check refused a config outside the target's bounds."""


def _violations(config: RedisConfig, bounds: Bounds) -> list[tuple[str, str]]:
    """``(field, message)`` for every way ``config`` leaves ``bounds``; messages name the Redis parameter."""
    p = REDIS_PARAMS
    v: list[tuple[str, str]] = []
    if not bounds.maxmemory_min <= config.maxmemory <= bounds.maxmemory_max:
        v.append(("maxmemory", f"{p['maxmemory']} {config.maxmemory} outside [{bounds.maxmemory_min}, {bounds.maxmemory_max}]"))
    if config.maxmemory_policy not in bounds.policies:
        v.append(("maxmemory_policy", f"{p['maxmemory_policy']} {config.maxmemory_policy} not in {bounds.policies}"))
    if config.timeout not in bounds.timeouts:
        v.append(("timeout", f"{p['timeout']} {config.timeout} not in {bounds.timeouts}"))
    if bounds.samples is not None and config.maxmemory_samples not in bounds.samples:
        v.append(("maxmemory_samples", f"{p['maxmemory_samples']} {config.maxmemory_samples} not in {bounds.samples}"))
    return v


def bounds_violations(config: RedisConfig, bounds: Bounds) -> list[str]:
    """Every way ``config`` leaves ``bounds`` (empty = inside)."""
    return [msg for _, msg in _violations(config, bounds)]


def assert_in_bounds(config: RedisConfig, bounds: Bounds, target: str) -> None:
    """The last line of defence, called immediately before every ``CONFIG SET``."""
    v = bounds_violations(config, bounds)
    if v:
        raise OutOfBoundsError(f"target {target}: refusing to apply out-of-bounds config: {'; '.join(v)}")


@dataclass
class GuardContext:
    """What a guard may look at besides the proposal."""

    target: str
    now: float                        # wall clock (s); cooldowns survive restarts
    current: RedisConfig              # config in place on the target
    snapshot: MetricsSnapshot | None  # the interval just observed
    slo: SLOReport
    last_change_at: float | None      # wall time of the last applied change


@dataclass
class GuardResult:
    action: Literal["allow", "adjust", "veto"]
    config: RedisConfig | None = None
    reason: str = ""


@dataclass
class Verdict:
    """The chain's answer: ``config`` is None when a guard vetoed."""

    config: RedisConfig | None
    vetoed_by: str | None = None
    reason: str = ""
    trail: list[dict[str, str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.config is not None

    def to_dict(self) -> dict[str, object]:
        return {"ok": self.ok, "vetoed_by": self.vetoed_by, "reason": self.reason, "trail": self.trail}


class Guard(Protocol):
    name: str

    def check(self, proposal: RedisConfig, ctx: GuardContext) -> GuardResult: ...


class StaleGuard:
    """No decision on stale or missing metrics: the proposal was made on data that is not current."""

    name = "stale"

    def check(self, proposal: RedisConfig, ctx: GuardContext) -> GuardResult:
        s = ctx.snapshot
        if s is None or s.stale or not s.is_finite():
            return GuardResult("veto", reason="metrics stale or missing")
        return GuardResult("allow", proposal)


class BoundsGuard:
    """Hard bounds: clamps maxmemory into range (or vetoes, ``clamp_maxmemory: false``); vetoes
    policies, timeouts and samples outside the allowed lists."""

    name = "bounds"

    def __init__(self, bounds: Bounds) -> None:
        self.bounds = bounds

    def check(self, proposal: RedisConfig, ctx: GuardContext) -> GuardResult:
        b = self.bounds
        others = [msg for f, msg in _violations(proposal, b) if f != "maxmemory"]
        if others:
            return GuardResult("veto", reason="; ".join(others))
        mm = proposal.maxmemory
        if b.maxmemory_min <= mm <= b.maxmemory_max:
            return GuardResult("allow", proposal)
        if not b.clamp_maxmemory:
            return GuardResult("veto", reason=f"maxmemory {mm} outside [{b.maxmemory_min}, {b.maxmemory_max}]")
        clamped = min(max(mm, b.maxmemory_min), b.maxmemory_max)
        return GuardResult("adjust", proposal.evolve(maxmemory=clamped), f"maxmemory {mm} -> {clamped}")


class MaxChangeGuard:
    """Limits the relative maxmemory step to ``max_relative_change`` (clamps).

    Bringing an out-of-bounds target back into bounds takes precedence over the step size: when the
    clamped step would stay outside the bounds, the nearest bound is used instead.
    """

    name = "max_change"

    def __init__(self, max_relative_change: float, bounds: Bounds) -> None:
        self.r = max_relative_change
        self.bounds = bounds

    def check(self, proposal: RedisConfig, ctx: GuardContext) -> GuardResult:
        cur, new = ctx.current.maxmemory, proposal.maxmemory
        if cur <= 0 or new == cur:  # from "unlimited" there is no relative step; bounds decide
            return GuardResult("allow", proposal)
        lo, hi = int(cur * (1 - self.r)), int(cur * (1 + self.r))
        stepped = min(max(new, lo), hi)
        b = self.bounds
        if not b.maxmemory_min <= stepped <= b.maxmemory_max:
            stepped = min(max(stepped, b.maxmemory_min), b.maxmemory_max)
        if stepped == new:
            return GuardResult("allow", proposal)
        return GuardResult("adjust", proposal.evolve(maxmemory=stepped), f"maxmemory step {cur} -> {new} limited to {stepped}")


class CooldownGuard:
    """At most one change per ``cooldown_s`` (rollbacks and restart re-applies bypass the chain)."""

    name = "cooldown"

    def __init__(self, cooldown_s: float) -> None:
        self.cooldown_s = cooldown_s

    def check(self, proposal: RedisConfig, ctx: GuardContext) -> GuardResult:
        if proposal == ctx.current or ctx.last_change_at is None:
            return GuardResult("allow", proposal)
        left = self.cooldown_s - (ctx.now - ctx.last_change_at)
        if left > 0:
            return GuardResult("veto", reason=f"cooldown: {left:.1f} s left")
        return GuardResult("allow", proposal)


class SLOGuard:
    """While the SLO is breached, veto changes that shrink memory or switch to ``noeviction``:
    both can only add misses, evictions or rejected writes. Growing memory stays allowed."""

    name = "slo"

    def check(self, proposal: RedisConfig, ctx: GuardContext) -> GuardResult:
        if not ctx.slo.breached:
            return GuardResult("allow", proposal)
        if proposal.maxmemory < ctx.current.maxmemory:
            return GuardResult("veto", reason=f"SLO breached ({'; '.join(ctx.slo.breaches)}): no shrinking")
        if proposal.maxmemory_policy == "noeviction" and ctx.current.maxmemory_policy != "noeviction":
            return GuardResult("veto", reason="SLO breached: no switch to noeviction")
        return GuardResult("allow", proposal)


GuardFactory = Callable[[TargetConfig], Guard]

GUARDS: dict[str, GuardFactory] = {
    "stale": lambda t: StaleGuard(),
    "bounds": lambda t: BoundsGuard(t.bounds),
    "max_change": lambda t: MaxChangeGuard(t.max_relative_change, t.bounds),
    "cooldown": lambda t: CooldownGuard(t.cooldown_s),
    "slo": lambda t: SLOGuard(),
}


def make_guard(name: str, target: TargetConfig) -> Guard:
    if name not in GUARDS:
        raise ConfigError(f"target {target.name}: unknown guard {name!r}; valid guards: {', '.join(GUARDS)}")
    return GUARDS[name](target)


class GuardChain:
    """Guards composed in order; the first veto stops the chain."""

    def __init__(self, guards: list[Guard]) -> None:
        self.guards = guards

    @classmethod
    def for_target(cls, target: TargetConfig) -> GuardChain:
        return cls([make_guard(n, target) for n in target.guards])

    @property
    def names(self) -> list[str]:
        return [g.name for g in self.guards]

    def evaluate(self, proposal: RedisConfig, ctx: GuardContext) -> Verdict:
        trail: list[dict[str, str]] = []
        cfg = proposal
        for g in self.guards:
            r = g.check(cfg, ctx)
            trail.append({"guard": g.name, "action": r.action, "reason": r.reason})
            if r.action == "veto":
                return Verdict(None, g.name, r.reason, trail)
            assert r.config is not None
            cfg = r.config
        return Verdict(cfg, None, "", trail)
