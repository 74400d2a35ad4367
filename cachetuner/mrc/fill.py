"""Fill cap: while a cache is still filling, hold only the memory it uses plus headroom for its inserts.

Why: memory is charged on ``maxmemory`` held, but a cache below its ``maxmemory`` hits exactly as often
as it would with any larger limit: no key has been evicted yet. After a cold start (a restart, a new
deployment, every replayed episode) a cache takes many intervals to fill its size, and every static
config pays for the empty part all that time. The cap sets ``maxmemory`` to the bytes in use plus
``headroom_intervals`` intervals of inserts (at least ``min_share`` of the bytes in use), raised ahead
of the data, so no eviction is caused while the cache fills; it lifts once the cache reaches the size the
rule chose (the *intended* size) or evicts. A burst of inserts beyond the headroom evicts the coldest keys
of a still-filling cache (the only way the cap can cost hits); the cap then jumps to the intended size.
The same holds after the rule *grows* a full cache: its new bytes fill only through misses, so the cap
engages at once and the limit follows the data into them (the interval just measured evicted at the old
size, which says nothing about the new one).
Only under ``allkeys-*`` policies: under ``noeviction`` or ``volatile-*`` a cache at its limit may refuse
writes instead of evicting.

Which decisions it changes: only ``maxmemory``, only downwards from the intended config, never below
the bounds. While a shrink the rule wants waits for its evidence (``hold``, at long decision intervals:
``fill_pending_shrink_from_s``) the cap gives no headroom: the bytes in use, no more. The rule that chose the
intended config keeps deciding on the intended size (the cap hands
it back through :meth:`FillCap.intended`), so it is a layer, not a second controller.
"""

from __future__ import annotations

from cachetuner.config import RedisConfig
from cachetuner.metrics import MetricsSnapshot
from cachetuner.mrc.cost import Prices
from cachetuner.space import ConfigSpace

#: a cache whose bytes in use reach this share of its limit counts as full
FULL_SHARE = 0.95


def is_full(snap: MetricsSnapshot, maxmemory: int | None = None) -> bool:
    """Whether an interval ran with a full cache: it evicted, or ended within 5 % of ``maxmemory`` (the
    limit in force, ``snap.maxmemory``, unless another is given: the size a rule chose behind a cap)."""
    limit = snap.maxmemory if maxmemory is None else maxmemory
    return snap.evictions > 0 or (limit > 0 and snap.used_memory >= FULL_SHARE * limit)


class FillCap:
    """Caps ``maxmemory`` at used memory + headroom while the cache is filling (see the module doc)."""

    #: the cap is raised to at least this multiple of itself when it must grow (fewer config changes)
    step = 1.25
    #: the cap follows falling usage (expired keys) only when it would hold this share or less of it
    shrink_below = 0.6

    def __init__(self, headroom_intervals: float, min_share: float = 0.10, horizon_intervals: float = 1.0) -> None:
        self.headroom_intervals = float(headroom_intervals)
        self.min_share = float(min_share)
        self.horizon_intervals = float(horizon_intervals)
        self.reset()

    def reset(self) -> None:
        self._applied: RedisConfig | None = None
        self._intended: RedisConfig | None = None
        self._last_used: float | None = None

    def intended(self, cur: RedisConfig) -> RedisConfig:
        """The config the rule meant, when ``cur`` is (or a guard's version of) the capped one this layer
        applied: the cap was engaged and ``cur`` has the intended policy and at most the intended size (a
        daemon's step limit or cooldown may have kept an older cap in force). Else ``cur``: somebody else
        set it, and it is what the rule must reason from."""
        a, i = self._applied, self._intended
        if (a is not None and i is not None and a.maxmemory < i.maxmemory
                and cur.maxmemory_policy == i.maxmemory_policy and cur.maxmemory <= i.maxmemory):
            return cur.evolve(maxmemory=i.maxmemory)
        return cur

    def apply(self, intended: RedisConfig, snap: MetricsSnapshot, space: ConfigSpace, prices: Prices | None = None,
              in_force: int | None = None, hold: int | None = None) -> RedisConfig:
        """The config to run: ``intended`` with ``maxmemory`` capped while the cache is filling. With
        ``prices``, the cap holds back memory only when ``horizon_intervals`` intervals of it pay for ``2 x`` a
        config change (at list prices a GiB-hour of RAM is worth a few model calls, so a cap would cost more in
        changes than it saves), and lowers the limit in force only on the same condition, weighed over one interval
        unless it is the first reading or usage fell (see the comment at that test).

        ``in_force``: the ``maxmemory`` in force now, as the caller read it (the daemon: ``CONFIG GET``); default the
        snapshot's. On a simulator the two agree. On a live Redis the snapshot's gauge is what Prometheus last
        scraped, and with a short interval (2 s, settled 1.6 s after its boundary) it still shows the limit before
        the last change: holding "the limit in force" then meant going back to the older one, and the cap swung
        between the two every interval (measured: 23.8 and 28.6 MiB, sixteen ``CONFIG SET`` in sixteen intervals)."""
        # the size meant last time; before the first call, the limit the cache ran at (a growth at the very first
        # decision, such as cold growth's, is a growth too)
        held = int(snap.maxmemory) if in_force is None else int(in_force)
        before = held if self._intended is None else int(self._intended.maxmemory)
        self._intended = intended
        target = int(intended.maxmemory)
        used = float(snap.used_memory)
        first = self._last_used is None
        grown = used - self._last_used if self._last_used is not None else 0.0
        self._last_used = used
        prev = int(held or target)  # the limit in force (a daemon's guard may have kept an older one)
        # the rule just grew a cache that ran uncapped at its old size: that interval's evictions happened at the
        # old size, so the cache is full at the new one only if its bytes in use already are
        grew = before > 0 and target > before and prev >= before
        full = used >= FULL_SHARE * target if grew else is_full(snap, target)
        capped_policy = intended.maxmemory_policy.startswith("allkeys-")
        # a shrink to `hold` is pending (its evidence is not in yet): the cap stays on even when the cache is full at it
        holding = hold is not None and target > 0 and not snap.stale and snap.rejected_writes == 0 and capped_policy
        if not holding and (target <= 0 or full or snap.rejected_writes > 0 or snap.stale or not capped_policy):
            # unlimited or full; the headroom was outrun (evictions, or writes refused); no trustworthy reading; or a
            # policy that may refuse writes instead of evicting at the cap (noeviction, volatile-* with
            # keys that have no TTL): no cap
            cap = target
        else:
            if holding and hold is not None:  # (hold is not None: for the type checker)
                # keep the bytes in use and buy no more; the limit in force stays unless they are well below it (a
                # cache full at its cap reads a few KB under it every interval: a re-cap to each reading was a config
                # change an interval)
                need = max(used, float(hold))
                raised, horizon = need, self.horizon_intervals
            else:
                need = self.need(snap, grown)
                raised = max(need, prev * self.step)
                # lowering the limit in force to the need weighs the memory over the horizon only at the first reading
                # or when usage fell (expired keys): at 1,000 req/s the need swings with the interval's inserts, and a
                # re-cap on such a swing that paid only over the horizon evicted in the next interval, the cap lifted,
                # and it went round again, losing hits each time (audit 2's orm-night cell at cheap-backend, +6.8 %)
                horizon = self.horizon_intervals if first or grown < 0.0 else 1.0
            want = prev if need <= prev else raised
            if need < self.shrink_below * prev and self._pays(prices, prev, need, horizon):
                want = need
            cap = int(min(max(want, space.min_bytes), target))
            if cap < target and not self._pays(prices, target, cap, self.horizon_intervals):
                cap = target  # the memory held back is not worth the changes the cap makes
        self._applied = intended.evolve(maxmemory=cap)
        return self._applied

    def need(self, snap: MetricsSnapshot, grown: float = 0.0) -> float:
        """The bytes in use plus ``headroom_intervals`` intervals of inserts (the interval's misses or sets times
        the bytes per key, or ``grown``, the last interval's growth, if larger), at least ``min_share`` of them."""
        used = float(snap.used_memory)
        per_key = used / snap.keys if snap.keys > 0 else 0.0
        inserts = max(max(snap.sets, snap.misses) * per_key, grown)
        return used + max(self.headroom_intervals * inserts, self.min_share * used)

    @staticmethod
    def _pays(prices: Prices | None, held: float, lower: float, intervals: float) -> bool:
        """Whether lowering the limit from ``held`` to ``lower`` saves, over ``intervals`` intervals, twice the
        change's price."""
        if prices is None:
            return True
        return float(prices.memory_cost(held) - prices.memory_cost(lower)) * intervals >= 2.0 * prices.switch


__all__ = ["FillCap", "is_full"]
