"""The MRC decision rule: cost-optimal size and policy from full-range miss-ratio curves (Macaron-style).

Why: the cost of a cache config is memory held plus the model calls its misses cause; with the hit
ratio of every size and policy predicted from miniature simulations (``ctx.curves``), the cheapest
config is a minimisation, not a search. Macaron (Yang et al., SOSP'24) sizes a cloud cache this way
from miniature-simulation curves; this is the single-cache, per-interval version with the SLO term
predicted through the latency model.

Misses are priced at the GETs per interval the cache expects: the larger of a quick EWMA (``gets_smoothing``: follow
a rise at once) and a slow one (``gets_floor_smoothing``): when the reads pause, the data they will come back for is
still worth the load they come back with, so a lull does not make the cost curve give it away (CloudPhysics on its
own clock writes, between two read bursts an hour apart, what the second one reads).

A curve is a *steady-state* prediction, and moving is not free, so the controller settles:

- it waits until every curve point accounts for ``min_weight`` windowed GETs (its evidence);
- a target must be the optimum ``confirm`` intervals in a row (noise in a flat cost curve makes the
  argmin jump between distant sizes; a real shift keeps pointing the same way); a *smaller* target
  needs ``shrink_confirm`` intervals and a curve accounting for ``shrink_min_weight`` GETs, because
  a shrink drops warm data at once while a young curve (long reuse distances not seen yet) always
  underrates a large cache;
- a move must repay, within ``payback_intervals``, the switch cost plus the *refill* cost of the
  bytes at stake: a grown cache starts with the smaller one's contents and reaches the curve's hit
  ratio only after the extra bytes have been filled by misses (estimated as half the hit-ratio gain
  over the fill time, fill time = added bytes / bytes inserted per interval). A shrink is charged the
  same amount, the price of growing back: without it a flat cost curve makes the controller drop a
  warm cache for a small saving and pay the refill later;
- *free shrink*: the shrink gates are waived (``confirm`` and ``min_weight`` still hold) when the memory
  a shrink gives back is worth more than every hit the full cache in force has been making
  (``free_shrink`` times over, plus the switch and any SLO penalty): then even a smaller cache that hit
  nothing would cost less, so the young curve's bias cannot make the move a loss;
- *regrow guard* (``regrow_guard``): no shrink to a size from which free growth would grow straight back at the
  run's usual miss level: after a stretch of nearly all hits the curves (and the current cost, which the hysteresis
  band is a share of) say little memory is needed, but the shrink drops data and free growth undoes it as soon as
  the misses return (the third audit's ARC P2 cell at ``cheap-backend``);
- the saving must exceed a ``hysteresis`` share of the current cost (a growth: ``hysteresis_growth``'s, narrower,
  since a growth drops no data); a growth goes to the optimum
  (its refill cost is already charged), a shrink only to the edge of the band of sizes within that
  share of the optimum (drop as little warm data as the curve allows);
- *cold growth*: in the cold phase (until the curves are ready for the first time, and for at least
  ``confirm`` intervals: a curve one interval old holds no reuse longer than one interval), a cache that
  is full at the chosen size and pays for itself grows (``cold_growth``) under the fill cap instead of
  evicting, and once they are ready those unproven bytes go back without waiting ``shrink_confirm``
  (``cold_return_waits``: still after ``shrink_min_weight``'s evidence; see the settings for why);
  meanwhile free growth's share is ``cold_free_growth``, a bounded bet that the data seen so far will
  be reused, and ``cold_memory_bound`` caps the size at twice what the hits (plus the
  same bet) pay for: at the cost optimum the hits always pay for the memory;
- the cost curve asks a size to pay with ``size_shortfall`` (5 %) fewer bytes than its miniature cache, so a size
  chosen at a loop's cliff keeps a margin above it, and in a scan (predicted hit ratio under
  ``shrink_band_cap_hit_ratio``) a shrink's band is capped at ``shrink_band_cap_misses`` (1 %) of the GETs missing plus
  the ``hysteresis`` share of the memory: there the band's share of the whole cost is mostly misses no size avoids
  (both adopted together on 2026-12-06, docs/control.md);
- a policy switch needs a predicted hit-ratio gain of ``policy_min_gain`` at the target size: a
  smaller predicted difference is within the curves' error, and the switch itself costs a transient
  the curves cannot see (measured on a suite cell: a 2.2 pp predicted LFU gain realised 0.4 pp, and
  the switch left mrc 0.4 % costlier than static-default); under a memory budget, also a gain of
  ``policy_sustained_gain`` that has held for ``policy_patience`` intervals in a row (a lasting gap is the
  workload, not noise, and the policy is the only lever there); and in the first ``budget_quick_intervals`` (30)
  intervals since the reset, a gain of ``budget_policy_gain`` (1 pp) confirmed for ``confirm`` intervals on
  ``budget_min_weight``'s evidence: a young cache's switch costs little transient (adopted 2026-12-05 on held-out
  budget audits; the same quicker gates applied throughout made more cells costlier than static-default). Three
  opt-ins for the budget regime, measured on held-out budget cells and not adopted (docs/control.md): a switch charged
  its transient (``budget_switch_transient``: one more costlier cell in 52), the young cache's switch on its first
  interval (``budget_quick_confirm``: a higher mean), and the eviction knobs chosen with the policy (``knobs``,
  :mod:`cachetuner.mrc.knobs`).

Online: it uses only the past.
"""

from __future__ import annotations

import numpy as np

from cachetuner.config import RedisConfig
from cachetuner.metrics import MetricsSnapshot
from cachetuner.mrc.cost import CostCurve, Prices, cost_curve
from cachetuner.mrc.curves import MissRatioCurves
from cachetuner.mrc.fill import FULL_SHARE, FillCap, is_full
from cachetuner.mrc.knobs import KnobChooser
from cachetuner.mrc.rule_settings import MRCControlSettings
from cachetuner.space import ConfigSpace


class MRCDecider:
    """The stateful rule behind the ``mrc`` controller and the env's ``anchor`` (what ``mrc-offset``
    actions are relative to): one implementation, so a policy trained around it sees exactly the
    controller it is compared with."""

    def __init__(self, settings: MRCControlSettings | None = None) -> None:
        self.settings = settings or MRCControlSettings()
        #: the settings the rule runs on: ``settings`` scaled to the interval decide_after is given
        #: (``reference_interval_s``); ``settings`` itself until then, and for callers of decide alone
        self.rule = self.settings
        self._interval_s: float | None = None
        h = self.settings.fill_headroom
        horizon = self.settings.payback_intervals if self.settings.fill_amortized else 1.0
        self.fill = FillCap(h, horizon_intervals=horizon) if h is not None else None
        self.knob_chooser = KnobChooser()
        self.reset()

    def reset(self, warm: bool = False, start: RedisConfig | None = None) -> None:
        """Forget everything; ``warm``: the curves have already watched the traffic (``mrc.warm_from_skipped``), so
        there is no cold phase (its rules are bets made while the curves have no evidence); ``start``: the config the
        first decision runs (as if the rule had chosen it: the fill cap applies), e.g. one sized from that history."""
        self._start = start
        if self.fill is not None:
            self.fill.reset()
        self.knob_chooser.reset()
        self.gets: float | None = None
        self.slow_gets = 0.0
        self._n_gets = 0
        self.misses: float | None = None
        self.last: CostCurve | None = None
        self._candidate: tuple[str, int] | None = None
        self._streak = 0
        self._pending: int | None = None  # see decide
        self._opt_below = False  # see decide
        self._low_streak = 0  # intervals in a row the optimum has been a smaller, cheaper size (shrink_patience)
        self._at_edge = False  # the size in force is where a shrink stopped at the band's edge (shrink_patience)
        self._policy_streak = 0  # intervals in a row another policy has been predicted policy_sustained_gain better
        self._held: tuple[int, str] | None = None  # the (size, policy) the hit tracker below measures
        self._held_hits = 0.0
        self._held_n = 0
        self._held_gets = 0.0  # GETs served by that config since it was full (free_shrink_min_gets)
        self._seen = 0  # intervals decide_after has seen since the reset (the cold phase, budget_quick_intervals)
        self._gets_seen = 0.0  # GETs decide_after has seen since the reset (cold_growth_reach)
        self._keys = 0.0  # the keys in the cache at the last fresh interval (cold_growth_reach)
        self._cold_hits = 0.0  # hits and misses summed over the cold phase's fresh intervals (cold_memory_bound)
        self._cold_misses = 0.0
        self._cold_n = 0
        self._start_used: float | None = None  # the bytes in use at the first fresh interval (cold_memory_bound's floor)
        self._was_ready = warm  # the curves have been ready since the last reset (cold_growth stops for good)
        self._warm = warm  # started with curves that watched history: no cold growth at all (cold_growth_intervals)
        self._cold_base: int | None = None  # the chosen size before cold growth, until the rule moves on its own
        self._last_snap: MetricsSnapshot | None = None  # the interval decide_after was given (budget_switch_transient)
        self._miss_sum = 0.0  # misses summed over the intervals seen since the reset (regrow_guard's usual level)
        self._miss_n = 0

    @property
    def rate(self) -> float:
        """The GETs per interval the cost curve prices misses at."""
        return max(self.gets or 0.0, self.slow_gets)

    @property
    def cold(self) -> bool:
        """In the cold phase: the curves have not been ready (with ``confirm`` intervals seen) since the reset."""
        return not self._was_ready

    @property
    def young(self) -> bool:
        """Cold growth may still act: in the cold phase, or in the young window after a cold reset (``_young_window``)."""
        return self.cold or self._young_window()

    def _young_window(self) -> bool:
        """Cold growth's extension after a reset that was not warm: within ``cold_growth_intervals`` intervals of it, or
        (``cold_growth_reach``, an opt-in) while the GETs seen since are fewer than that many times the keys in the cache."""
        if self._warm:
            return False
        n, reach = self.rule.cold_growth_intervals, self.rule.cold_growth_reach
        if not self._reach_in_force():
            reach = None
        return (n is not None and self._seen <= n) or (reach is not None and self._gets_seen < reach * self._keys)

    def _reach_in_force(self) -> bool:
        """Whether ``cold_growth_reach``, ``cold_growth_rebase`` and ``cold_growth_heeds_optimum`` act at the interval
        in force (``cold_growth_reach_from_s``: only at decisions that far apart, and not when the interval is not
        known)."""
        from_s = self.rule.cold_growth_reach_from_s
        return from_s is None or (self._interval_s is not None and self._interval_s >= from_s)

    def decide(
        self, curves: MissRatioCurves | None, prices: Prices, gets: float, cur: RedisConfig, space: ConfigSpace,
        misses: float | None = None, full: bool | None = None,
    ) -> RedisConfig:
        """The config to run next (``cur`` to hold). ``misses``: the last interval's (enables ``free_growth``
        and ``free_shrink``); ``full``: whether the cache was full (evicting, or near ``maxmemory``) in it, so
        that a cache still filling from cold is not judged by its first hits (``None``: not known, taken as full)."""
        s = self.rule
        self._pending = None  # a shrink the curve asks for that waits for shrink_min_weight (fill_pending_shrink_from_s)
        self._opt_below = False  # curves with a shrink's evidence put the optimum at or below cur (cold_growth_heeds_optimum)
        g = float(gets)
        self.gets = g if self.gets is None else (1 - s.gets_smoothing) * self.gets + s.gets_smoothing * g
        if s.gets_floor_smoothing is not None:
            self._n_gets += 1
            a = max(s.gets_floor_smoothing, 1.0 / self._n_gets)
            self.slow_gets = (1 - a) * self.slow_gets + a * g
        if misses is not None:
            m = float(misses)
            self.misses = m if self.misses is None else (1 - s.gets_smoothing) * self.misses + s.gets_smoothing * m
            self._miss_sum += max(m, 0.0)
            self._miss_n += 1
            self._track_hits(cur, g - m, full is not False, gets=g)
        if self._free_growth(prices, cur.maxmemory, space):
            return cur.evolve(maxmemory=int(space.max_bytes))
        budget = prices.budget_bytes is not None
        quick = budget and (s.budget_quick_intervals is None or self._seen <= s.budget_quick_intervals)
        ready = s.budget_min_weight if quick and s.budget_min_weight is not None else s.min_weight
        if curves is None or not self.gets or not curves.ready(ready):
            return self._blind_shrink(prices, cur, space)
        policies = [p for p in curves.policies if p in space.policies]
        if not s.change_policy or self._knobs_on(curves, prices):  # the knob rule owns the policy (decide_after)
            policies = [p for p in policies if p == cur.maxmemory_policy]
        if not policies:
            return cur
        cc = cost_curve(curves, prices, self.rate, (space.min_bytes, space.max_bytes), policies=policies,
                        n=s.n_candidates, shortfall=s.size_shortfall or 0.0)
        self.last = cc
        if not cc.cost:
            return cur
        if s.cold_growth_heeds_optimum and self._reach_in_force():  # an opt-in: no readiness check on every decision when off
            heed = s.shrink_min_weight if s.cold_growth_heeds_weight is None else s.cold_growth_heeds_weight
            self._opt_below = curves.ready(heed) and cc.best_size <= cur.maxmemory
        best_policy = cc.best_policy
        # policies within the hysteresis band of each other: keep the one in force (no flapping)
        if (cur.maxmemory_policy in cc.cost and cur.maxmemory_policy != best_policy
                and cc.cost_at(cur.maxmemory_policy, cc.best_size) <= cc.best_cost * (1 + s.hysteresis)):
            best_policy = cur.maxmemory_policy
        if best_policy != cur.maxmemory_policy and cur.maxmemory_policy in curves.hit:
            mono = curves.monotone()
            gain = float(mono.hit_ratio(best_policy, cc.best_size)) - float(mono.hit_ratio(cur.maxmemory_policy, cc.best_size))
            lasting = s.policy_sustained_gain is not None and budget and gain >= s.policy_sustained_gain
            self._policy_streak = self._policy_streak + 1 if lasting else 0
            min_gain = s.budget_policy_gain if quick and s.budget_policy_gain is not None else s.policy_min_gain
            if gain < min_gain and self._policy_streak < s.policy_patience:
                best_policy = cur.maxmemory_policy
        else:
            self._policy_streak = 0
        cap = self._shrink_cap(prices, curves, cur)
        size = cc.best_size if cc.best_size > cur.maxmemory else self._band_edge(cc, best_policy, cur.maxmemory,
                                                                                 s.hysteresis, self._shrink_band(prices),
                                                                                 cap)
        target = (best_policy, space.clip(size))
        if self._near(target, self._candidate):
            self._streak += 1
        else:
            self._candidate, self._streak = target, 1
        now = cc.cost_at(cur.maxmemory_policy, cur.maxmemory)
        if now != now:  # no curve for the policy in force (e.g. a volatile-* policy): move as soon as confirmed
            return self._move(cur, target) if self._streak >= s.confirm else cur
        settled = self._settled_shrink(cc, best_policy, cur, space, now)
        if settled is not None and curves.ready(s.shrink_min_weight) and self._repays(
                curves, prices, cur, settled, now - cc.cost_at(*settled)) and not self._regrows(prices, settled[1], space):
            return self._move(cur, settled)
        shrink = target[1] < cur.maxmemory
        base = self._cold_base
        back = shrink and base is not None and target[1] >= base  # giving back cold growth's unproven bytes
        if back and base is not None and cc.cost_at(target[0], base) <= cc.cost[target[0]].min() * (1 + s.hysteresis):
            target = (target[0], base)  # all the way back to the status quo when the band allows it
        saving = now - cc.cost_at(*target)
        freed = shrink and self._free_shrink(prices, cur, target[1])
        free = shrink and (back or freed)
        waits = shrink and not freed and (not back or s.cold_return_waits)  # for shrink_min_weight's evidence
        if waits and not curves.ready(s.shrink_min_weight):
            self._pending = target[1]
            return cur
        need = s.shrink_confirm if shrink and not free else s.confirm
        if quick and s.budget_quick_confirm is not None and target[1] == cur.maxmemory:  # a policy-only move
            need = min(need, s.budget_quick_confirm)
        band = s.hysteresis_growth if (s.hysteresis_growth is not None and target[1] > cur.maxmemory) else s.hysteresis
        in_misses = self._shrink_band(prices) if shrink else None
        margin = in_misses if in_misses is not None else band * max(now, 0.0)
        if shrink and cap is not None:
            margin = min(margin, cap)
        if self._streak < need or saving <= margin:
            return cur
        if shrink and self._regrows(prices, target[1], space):
            return cur
        if not self._repays(curves, prices, cur, target, saving):
            return cur
        moved = self._move(cur, target)
        self._at_edge = shrink and target[1] > space.clip(cc.best_size)  # a shrink that stopped at the band's edge
        return moved

    def _repays(self, curves: MissRatioCurves, prices: Prices, cur: RedisConfig, target: tuple[str, int],
                saving: float) -> bool:
        """Whether a move's predicted saving per interval repays, within ``payback_intervals``, the switch, the refill
        of the bytes at stake and a policy switch's transient."""
        return saving * self.rule.payback_intervals > (prices.switch + self._refill_cost(curves, prices, cur, target)
                                                       + self._switch_transient(prices, cur, target[0]))

    def _settled_shrink(self, cc: CostCurve, policy: str, cur: RedisConfig, space: ConfigSpace,
                        now: float) -> tuple[str, int] | None:
        """``shrink_patience``: the optimum to shrink to once it has been a smaller size of the policy in force,
        predicted cheaper than ``now``, for that many intervals in a row (None until then, or when off)."""
        n = self.rule.shrink_patience
        if n is None:
            return None
        opt = int(space.clip(cc.best_size))
        # only from the edge a shrink of the rule stopped at: everywhere else the band guards a size the rule chose
        # or grew to (a young curve underrates a large cache: ARC P2's late reuse, seen)
        lower = self._at_edge and policy == cur.maxmemory_policy and opt < cur.maxmemory and cc.cost_at(policy, opt) < now
        self._low_streak = self._low_streak + 1 if lower else 0
        return (policy, opt) if lower and self._low_streak >= n else None

    def decide_after(
        self, snap: MetricsSnapshot, curves: MissRatioCurves | None, prices: Prices, cur: RedisConfig, space: ConfigSpace,
    ) -> RedisConfig:
        """:meth:`decide` on the interval ``snap`` describes (its GETs, misses and whether the cache was
        full), then the fill cap (``fill_headroom``): what the ``mrc`` controller and the env's anchor both
        call, so they read it alike. The rule itself reasons from the size it chose, not the capped one."""
        self._last_snap = snap
        self._at_interval(float(snap.interval_s))
        self._seen += 1
        if self.fill is None:
            return self._take_start(self._choose_knobs(curves, prices, self.decide(
                curves, prices, snap.gets, cur, space, snap.gets - snap.hits, full=is_full(snap)), space), cur, space)
        in_force = cur.maxmemory  # the limit in force now (the fill cap holds it; the snapshot's gauge may lag it live)
        cur = self.fill.intended(cur)  # full is judged against the size the rule chose, not the cap
        full = is_full(snap, cur.maxmemory)
        # tracked every interval, so "stops for good" holds even if the curves were first ready while filling; the
        # first `confirm` intervals stay cold whatever the weight: a curve of one interval has no reuse longer than
        # one interval, and the rule cannot move on evidence before a target has won `confirm` intervals anyway
        if self._start_used is None and not snap.stale:
            self._start_used = float(snap.used_memory)
        if not snap.stale:
            self._gets_seen += max(float(snap.gets), 0.0)
            self._keys = max(float(snap.keys), 0.0)
        self._was_ready = self._was_ready or (curves is not None and curves.ready(self.rule.min_weight)
                                              and self._seen >= self.rule.confirm)
        # free_shrink_full_at_size: the evidence counts a cache full at the chosen size, not one evicting behind a smaller limit
        at_size = not (self.rule.free_shrink_full_at_size and 0 < snap.maxmemory < FULL_SHARE * cur.maxmemory)
        nxt = self._take_start(self._choose_knobs(curves, prices, self.decide(
            curves, prices, snap.gets, cur, space, snap.gets - snap.hits, full=full and at_size), space), cur, space)
        if nxt == cur and full:
            nxt = self._cold_growth(snap, prices, cur, space)
        if not self._was_ready:
            nxt = self._cold_memory_bound(snap, prices, nxt, space)
        from_s = self.rule.fill_pending_shrink_from_s
        hold = (self._pending if from_s is not None and self._interval_s is not None and self._interval_s >= from_s
                and nxt == cur else None)
        return self.fill.apply(nxt, snap, space, prices, in_force=in_force, hold=hold)

    def _at_interval(self, interval_s: float) -> None:
        """Run on ``settings`` scaled to decisions ``interval_s`` apart (``reference_interval_s``), the fill cap's
        horizon (``payback_intervals``) with them. A stale snapshot's interval (0) keeps the scaling in force."""
        if interval_s <= 0 or interval_s == self._interval_s:
            return
        self._interval_s = interval_s
        self.rule = self.settings.scaled_to(interval_s)
        if self.fill is not None and self.rule.fill_amortized:
            self.fill.horizon_intervals = float(self.rule.payback_intervals)

    def _knobs_on(self, curves: MissRatioCurves | None, prices: Prices) -> bool:
        """Whether the knob rule chooses the policy and its knobs (``knobs``, a budget, curves with knob points)."""
        return bool(self.rule.knobs and prices.budget_bytes is not None and curves is not None and curves.knobs)

    def _choose_knobs(self, curves: MissRatioCurves | None, prices: Prices, nxt: RedisConfig,
                      space: ConfigSpace) -> RedisConfig:
        """``nxt`` with the (policy, knobs) arm :class:`~cachetuner.mrc.knobs.KnobChooser` picks, when on."""
        if not self._knobs_on(curves, prices):
            return nxt
        s = self.rule
        policies = space.policies if s.change_policy else (nxt.maxmemory_policy,)
        sustained = s.policy_sustained_gain if s.policy_sustained_gain is not None else s.policy_min_gain
        return self.knob_chooser.choose(curves, nxt, tuple(policies), min_weight=s.min_weight,
                                        min_gain=s.policy_min_gain, sustained_gain=sustained, confirm=s.confirm,
                                        patience=s.policy_patience)

    def _take_start(self, nxt: RedisConfig, cur: RedisConfig, space: ConfigSpace) -> RedisConfig:
        """The ``start`` config of :meth:`reset` instead of ``nxt``, once (the first decision); ``nxt`` after."""
        if self._start is None:
            return nxt
        start, self._start = self._start, None
        return self._move(cur, (start.maxmemory_policy, space.clip(start.maxmemory)))

    def _cold_memory_bound(self, snap: MetricsSnapshot, prices: Prices, nxt: RedisConfig, space: ConfigSpace) -> RedisConfig:
        """``nxt`` with its size capped by ``cold_memory_bound`` (see the setting), counting ``snap`` into the
        cold phase's hits and misses. Only under ``allkeys-*`` policies (the fill cap's condition), with priced
        memory, and once the cold phase has seen ``min_weight`` GETs. A stale snapshot (live path: the last
        known values again) is neither counted nor acted on."""
        s = self.rule
        if snap.stale:
            return nxt
        self._cold_hits += max(float(snap.hits), 0.0)
        self._cold_misses += max(float(snap.gets - snap.hits), 0.0)
        self._cold_n += 1
        per_byte = float(prices.memory_cost(1.0))
        if (s.cold_memory_bound is None or per_byte <= 0.0 or not nxt.maxmemory_policy.startswith("allkeys-")
                or self._cold_hits + self._cold_misses < s.min_weight):
            return nxt
        bet = s.cold_free_growth or 0.0
        worth = s.cold_memory_bound * (self._cold_hits + bet * self._cold_misses) / self._cold_n * prices.miss
        bound = space.clip(max(space.min_bytes + worth / per_byte, self._start_used or 0.0))
        return nxt.evolve(maxmemory=bound) if nxt.maxmemory > bound else nxt

    def _cold_growth(self, snap: MetricsSnapshot, prices: Prices, cur: RedisConfig, space: ConfigSpace) -> RedisConfig:
        """``cur`` grown by ``cold_growth`` (see the setting) when it applies to a cache that is full at ``cur``:
        on, with the fill cap, under an ``allkeys-*`` policy (the cap's condition), the curves never ready since
        the reset (or in the young window after a cold reset, ``_young_window``: curves that watched history are not
        young; ``cold_growth_heeds_optimum`` ends it early), and the interval's hits worth at least the memory held.
        Else ``cur``."""
        s = self.rule
        late = self._was_ready and (not self._young_window() or self._opt_below)
        if (not s.cold_growth or self.fill is None or late or not cur.maxmemory_policy.startswith("allkeys-")
                or snap.hits * prices.miss < prices.memory_cost(cur.maxmemory)):
            return cur
        if self._cold_base is None or (s.cold_growth_rebase and self._reach_in_force() and self._was_ready):
            self._cold_base = cur.maxmemory  # once the curves are ready, a size the rule held on them is the status quo
        return cur.evolve(maxmemory=space.clip(s.cold_growth * max(cur.maxmemory, self.fill.need(snap))))

    def _free_growth(self, prices: Prices, size: int, space: ConfigSpace, misses: float | None = None) -> bool:
        """Whether growing a cache of ``size`` to the largest size risks at most ``free_growth`` (``cold_free_growth``
        until the curves are first ready) of the misses' cost (see the settings); ``misses``: per interval (default:
        the smoothed ones)."""
        s = self.rule
        share = s.free_growth
        if s.cold_free_growth is not None and self.fill is not None and not self._was_ready:
            share = max(share, s.cold_free_growth)  # no evidence yet: a bounded bet (see cold_free_growth)
        misses = self.misses if misses is None else misses
        if not share or misses is None or size >= space.max_bytes:
            return False
        switch = prices.switch / s.payback_intervals if s.free_growth_amortized else prices.switch
        worst_loss = float(prices.memory_cost(space.max_bytes) - prices.memory_cost(size)) + switch
        return worst_loss <= share * misses * prices.miss

    def _regrows(self, prices: Prices, size: int, space: ConfigSpace) -> bool:
        """``regrow_guard``: whether free growth would grow a cache of ``size`` straight back at the usual miss
        level (the larger of the smoothed misses and their mean since the reset)."""
        if not self.rule.regrow_guard or self.misses is None or not self._miss_n:
            return False
        usual = max(self.misses, self._miss_sum / self._miss_n)
        return self._free_growth(prices, int(size), space, misses=usual)

    def _track_hits(self, cur: RedisConfig, hits: float, full: bool, gets: float) -> None:
        """Smoothed hits of the cache in force, restarted whenever its size or policy changes (the hits of
        another config say nothing about this one's worth) and started only once it has been full (a cache
        filling from cold hits less than it will); ``gets`` are summed alongside (free shrink's evidence)."""
        held = (cur.maxmemory, cur.maxmemory_policy)
        if held != self._held:
            self._held, self._held_hits, self._held_n, self._held_gets = held, 0.0, 0, 0.0
        if self._held_n == 0:
            if full:
                self._held_hits, self._held_n, self._held_gets = max(hits, 0.0), 1, max(gets, 0.0)
            return
        a = max(self.rule.gets_smoothing, 1.0 / (self._held_n + 1))  # a plain mean until the EWMA has history
        self._held_hits = (1 - a) * self._held_hits + a * max(hits, 0.0)
        self._held_n += 1
        self._held_gets += max(gets, 0.0)

    def _free_shrink_bound(self, prices: Prices, cur: RedisConfig) -> float | None:
        """What the memory a shrink of ``cur`` gives back must be worth for free shrink: every hit the cache in
        force has been making, ``free_shrink`` times over, plus the switch (and the SLO penalty: a cache that
        hits nothing has the miss latency's p95). None when the rule is off or those hits are not measured yet
        (``confirm`` full intervals at ``cur``, and ``free_shrink_min_intervals`` when set, with ``free_shrink_min_gets``
        GETs served in them)."""
        s = self.rule
        if s.free_shrink is None or self._held != (cur.maxmemory, cur.maxmemory_policy) or self._held_n < s.confirm:
            return None
        if s.free_shrink_min_intervals is not None and self._held_n < s.free_shrink_min_intervals:
            return None  # full for too few intervals, whatever the GETs (free_shrink_min_intervals)
        if s.free_shrink_min_gets is not None and self._held_gets < s.free_shrink_min_gets:
            return None
        slo = prices.slo_penalty if prices.slo_penalty and np.isfinite(prices.slo_p95_ms) else 0.0
        return s.free_shrink * self._held_hits * prices.miss + prices.switch + slo

    def _free_shrink(self, prices: Prices, cur: RedisConfig, target: int) -> bool:
        """Whether the memory a shrink to ``target`` gives back outweighs every hit the cache in force has
        been making (:meth:`_free_shrink_bound`): the move cannot lose even if the smaller cache hit nothing."""
        bound = self._free_shrink_bound(prices, cur)
        return bound is not None and float(prices.memory_cost(cur.maxmemory) - prices.memory_cost(target)) >= bound

    def _blind_shrink(self, prices: Prices, cur: RedisConfig, space: ConfigSpace) -> RedisConfig:
        """Free shrink without a curve (``free_shrink_blind``): the largest size that meets :meth:`_free_shrink`'s
        bound and is a move (at most ``cur`` / 1.25: sizes within 25 % count as one target), else ``cur``. The
        bound holds whatever the smaller cache hits, so it needs no prediction; when the hits are worth little
        this steps down by 1.25x every ``confirm`` full intervals until the curves are ready."""
        per_byte = float(prices.memory_cost(1.0))
        bound = self._free_shrink_bound(prices, cur) if self.rule.free_shrink_blind and per_byte > 0.0 else None
        if bound is None:
            return cur
        # every size up to cur - bound/per_byte meets the bound; take the largest that is also a move (the
        # lower bound of the space may lift it back above what the bound allows)
        size = space.clip(min(cur.maxmemory - bound / per_byte, cur.maxmemory / 1.25))
        given_back = float(prices.memory_cost(cur.maxmemory) - prices.memory_cost(size))
        if size >= cur.maxmemory or given_back < bound or self._regrows(prices, size, space):
            return cur
        return self._move(cur, (cur.maxmemory_policy, size))

    def _shrink_band(self, prices: Prices) -> float | None:
        """``shrink_band_misses``: a shrink's band in cost, the GETs' share missing (None: off)."""
        share = self.rule.shrink_band_misses
        return None if share is None else share * self.rate * prices.miss

    def _shrink_cap(self, prices: Prices, curves: MissRatioCurves, cur: RedisConfig) -> float | None:
        """``shrink_band_cap_misses``: the most a shrink's band may be, in cost (None: off, or not a scan by
        ``shrink_band_cap_hit_ratio``)."""
        s = self.rule
        if s.shrink_band_cap_misses is None:
            return None
        if s.shrink_band_cap_hit_ratio is not None:
            if cur.maxmemory_policy not in curves.hit:
                return None
            if float(curves.monotone().hit_ratio(cur.maxmemory_policy, cur.maxmemory)) >= s.shrink_band_cap_hit_ratio:
                return None
        return s.hysteresis * float(prices.memory_cost(cur.maxmemory)) + s.shrink_band_cap_misses * self.rate * prices.miss

    @staticmethod
    def _band_edge(cc: CostCurve, policy: str, current: int, band: float, absolute: float | None = None,
                   cap: float | None = None) -> int:
        """For a shrink: the size nearest to ``current`` whose predicted cost is within ``band`` of the
        optimum (drop only as much warm data as the curve insists on); ``absolute``: the band in cost instead;
        ``cap``: the band in cost at most."""
        costs = cc.cost[policy]
        least = float(costs.min())
        limit = least + absolute if absolute is not None else least * (1 + band)
        if cap is not None:
            limit = min(limit, least + cap)
        ok = cc.sizes[costs <= limit]
        if not len(ok):
            return cc.best_size
        if ok.min() <= current <= ok.max():
            return int(ok[np.argmin(np.abs(ok - current))])
        return int(ok.max() if ok.max() < current else ok.min())

    def _move(self, cur: RedisConfig, target: tuple[str, int]) -> RedisConfig:
        self._low_streak = 0  # shrink_patience counts from the size in force
        self._at_edge = False
        self._cold_base = None  # a size the rule chose on evidence: its shrink gates hold from now on
        return cur.evolve(maxmemory=target[1], maxmemory_policy=target[0])

    @staticmethod
    def _near(a: tuple[str, int], b: tuple[str, int] | None) -> bool:
        """Sizes within 25 % of each other (a target drifting with the window is the same target)."""
        return b is not None and max(a[1], b[1]) <= min(a[1], b[1]) * 1.25

    def _switch_transient(self, prices: Prices, cur: RedisConfig, policy: str) -> float:
        """``budget_switch_transient``: the misses a switch of ``cur`` to ``policy`` costs while the keys it holds are
        read under the new policy's meaning of their lru bits: half the objects in the cache, each hit at the
        interval's hit ratio, one miss each; 0 when off, without a budget, without a policy change or metrics."""
        snap = self._last_snap
        if (not self.rule.budget_switch_transient or prices.budget_bytes is None or policy == cur.maxmemory_policy
                or snap is None or snap.stale or snap.gets <= 0):
            return 0.0
        objects = float(snap.keys) if snap.keys else 0.0
        return 0.5 * objects * (snap.hits / snap.gets) * prices.miss

    def _refill_cost(self, curves: MissRatioCurves, prices: Prices, cur: RedisConfig, target: tuple[str, int]) -> float:
        """Misses a cache grown from the smaller to the larger of the two sizes pays before it holds what
        the curve assumes: half the per-interval hit gain over the fill time."""
        assert self.gets is not None
        small, big = sorted((cur.maxmemory, target[1]))
        if big <= small or target[0] not in curves.hit:
            return 0.0
        mono = curves.monotone()
        h_small = float(mono.hit_ratio(target[0], small))
        h_big = float(mono.hit_ratio(target[0], big))
        misses = max(self.rate * (1.0 - h_small), 1.0)
        fill_intervals = (big - small) / (misses * max(curves.object_bytes, 1.0))
        gain = max(h_big - h_small, 0.0) * self.rate * prices.miss
        return 0.5 * gain * min(fill_intervals, self.rule.payback_intervals)


__all__ = ["MRCControlSettings", "MRCDecider", "is_full"]
