"""Switch trials: a policy switch under a memory budget, tried first on a miniature cache.

Why: under a budget the eviction policy is the only lever, and every cell where ``mrc`` ended costlier than
static-default was a policy switch that did not repay (docs/results.md, "Under a memory budget"). The curves
predict the *steady* gap between two policies well (0.6 % of predicted policy gaps of >= 1 pp point the wrong way),
but not what the switch itself costs: Redis keeps each key's lru bits across ``CONFIG SET maxmemory-policy`` and
reads them under the new policy, so after LRU -> LFU the warm keys look cold and go first (a transient of misses
that lasts until the cache's content turns over). A model of that transient (``budget_switch_transient``) was
measured and not kept. A trial measures it instead: the miniature cache of the policy in force at the cap is
cloned twice, one clone is switched to the other policy, and both are fed the same sampled requests from then on.
Their hit difference since the clone is what switching *then* would have gained, the transient included.

Trials run back to back: each lasts ``span`` intervals and then restarts from the miniature cache's state of
that moment, so the evidence is about a switch from a cache like today's, not the empty one of the first
interval. The decider reads the trial in progress once it is old enough, else the last one finished
(:func:`trial_evidence`).

Approximations: the clones carry the miniature cache's key sample (its rate) and are as noisy as it is; the
clones of one trial see the same requests, so their *difference* is far less noisy than two curves' points.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cachetuner.traces.trace import Trace


@dataclass(frozen=True)
class TrialResult:
    """What switching ``source`` -> ``target`` at the trial's start did to a miniature cache at the cap.

    ``gain``: hit ratio of the switched clone minus that of the clone that stayed, over the trial's sampled GETs
    (negative while the switch's transient has not been repaid); ``gets``: those sampled GETs; ``age``: the
    intervals the trial has run; ``done``: whether it ran its whole span."""

    source: str
    target: str
    gain: float
    gets: float
    age: int
    done: bool


@dataclass
class _Trial:
    target: str
    stay: object  # TieredCacheSim, the clone that keeps the policy in force
    moved: object  # TieredCacheSim, the clone switched to ``target``
    hits_stay: float = 0.0
    hits_moved: float = 0.0
    gets: float = 0.0
    age: int = 0

    def result(self, source: str, span: int) -> TrialResult:
        gain = (self.hits_moved - self.hits_stay) / self.gets if self.gets > 0 else 0.0
        return TrialResult(source, self.target, gain, self.gets, self.age, self.age >= span)


@dataclass
class SwitchTrials:
    """Back-to-back switch trials from the policy in force to every other policy with a curve.

    ``span``: the intervals a trial runs before it restarts; ``policies``: the policies with a curve."""

    span: int
    policies: tuple[str, ...]
    source: str | None = None
    _running: dict[str, _Trial] = field(default_factory=dict)
    _finished: dict[str, TrialResult] = field(default_factory=dict)

    def feed(self, trace: Trace) -> None:
        """One interval of the sampled requests the source's miniature cache at the cap was fed."""
        for t in self._running.values():
            if len(trace):
                a = t.stay.run_counts(trace, 0, len(trace))  # type: ignore[attr-defined]
                b = t.moved.run_counts(trace, 0, len(trace))  # type: ignore[attr-defined]
                t.hits_stay += a.hits
                t.hits_moved += b.hits
                t.gets += a.gets
            t.age += 1

    def roll(self, source: str, source_sim: object) -> None:
        """After an interval: restart the trials from ``source_sim`` (the in-force policy's miniature cache at the
        cap) when the policy in force changed or a trial ran its span; the finished ones are kept as results."""
        if source != self.source:  # a switch happened (or the first interval): the old trials are about another start
            self.source = source
            self._running.clear()
            self._finished.clear()
        for p in self.policies:
            t = self._running.get(p)
            if p == source or (t is not None and t.age < self.span):
                continue
            if t is not None:
                self._finished[p] = t.result(source, self.span)
            stay = source_sim.clone()  # type: ignore[attr-defined]
            moved = source_sim.clone()  # type: ignore[attr-defined]
            moved.apply_config(moved.config.evolve(maxmemory_policy=p))
            self._running[p] = _Trial(p, stay, moved)

    def results(self) -> list[TrialResult]:
        """The trials in progress (``done`` False) and the last finished one of each target."""
        out = list(self._finished.values())
        if self.source is not None:
            out += [t.result(self.source, self.span) for t in self._running.values() if t.age > 0]
        return out

    def clone(self) -> SwitchTrials:
        new = SwitchTrials(self.span, self.policies, self.source, {}, dict(self._finished))
        for p, t in self._running.items():
            new._running[p] = _Trial(t.target, t.stay.clone(), t.moved.clone(),  # type: ignore[attr-defined]
                                     t.hits_stay, t.hits_moved, t.gets, t.age)
        return new


def trial_evidence(results: list[TrialResult], source: str, target: str, min_age: int) -> TrialResult | None:
    """The evidence on switching ``source`` -> ``target`` now: the trial in progress once ``min_age`` intervals
    old, else the last finished one; ``None`` before either exists."""
    mine = [r for r in results if r.source == source and r.target == target]
    running = [r for r in mine if not r.done and r.age >= max(min_age, 1)]
    if running:
        return running[0]
    done = [r for r in mine if r.done]
    return done[-1] if done else None


__all__ = ["SwitchTrials", "TrialResult", "trial_evidence"]
