"""Cold growth (``controllers.mrc.cold_growth``): after a cold start, a cache that fills the chosen size
before the curves have evidence grows under the fill cap instead of evicting; it stops for good once the
curves have been ready, and needs the fill cap."""

from __future__ import annotations

import dataclasses

import numpy as np

from cachetuner.config import RedisConfig
from cachetuner.control import ControlSettings
from cachetuner.control.mrc import MRCController
from cachetuner.env import EnvConfig, WorkloadSpec
from cachetuner.evaluation import evaluate_controllers
from cachetuner.metrics import MetricsSnapshot
from cachetuner.mrc import Prices
from cachetuner.mrc.curves import MissRatioCurves
from cachetuner.mrc.decide import MRCControlSettings, MRCDecider
from cachetuner.space import ConfigSpace

MiB = 1 << 20
SPACE = ConfigSpace(min_bytes=4 * MiB, max_bytes=1024 * MiB, policies=("allkeys-lru", "allkeys-lfu"), timeouts=(0,))
PRICES = Prices(memory_per_gib_hour=100.0, miss=0.0002, switch=0.0, interval_s=10)
START = RedisConfig(maxmemory=64 * MiB, maxmemory_policy="allkeys-lru")


def _full(limit: int) -> MetricsSnapshot:
    """An interval of a cache at its limit (evicting), 10,000 keys, 1,000 inserts."""
    return MetricsSnapshot(interval_s=10, gets=2000, hits=1000, misses=1000, sets=1000, used_memory=limit,
                           maxmemory=limit, keys=10_000, evictions=100)


def _curves(evidence: float) -> MissRatioCurves:
    sizes = np.geomspace(SPACE.min_bytes, SPACE.max_bytes, 8)
    hit = np.linspace(0.3, 0.6, 8)
    return MissRatioCurves(sizes, hit={"allkeys-lru": hit}, weight={"allkeys-lru": np.full(8, evidence)},
                           evidence={"allkeys-lru": np.full(8, evidence)})


def test_a_full_cache_with_young_curves_grows_instead_of_evicting() -> None:
    rule = MRCDecider(MRCControlSettings())
    snap = _full(START.maxmemory)
    out = rule.decide_after(snap, _curves(10.0), PRICES, START, SPACE)
    assert rule.fill is not None
    need = rule.fill.need(snap)  # the bytes in use + two intervals of inserts
    assert need > START.maxmemory
    assert rule.fill.intended(out).maxmemory == int(1.25 * need)
    # it evicted at 64 MiB, which says nothing about the grown size: the cap follows the data into the new bytes
    assert need <= out.maxmemory < int(1.25 * need)
    assert out.maxmemory_policy == START.maxmemory_policy


def test_a_cache_whose_hits_do_not_cover_its_memory_does_not_grow() -> None:
    """Concave curve: the next byte earns no more than the average one, so such a cache keeps its size."""
    dear = Prices(memory_per_gib_hour=2000.0, miss=0.0002, switch=0.0, interval_s=10)
    snap = _full(START.maxmemory)
    assert snap.hits * dear.miss < dear.memory_cost(START.maxmemory)  # 1,000 hits: 0.2 < 0.35 an interval
    assert MRCDecider().decide_after(snap, _curves(10.0), dear, START, SPACE) == START


def test_cold_growth_stops_for_good_once_the_curves_have_been_ready() -> None:
    # the rule itself will not move within this test; confirm=1 so that the curves' weight alone ends the cold phase
    # (cold_growth_intervals off: the cold phase's own end; the setting's extension is tested below)
    rule = MRCDecider(MRCControlSettings(confirm=1, hysteresis=10.0, hysteresis_growth=None, cold_growth_intervals=None, cold_growth_reach=None))
    assert rule.decide_after(_full(START.maxmemory), _curves(10_000.0), PRICES, START, SPACE) == START
    # the shift test restarted the window (young curves again): the cache holds the old regime's data
    assert rule.decide_after(_full(START.maxmemory), _curves(10.0), PRICES, START, SPACE) == START
    rule.reset()  # a new cold start
    filling = MetricsSnapshot(interval_s=10, gets=2000, hits=1000, misses=1000, sets=1000, used_memory=START.maxmemory // 2,
                              maxmemory=START.maxmemory, keys=5_000, evictions=0)
    rule.decide_after(filling, _curves(10_000.0), PRICES, START, SPACE)  # ready while the cache still fills
    assert rule.decide_after(_full(START.maxmemory), _curves(10.0), PRICES, START, SPACE) == START
    rule.reset()
    assert rule.decide_after(_full(START.maxmemory), _curves(10.0), PRICES, START, SPACE).maxmemory > START.maxmemory


def test_off_or_without_the_fill_cap_a_full_cache_keeps_its_size() -> None:
    for settings in (MRCControlSettings(cold_growth=None), MRCControlSettings(fill_headroom=None)):
        assert MRCDecider(settings).decide_after(_full(START.maxmemory), None, PRICES, START, SPACE) == START
    lfu = START.evolve(maxmemory_policy="volatile-lru")  # the fill cap's condition: allkeys-* only
    assert MRCDecider().decide_after(_full(START.maxmemory), None, PRICES, lfu, SPACE) == lfu


def test_on_an_episode_it_keeps_what_it_inserts_until_the_curves_are_ready() -> None:
    """A default far below the working set, filled in the first interval: without cold growth it evicts at
    once; with it the cache keeps every key until the curves have evidence, and hits more there."""
    wl = WorkloadSpec(trace="synthetic:zipf", rate=200,
                      params={"n_requests": 60_000, "n_keys": 20_000, "alpha": 0.9, "sizes": "fixed:4096"})
    cfg = EnvConfig(
        workloads=[wl], interval_s=10, episode_intervals=None, warmup_intervals=0,
        bounds={"min_bytes": 4 * MiB, "max_bytes": 512 * MiB, "initial_bytes": 4 * MiB},
        actions={"policies": ["allkeys-lru"], "timeouts": [0]},
        reward={"miss_cost": 0.0002, "memory_cost_per_gb_hour": 5.0, "slo_penalty": 0.0, "switch_cost": 0.0},
    )
    # cold growth alone: at these prices cold free growth would take the largest size at once
    on = ControlSettings()
    on = on.model_copy(update={"mrc": on.mrc.model_copy(update={"cold_free_growth": None})})
    off = on.model_copy(update={"mrc": on.mrc.model_copy(update={"cold_growth": None})})
    rep = evaluate_controllers(cfg, {"on": MRCController(on), "off": MRCController(off)}, seed=0)
    grew, held = rep.results["on"].records, rep.results["off"].records
    early = slice(1, 4)  # full from the first interval, curves not ready yet (min_weight 500 sampled GETs)
    assert all(r.used_memory <= 4 * MiB for r in held[early])  # evicting at the default's 4 MiB
    assert [r.used_memory for r in grew[early]] == sorted(r.used_memory for r in grew[early])
    assert grew[3].used_memory > 2 * held[3].used_memory  # kept what it inserted
    assert sum(r.hits for r in grew[early]) > sum(r.hits for r in held[early])
    assert all(r.maxmemory <= 512 * MiB for r in grew)


def test_once_the_curves_are_ready_it_gives_the_unproven_bytes_back_without_waiting_shrink_confirm() -> None:
    """The curve puts the optimum at the size before the growth: the rule returns there after ``confirm``
    intervals, not ``shrink_confirm`` (that gate guards a size chosen on evidence, which this was not). Since
    2026-12-03 (``cold_return_waits``) the return still waits for ``shrink_min_weight``'s evidence, as every
    shrink does: the young curve that asks for it underrates large caches; before, it skipped that gate too."""
    sizes = np.geomspace(SPACE.min_bytes, SPACE.max_bytes, 8)
    base = RedisConfig(maxmemory=int(sizes[4]), maxmemory_policy="allkeys-lru")  # ~94 MiB: the curve's knee
    hit = np.array([0.1, 0.2, 0.3, 0.4, 0.6, 0.6, 0.6, 0.6])
    ready = MissRatioCurves(sizes, hit={"allkeys-lru": hit}, weight={"allkeys-lru": np.full(8, 600.0)},
                            evidence={"allkeys-lru": np.full(8, 600.0)})  # min_weight 500 < 600 < 1,500

    def run(settings: MRCControlSettings) -> list[int]:
        # the knee sits at the base size: size_shortfall (0.05 by default) would put the optimum just above it, and
        # this test is about cold growth's bytes, so it prices the curve as it reads
        rule = MRCDecider(settings.model_copy(update={"size_shortfall": None}))
        cur = rule.decide_after(_full(base.maxmemory), None, PRICES, base, SPACE)
        assert rule.fill is not None
        sizes_run = [rule.fill.intended(cur).maxmemory]  # the size the rule chose (the fill cap may hold less)
        for _ in range(4):
            snap = MetricsSnapshot(interval_s=10, gets=2000, hits=1200, misses=800, sets=800,
                                   used_memory=cur.maxmemory, maxmemory=cur.maxmemory, keys=10_000, evictions=50)
            cur = rule.decide_after(snap, ready, PRICES, cur, SPACE)
            sizes_run.append(rule.fill.intended(cur).maxmemory)
        return sizes_run

    young = {"cold_growth_intervals": None, "cold_growth_reach": None}  # the cold phase's own end (the extension past it is tested below)
    grown = run(MRCControlSettings(cold_return_waits=False, **young))  # the rule before 2026-12-03 (evening)
    # the cold phase lasts `confirm` (3) intervals however much weight the curves have, so the cache, still full,
    # grows once more in the second; then the same target must win 3 intervals in a row
    assert base.maxmemory < grown[0] < grown[1] == grown[2]
    assert grown[3] == base.maxmemory  # back to the status quo, not to the band's edge
    assert run(MRCControlSettings(cold_growth=None)) == [base.maxmemory] * 5  # off: it evicts at the size it has
    # cold_return_waits: the same return waits for shrink_min_weight's evidence (600 < 1,500 here), not for
    # shrink_confirm; with the evidence it returns as soon as the target has won `confirm` intervals
    waits = run(MRCControlSettings(**young))  # the default since then
    assert waits[:3] == grown[:3] and waits[3] == waits[4] == grown[2]
    ready = MissRatioCurves(sizes, hit={"allkeys-lru": hit}, weight={"allkeys-lru": np.full(8, 2000.0)},
                            evidence={"allkeys-lru": np.full(8, 2000.0)})
    assert run(MRCControlSettings(cold_return_waits=True, **young))[3] == base.maxmemory


def test_before_the_curves_are_ready_free_growth_bets_up_to_cold_free_growth_of_the_misses() -> None:
    """The largest size costs 0.0065 more an interval than the cache in force, 6.6 % of its misses' cost (0.098):
    above free growth's 1 %, within cold free growth's 25 %. Until the curves are first ready the rule grows
    there (the fill cap holds the limit near the data); once they have been ready only the 1 % applies."""
    space = ConfigSpace(min_bytes=2 * MiB, max_bytes=16 * MiB, policies=("allkeys-lru",), timeouts=(0,))
    scaled = Prices(memory_per_gib_hour=200.0, miss=0.002, switch=0.0, interval_s=10)
    cur = RedisConfig(maxmemory=4 * MiB, maxmemory_policy="allkeys-lru")
    snap = MetricsSnapshot(interval_s=10, gets=100, hits=51, misses=49, sets=49, used_memory=cur.maxmemory,
                           maxmemory=cur.maxmemory, keys=500, evictions=49)
    extra = float(scaled.memory_cost(space.max_bytes) - scaled.memory_cost(cur.maxmemory))
    assert 0.01 < extra / (snap.misses * scaled.miss) < 0.25
    rule = MRCDecider()
    out = rule.decide_after(snap, _curves(10.0), scaled, cur, space)
    assert rule.fill is not None and rule.fill.intended(out).maxmemory == space.max_bytes
    assert cur.maxmemory < out.maxmemory < space.max_bytes  # capped at the bytes in use + headroom
    # curves ready from the start (confirm=1: the weight alone ends the cold phase; the rule does not move)
    # (cold_growth_intervals off: cold growth, which would also grow this full cache, is tested above and below)
    ready = MRCDecider(MRCControlSettings(confirm=1, hysteresis=10.0, hysteresis_growth=None, cold_growth_intervals=None, cold_growth_reach=None))
    assert ready.decide_after(snap, _curves(10_000.0), scaled, cur, space) == cur
    once = MRCDecider(MRCControlSettings(confirm=1, hysteresis=10.0, hysteresis_growth=None,
                                         cold_growth_intervals=None, cold_growth_reach=None))  # ready once, then young again (a shift-test restart)
    once.decide_after(snap, _curves(10_000.0), scaled, cur, space)
    assert once.decide_after(snap, _curves(10.0), scaled, cur, space) == cur
    off = MRCDecider(MRCControlSettings(cold_free_growth=None, cold_growth=None))
    assert off.decide_after(snap, _curves(10.0), scaled, cur, space) == cur
    no_cap = MRCDecider(MRCControlSettings(fill_headroom=None))  # it needs the fill cap (and cold growth's start)
    assert no_cap.decide_after(snap, _curves(10.0), scaled, cur, space) == cur


def test_the_cold_phase_lasts_confirm_intervals_even_when_the_curves_are_ready_at_once() -> None:
    """At 1,000 req/s one interval gives the curves their evidence, but a curve of one interval has no reuse
    longer than one interval: cold growth still runs until ``confirm`` intervals have been seen (and, by default
    since 2026-12-06, through ``cold_growth_intervals``: off here, tested below)."""
    rule = MRCDecider(MRCControlSettings(hysteresis=10.0, hysteresis_growth=None,
                                         cold_growth_intervals=None, cold_growth_reach=None))  # the rule itself will not move within this test
    assert rule.settings.confirm == 3
    cur, grown = START, []
    for _ in range(4):
        nxt = rule.decide_after(_full(cur.maxmemory), _curves(10_000.0), PRICES, cur, SPACE)
        assert rule.fill is not None
        grown.append(rule.fill.intended(nxt).maxmemory > cur.maxmemory)
        cur = rule.fill.intended(nxt)
    assert grown == [True, True, False, False]


def test_before_the_curves_are_ready_the_memory_held_is_what_the_hits_pay_for() -> None:
    """A cache filled by writes and seldom read (3 % of 500 GETs hit): until the curves are ready the size the
    rule chose is capped at the minimum plus twice what the hits and a quarter of the misses pay for, but never
    below the bytes in use when the controller started, and only once the cold phase has seen min_weight GETs;
    off with null, and with free memory (a budget)."""
    prices = Prices(memory_per_gib_hour=1000.0, miss=0.002, switch=0.0, interval_s=10)
    big = RedisConfig(maxmemory=512 * MiB, maxmemory_policy="allkeys-lru")

    def snap(used: int, gets: int = 500) -> MetricsSnapshot:
        hits = round(0.03 * gets)
        return MetricsSnapshot(interval_s=10, gets=gets, hits=hits, misses=gets - hits, sets=2000, used_memory=used,
                               maxmemory=big.maxmemory, keys=used // 8192, evictions=0)

    worth = 2 * (15 + 0.25 * 485) * prices.miss  # $ an interval
    bound = SPACE.min_bytes + worth / float(prices.memory_cost(1.0))
    assert 180 * MiB < bound < 230 * MiB
    rule = MRCDecider()
    assert rule.settings.min_weight == 500
    out = rule.decide_after(snap(20 * MiB), None, prices, big, SPACE)
    assert rule.fill is not None and rule.fill.intended(out).maxmemory == int(bound)
    assert out.maxmemory <= int(bound)
    warm = MRCDecider()  # 300 MiB in use at the start: a quiet first interval does not cut what is there
    out = warm.decide_after(snap(300 * MiB), None, prices, big, SPACE)
    assert warm.fill is not None and warm.fill.intended(out).maxmemory == 300 * MiB
    quiet = MRCDecider()  # 100 GETs, then 300: below min_weight the bound waits; at 500 GETs in all it acts
    out = quiet.decide_after(snap(20 * MiB, gets=100), None, prices, big, SPACE)
    assert quiet.fill is not None and quiet.fill.intended(out).maxmemory == big.maxmemory
    out = quiet.decide_after(snap(20 * MiB, gets=400), None, prices, quiet.fill.intended(out), SPACE)
    assert quiet.fill.intended(out).maxmemory < big.maxmemory
    # a stale snapshot (live path: Prometheus missed a scrape, the last known values) is neither counted nor acted
    # on, and does not set the floor: the next fresh one does
    late = MRCDecider()
    out = late.decide_after(dataclasses.replace(snap(0), stale=True), None, prices, big, SPACE)
    assert late.fill is not None and late.fill.intended(out).maxmemory == big.maxmemory
    out = late.decide_after(snap(300 * MiB), None, prices, late.fill.intended(out), SPACE)
    assert late.fill.intended(out).maxmemory == 300 * MiB
    off = MRCDecider(MRCControlSettings(cold_memory_bound=None))
    out = off.decide_after(snap(20 * MiB), None, prices, big, SPACE)
    assert off.fill is not None and off.fill.intended(out).maxmemory == big.maxmemory
    free = Prices(memory_per_gib_hour=0.0, miss=0.002, switch=0.0, interval_s=10)
    unpriced = MRCDecider()
    out = unpriced.decide_after(snap(20 * MiB), None, free, big, SPACE)
    # free memory: free growth takes the largest size, and the bound leaves it there
    assert unpriced.fill is not None and unpriced.fill.intended(out).maxmemory == SPACE.max_bytes


def test_cold_growth_intervals_keeps_growing_a_full_cache_for_that_many_intervals() -> None:
    """``cold_growth_intervals``: with curves ready at once (the cold phase ends after ``confirm`` intervals), a full
    cache whose hits pay for its memory keeps growing under the fill cap through interval N since the reset, not
    after; the rule's own decisions (here: hold, with a wide band) come first."""
    def sizes(n: int | None) -> list[int]:
        rule = MRCDecider(MRCControlSettings(confirm=1, hysteresis=10.0, hysteresis_growth=None, cold_growth_intervals=n,
                                             cold_growth_reach=None, cold_growth_heeds_optimum=False))
        assert rule.fill is not None  # cold growth needs the fill cap (on by default)
        cur, out = START, []
        for _ in range(6):
            cur = rule.decide_after(_full(rule.fill.intended(cur).maxmemory), _curves(10_000.0), PRICES, cur, SPACE)
            out.append(rule.fill.intended(cur).maxmemory)
        return out

    assert sizes(None) == [START.maxmemory] * 6  # ready at the first interval: no cold growth at all
    grown = sizes(4)
    assert all(b > a for a, b in zip([START.maxmemory, *grown[:3]], grown[:4], strict=True))  # intervals 1-4 grow
    assert grown[4] == grown[5] == grown[3]  # then the size holds
    warm = MRCDecider(MRCControlSettings(confirm=1, hysteresis=10.0, hysteresis_growth=None, cold_growth_intervals=4,
                                         cold_growth_reach=None))
    warm.reset(warm=True)  # curves that watched history (mrc-history, the daemon's policy.history) are not young
    assert warm.decide_after(_full(START.maxmemory), _curves(10_000.0), PRICES, START, SPACE) == START


def test_free_shrink_full_at_size_ignores_evictions_behind_a_smaller_limit() -> None:
    """An interval that evicted behind a limit below the chosen size (a policy's smaller size in the env's anchor, a
    fill cap outrun) measured a smaller cache: with ``free_shrink_full_at_size`` its few hits do not start free shrink's
    evidence, so the chosen 512 MiB is not given back for them; without it, free shrink (blind here: no curves) does."""
    chosen = RedisConfig(maxmemory=512 * MiB, maxmemory_policy="allkeys-lru")
    behind = MetricsSnapshot(interval_s=10, gets=2000, hits=10, misses=1990, sets=1990, used_memory=128 * MiB,
                             maxmemory=128 * MiB, keys=10_000, evictions=100)
    at_size = dataclasses.replace(behind, used_memory=chosen.maxmemory, maxmemory=chosen.maxmemory)

    def run(on: bool, snaps: list[MetricsSnapshot]) -> list[int]:
        rule = MRCDecider(MRCControlSettings(free_shrink_full_at_size=on, cold_memory_bound=None))
        assert rule.fill is not None
        # the size the rule means (the fill cap holds the unfilled part back, which is not the point here)
        return [rule.fill.intended(rule.decide_after(s, None, PRICES, chosen, SPACE)).maxmemory for s in snaps]

    assert run(False, [behind] * 4)[-1] < chosen.maxmemory
    assert run(True, [behind] * 4) == [chosen.maxmemory] * 4
    # full at the chosen size, the same hits are evidence either way
    assert run(True, [at_size] * 4)[-1] < chosen.maxmemory


def test_cold_growth_heeds_an_optimum_at_or_below_the_size_in_force() -> None:
    """``cold_growth_heeds_optimum``: in the young window (curves ready, within ``cold_growth_intervals``), curves
    with a shrink's evidence (``shrink_min_weight``) that put the optimum at or below the size in force stop cold
    growth: the full cache keeps its size (the rule, with a wide band, holds it). Curves whose optimum lies above it,
    or with less evidence than a shrink needs, still let it grow, as without the setting."""
    def first(hit: np.ndarray, evidence: float, heeds: bool, weight: float | None = None) -> int:
        rule = MRCDecider(MRCControlSettings(confirm=1, hysteresis=10.0, hysteresis_growth=None, cold_growth_intervals=4,
                                             cold_growth_reach=None, cold_growth_heeds_optimum=heeds,
                                             cold_growth_heeds_weight=weight, cold_growth_reach_from_s=None))
        assert rule.fill is not None
        sizes = np.geomspace(SPACE.min_bytes, SPACE.max_bytes, 8)
        curves = MissRatioCurves(sizes, hit={"allkeys-lru": hit}, weight={"allkeys-lru": np.full(8, evidence)},
                                 evidence={"allkeys-lru": np.full(8, evidence)})
        out = rule.decide_after(_full(START.maxmemory), curves, PRICES, START, SPACE)
        assert rule.last is not None and rule.last.best_policy == "allkeys-lru"
        below = rule.last.best_size <= START.maxmemory
        assert below == bool(hit[0] == hit[-1])  # the flat curve's optimum is the smallest size, the rising one's above
        return rule.fill.intended(out).maxmemory

    flat, rising = np.full(8, 0.5), np.linspace(0.3, 0.9, 8)
    assert first(flat, 10_000.0, heeds=False) > START.maxmemory  # the rule before: cold growth regardless
    assert first(flat, 10_000.0, heeds=True) == START.maxmemory  # a shrink's evidence for less memory: no growth
    assert first(flat, 1_000.0, heeds=True) > START.maxmemory  # ready (min_weight) but short of a shrink's evidence
    assert first(flat, 1_000.0, heeds=True, weight=500.0) == START.maxmemory  # cold_growth_heeds_weight: less will do
    assert first(rising, 10_000.0, heeds=True) == first(rising, 10_000.0, heeds=False) > START.maxmemory


def test_cold_growth_reach_keeps_growing_until_the_history_is_that_many_times_the_keys() -> None:
    """``cold_growth_reach``: with curves ready at once and no interval window (``cold_growth_intervals`` null), a full
    cache keeps growing while the GETs seen since the reset are fewer than ``reach`` times the keys in the cache (here
    2,000 GETs an interval, 10,000 keys, reach 1: intervals 1-4), then holds; the rule's own decisions come first, and
    a warm start has no young window at all."""
    def sizes(reach: float | None, warm: bool = False) -> list[int]:
        rule = MRCDecider(MRCControlSettings(confirm=1, hysteresis=10.0, hysteresis_growth=None, cold_growth_intervals=None,
                                             cold_growth_reach=reach, cold_growth_heeds_optimum=False,
                                             cold_growth_reach_from_s=None))
        rule.reset(warm=warm)
        assert rule.fill is not None
        cur, out = START, []
        for _ in range(6):
            cur = rule.decide_after(_full(rule.fill.intended(cur).maxmemory), _curves(10_000.0), PRICES, cur, SPACE)
            out.append(rule.fill.intended(cur).maxmemory)
        return out

    assert sizes(None) == [START.maxmemory] * 6  # off: ready at the first interval, so no cold growth at all
    grown = sizes(1.0)
    assert all(b > a for a, b in zip([START.maxmemory, *grown[:3]], grown[:4], strict=True))  # intervals 1-4 grow
    assert grown[4] == grown[5] == grown[3]  # 10,000 GETs seen at interval 5: the history reaches the keys, it holds
    assert sizes(1.0, warm=True) == [START.maxmemory] * 6  # curves that watched history are not young


def test_cold_growth_rebase_returns_young_growth_only_to_the_size_held_on_ready_curves() -> None:
    """``cold_growth_rebase``: the status quo that giving back cold growth's bytes returns to is, once the curves are
    ready, the size each young growth started from (the rule held it on those curves), not the size before the first
    growth, which a return long after would otherwise fall back to with everything grown since."""
    def grow(rebase: bool) -> tuple[list[int], int | None]:
        rule = MRCDecider(MRCControlSettings(confirm=1, hysteresis=10.0, hysteresis_growth=None, cold_growth_intervals=None,
                                             cold_growth_reach=1.0, cold_growth_rebase=rebase,
                                             cold_growth_heeds_optimum=False, cold_growth_reach_from_s=None))
        assert rule.fill is not None
        cur, out = START, []
        for _ in range(4):
            cur = rule.decide_after(_full(rule.fill.intended(cur).maxmemory), _curves(10_000.0), PRICES, cur, SPACE)
            out.append(rule.fill.intended(cur).maxmemory)
        return out, rule._cold_base

    grown, base = grow(False)
    assert grown[3] > grown[2] > START.maxmemory and base == START.maxmemory  # the size before the first growth
    grown_rb, base_rb = grow(True)
    assert grown_rb == grown and base_rb == grown[2]  # the same growth; the return goes to the last size held


def test_cold_growth_reach_from_s_bounds_rule_ten_to_long_intervals() -> None:
    """``cold_growth_reach_from_s``: ``cold_growth_reach``, ``cold_growth_rebase`` and ``cold_growth_heeds_optimum``
    act only at decisions at least that many seconds apart. At 10 s with 57 the young window is the one without them
    (here none: ready at once, no interval window), at 60 s the one with them, as without the bound; the rebase and
    the optimum guard follow the same switch. The rule ships with all four on (rule eleven, 2026-12-08)."""
    d = MRCControlSettings()
    assert (d.cold_growth_reach, d.cold_growth_rebase, d.cold_growth_heeds_optimum, d.cold_growth_reach_from_s) == (
        2.0, True, True, 57.0)
    def run(interval_s: int, from_s: float | None, reach: float | None = 1.0, rebase: bool = True,
            heeds: bool = False, curves: MissRatioCurves | None = None, n: int | None = None,
            ) -> tuple[list[int], int | None]:
        rule = MRCDecider(MRCControlSettings(confirm=1, hysteresis=10.0, hysteresis_growth=None, cold_growth_intervals=n,
                                             reference_interval_s=interval_s, cold_growth_reach=reach,
                                             cold_growth_rebase=rebase, cold_growth_heeds_optimum=heeds,
                                             cold_growth_reach_from_s=from_s))
        assert rule.fill is not None
        cur, out = START, []
        for _ in range(6):
            snap = dataclasses.replace(_full(rule.fill.intended(cur).maxmemory), interval_s=interval_s)
            cur = rule.decide_after(snap, curves or _curves(10_000.0), PRICES, cur, SPACE)
            out.append(rule.fill.intended(cur).maxmemory)
        return out, rule._cold_base

    short, _ = run(10, 57.0)
    assert short == run(10, 57.0, reach=None)[0] == [START.maxmemory] * 6  # 10 s: no window by reach
    long, base = run(60, 57.0)
    assert (long, base) == run(60, None) and long[3] > long[0] > START.maxmemory  # 60 s: rule ten as without the bound
    assert base == long[2] and run(60, 57.0, rebase=False)[1] == START.maxmemory  # rebased at 60 s
    assert run(10, None)[0][3] > START.maxmemory  # no bound: the window by reach at 10 s too
    flat = MissRatioCurves(np.geomspace(SPACE.min_bytes, SPACE.max_bytes, 8), hit={"allkeys-lru": np.full(8, 0.5)},
                           weight={"allkeys-lru": np.full(8, 10_000.0)}, evidence={"allkeys-lru": np.full(8, 10_000.0)})
    assert run(60, 57.0, heeds=True, curves=flat, n=4)[0] == [START.maxmemory] * 6  # the guard acts at 60 s
    assert run(10, None, heeds=True, curves=flat, n=4)[0] == [START.maxmemory] * 6  # and, unbounded, at 10 s
    assert run(10, 57.0, heeds=True, curves=flat, n=4)[0][0] > START.maxmemory  # bounded: not at 10 s (window of 4)
