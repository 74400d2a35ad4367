"""The fill cap (``mrc.fill_headroom``): a filling cache holds only what it uses plus headroom, lifts the
cap when it fills or evicts, and costs no hit on a real episode."""

from __future__ import annotations

import pytest

from cachetuner.config import RedisConfig
from cachetuner.control import ControlSettings
from cachetuner.control.mrc import MRCController
from cachetuner.env import EnvConfig, WorkloadSpec
from cachetuner.evaluation import evaluate_controllers
from cachetuner.metrics import MetricsSnapshot
from cachetuner.mrc.fill import FillCap
from cachetuner.space import ConfigSpace

MiB = 1 << 20
SPACE = ConfigSpace(min_bytes=4 * MiB, max_bytes=1024 * MiB, policies=("allkeys-lru", "allkeys-lfu"), timeouts=(0,))
INTENDED = RedisConfig(maxmemory=512 * MiB, maxmemory_policy="allkeys-lru")


def _snap(used: int, *, maxmemory: int = 512 * MiB, misses: int = 1000, keys: int = 10_000, evictions: int = 0,
          stale: bool = False) -> MetricsSnapshot:
    return MetricsSnapshot(interval_s=10, gets=2000, hits=2000 - misses, misses=misses, sets=misses,
                           used_memory=used, maxmemory=maxmemory, keys=keys, evictions=evictions, stale=stale)


def test_a_filling_cache_holds_its_bytes_plus_headroom_for_its_inserts() -> None:
    cap = FillCap(headroom_intervals=2.0)
    used = 40 * MiB  # 10,000 keys of 4 KiB: 1,000 inserts an interval are ~4 MiB
    out = cap.apply(INTENDED, _snap(used), SPACE)
    assert out.maxmemory_policy == INTENDED.maxmemory_policy
    per_key = used / 10_000
    assert out.maxmemory == int(used + 2.0 * 1000 * per_key)  # two intervals of inserts (> 10 % of used)
    assert cap.intended(out) == INTENDED  # the rule keeps reasoning from the size it chose
    # a config someone else set (another policy) is what the rule must reason from
    other = out.evolve(maxmemory_policy="allkeys-lfu")
    assert cap.intended(other) == other


def test_the_cap_rises_ahead_of_the_data_in_steps_and_never_passes_the_intended_size() -> None:
    cap = FillCap(headroom_intervals=2.0)
    first = cap.apply(INTENDED, _snap(40 * MiB), SPACE).maxmemory
    held = cap.apply(INTENDED, _snap(41 * MiB, maxmemory=first, misses=500), SPACE).maxmemory
    assert held == first  # enough headroom left: no config change
    raised = cap.apply(INTENDED, _snap(int(first * 0.97), maxmemory=first), SPACE).maxmemory
    assert raised >= int(first * cap.step)  # a raise is a real step, not one per interval
    near = cap.apply(INTENDED, _snap(500 * MiB, maxmemory=raised), SPACE).maxmemory
    assert near == INTENDED.maxmemory  # within 5 % of the chosen size: the cap lifts


@pytest.mark.parametrize("why", ["evictions", "stale"])
def test_the_cap_lifts_when_the_cache_evicts_or_the_reading_is_stale(why: str) -> None:
    cap = FillCap(headroom_intervals=2.0)
    first = cap.apply(INTENDED, _snap(40 * MiB), SPACE).maxmemory
    snap = _snap(first, maxmemory=first, evictions=50) if why == "evictions" else _snap(40 * MiB, maxmemory=first, stale=True)
    assert cap.apply(INTENDED, snap, SPACE).maxmemory == INTENDED.maxmemory


def test_after_the_rule_grows_a_full_cache_the_cap_follows_the_data_into_the_new_bytes() -> None:
    cap = FillCap(headroom_intervals=2.0)
    small = INTENDED.evolve(maxmemory=256 * MiB)
    # full and evicting at the size the rule chose: no cap
    assert cap.apply(small, _snap(250 * MiB, maxmemory=256 * MiB, evictions=50), SPACE).maxmemory == 256 * MiB
    # the rule grows it: the interval just measured evicted at 256 MiB, which says nothing about 512 MiB
    used = 252 * MiB
    out = cap.apply(INTENDED, _snap(used, maxmemory=256 * MiB, evictions=40), SPACE).maxmemory
    assert 256 * MiB < out < INTENDED.maxmemory
    assert out >= used + 2.0 * 1000 * (used / 10_000)  # room for two intervals of inserts
    assert cap.intended(INTENDED.evolve(maxmemory=out)) == INTENDED  # the rule still reasons from 512 MiB
    # evictions under that cap lift it, as for a cold cache
    assert cap.apply(INTENDED, _snap(out, maxmemory=out, evictions=50), SPACE).maxmemory == INTENDED.maxmemory


def test_a_growth_at_the_very_first_decision_is_capped_too() -> None:
    """Before its first call the cap has no size the rule meant; the limit the cache ran at stands in, so a
    growth at the first decision (cold growth after a warm-up that filled the default) follows the data."""
    used = 252 * MiB
    out = FillCap(headroom_intervals=2.0).apply(INTENDED, _snap(used, maxmemory=256 * MiB, evictions=40), SPACE)
    assert 256 * MiB < out.maxmemory < INTENDED.maxmemory


def test_a_growth_outside_the_rule_is_not_capped() -> None:
    """A limit in force below the rule's last size (a daemon guard's step limit) is not an uncapped growth:
    the evictions it measured stand, and the cap stays lifted."""
    cap = FillCap(headroom_intervals=2.0)
    small = INTENDED.evolve(maxmemory=256 * MiB)
    cap.apply(small, _snap(250 * MiB, maxmemory=256 * MiB, evictions=50), SPACE)
    out = cap.apply(INTENDED, _snap(200 * MiB, maxmemory=200 * MiB, evictions=40), SPACE).maxmemory
    assert out == INTENDED.maxmemory


def test_the_cap_respects_the_lower_bound() -> None:
    out = FillCap(headroom_intervals=2.0).apply(INTENDED, _snap(MiB, misses=10, keys=100), SPACE)
    assert out.maxmemory == SPACE.min_bytes


def test_on_a_cold_episode_the_cap_saves_memory_and_costs_no_hit() -> None:
    """A cache far larger than the traffic fills in the episode: with the cap ``mrc`` makes the same
    decisions, serves the same hits, evicts nothing more, and pays less for memory."""
    wl = WorkloadSpec(trace="synthetic:zipf", rate=200,
                      params={"n_requests": 40_000, "n_keys": 20_000, "alpha": 0.8, "sizes": "fixed:4096"})
    cfg = EnvConfig(
        workloads=[wl], interval_s=10, episode_intervals=None, warmup_intervals=1,
        bounds={"min_bytes": 4 * MiB, "max_bytes": 512 * MiB, "initial_bytes": 256 * MiB},
        actions={"policies": ["allkeys-lru"], "timeouts": [0]},
        reward={"miss_cost": 0.0002, "memory_cost_per_gb_hour": 5.0, "slo_penalty": 0.0, "switch_cost": 0.0},
    )
    on = ControlSettings()
    off = on.model_copy(update={"mrc": on.mrc.model_copy(update={"fill_headroom": None})})
    rep = evaluate_controllers(cfg, {"capped": MRCController(on), "uncapped": MRCController(off)}, seed=0)
    capped, uncapped = rep.results["capped"], rep.results["uncapped"]
    assert [r.hits for r in capped.records] == [r.hits for r in uncapped.records]
    assert all(r.used_memory <= r.maxmemory for r in capped.records)
    assert capped.summary["mean_maxmemory_bytes"] < 0.5 * uncapped.summary["mean_maxmemory_bytes"]
    assert capped.summary["cost"] < uncapped.summary["cost"]


@pytest.mark.parametrize(("memory_per_gib_hour", "capped"), [(100.0, True), (0.016, False)])
def test_the_cap_holds_memory_back_only_when_that_pays_for_its_config_changes(memory_per_gib_hour: float,
                                                                            capped: bool) -> None:
    """At list prices (RAM ~ $0.016/GiB-hour, a change = one $0.002 model call) the 470 MiB held back
    are worth ~$2e-5 an interval: less than the changes the cap would make."""
    from cachetuner.mrc import Prices

    prices = Prices(memory_per_gib_hour=memory_per_gib_hour, miss=0.002, switch=0.002, interval_s=10)
    out = FillCap(headroom_intervals=2.0).apply(INTENDED, _snap(40 * MiB), SPACE, prices)
    assert (out.maxmemory < INTENDED.maxmemory) is capped


@pytest.mark.parametrize("policy", ["noeviction", "volatile-lru"])
def test_no_cap_under_a_policy_that_may_refuse_writes_at_the_limit(policy: str) -> None:
    intended = INTENDED.evolve(maxmemory_policy=policy)
    assert FillCap(headroom_intervals=2.0).apply(intended, _snap(40 * MiB), SPACE) == intended


def test_the_cap_lifts_when_writes_are_refused() -> None:
    cap = FillCap(headroom_intervals=2.0)
    first = cap.apply(INTENDED, _snap(40 * MiB), SPACE).maxmemory
    snap = _snap(first, maxmemory=first)
    snap.rejected_writes = 3
    assert cap.apply(INTENDED, snap, SPACE).maxmemory == INTENDED.maxmemory


@pytest.mark.parametrize(("miss", "horizon", "capped"), [
    (0.00002, 1.0, False),   # cheap-backend, one interval: 470 MiB for 10 s (~$2e-5) < two changes ($4e-5)
    (0.00002, 30.0, True),   # the same memory over payback_intervals pays for them 15 times over
    (0.002, 30.0, False),    # list prices: a change is a model call; 30 intervals of the memory do not pay for two
])  # fmt: skip
def test_an_amortized_cap_weighs_the_memory_over_its_horizon(miss: float, horizon: float, capped: bool) -> None:
    """``mrc.fill_amortized``: a cap set once holds while the cache fills, so the memory it holds back is weighed
    over ``horizon_intervals`` (payback_intervals) against the two changes, not over one interval."""
    from cachetuner.mrc import Prices

    prices = Prices(memory_per_gib_hour=0.016, miss=miss, switch=miss, interval_s=10)
    out = FillCap(headroom_intervals=2.0, horizon_intervals=horizon).apply(INTENDED, _snap(40 * MiB), SPACE, prices)
    assert (out.maxmemory < INTENDED.maxmemory) is capped


def test_fill_amortized_sets_the_caps_horizon_to_payback_intervals() -> None:
    from cachetuner.mrc.decide import MRCControlSettings, MRCDecider

    on = MRCDecider(MRCControlSettings(fill_amortized=True, payback_intervals=12.0))
    assert on.fill is not None and on.fill.horizon_intervals == 12.0
    off = MRCDecider(MRCControlSettings(fill_amortized=False))
    assert off.fill is not None and off.fill.horizon_intervals == 1.0


def test_an_amortized_cap_lifted_by_evictions_follows_only_falling_usage_back_down() -> None:
    """Over a 30-interval horizon, lowering a lifted limit to the bytes in use would pay, and at 1,000 req/s such a
    re-cap on a swing of the insert rate evicted again in the next interval (the cap flip-flopped; audit 2's
    orm-night cell at cheap-backend, +6.8 %): while usage grows, lowering the limit must pay within one interval
    as before; when usage falls (expired keys) the horizon applies."""
    from cachetuner.mrc import Prices

    prices = Prices(memory_per_gib_hour=0.016, miss=0.00002, switch=0.00002, interval_s=10)
    cap = FillCap(headroom_intervals=2.0, horizon_intervals=30.0)
    first = cap.apply(INTENDED, _snap(40 * MiB), SPACE, prices).maxmemory
    assert first < INTENDED.maxmemory
    lifted = cap.apply(INTENDED, _snap(first, maxmemory=first, evictions=500), SPACE, prices).maxmemory
    assert lifted == INTENDED.maxmemory  # the headroom was outrun
    grows = cap.apply(INTENDED, _snap(first + 4 * MiB, maxmemory=lifted), SPACE, prices).maxmemory
    assert grows == INTENDED.maxmemory  # usage still grows: no re-cap
    falls = cap.apply(INTENDED, _snap(30 * MiB, maxmemory=grows), SPACE, prices).maxmemory
    assert falls < INTENDED.maxmemory  # usage fell: the cap follows it down


def test_the_cap_holds_the_limit_in_force_when_the_snapshots_gauge_lags_it() -> None:
    """Live, the snapshot's ``maxmemory`` is the gauge Prometheus last scraped; with a short interval it still shows
    the limit before the last change. The cap reasons from the limit in force the caller read (``in_force``): it
    holds it while the data fits, instead of going back to the older limit and forth again every interval (measured
    on a real Redis at 2 s intervals, 23.8 and 28.6 MiB in turn)."""

    def limits(in_force: bool) -> list[int]:
        cap = FillCap(headroom_intervals=2.0)
        limit = shown = 256 * MiB  # the limit in force, and what the lagging gauge shows
        out = []
        for i in range(12):  # a cache filling slowly, 1 MiB an interval, far below the size the rule chose
            snap = MetricsSnapshot(interval_s=2, gets=2000, hits=1700, misses=300, sets=300, used_memory=(40 + i) * MiB,
                                   maxmemory=shown, keys=10_000)
            new = cap.apply(INTENDED, snap, SPACE, in_force=limit if in_force else None).maxmemory
            shown, limit = limit, new
            out.append(new)
        return out

    held = limits(in_force=True)
    assert held == sorted(held)  # it only rises ahead of the data, never back to an older limit
    assert len(set(held)) <= 4 and all(h < INTENDED.maxmemory for h in held)
    swung = limits(in_force=False)  # reading the lagging gauge as the limit in force: back and forth
    assert sum(b < a for a, b in zip(swung[:-1], swung[1:], strict=True)) >= 4
