"""Miss-ratio curves: accuracy against full simulation, the live (pre-sampled) path, windowing,
monotone fitting, and the cost arithmetic the controllers read."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cachetuner.backend import RequestSample
from cachetuner.config import RedisConfig
from cachetuner.env.config import RewardConfig
from cachetuner.env.reward import interval_cost
from cachetuner.keysample import hash_sample_mask
from cachetuner.metrics import MetricsSnapshot
from cachetuner.mrc import MRCConfig, MRCEstimator, Prices, cost_curve, isotonic
from cachetuner.sim import TieredCacheSim
from cachetuner.sim.params import SimParams
from cachetuner.sim.sizing import working_set_charge
from cachetuner.traces import read_trace


@pytest.fixture(scope="module")
def web07():
    return read_trace("bundled:web07", size_model="fixed:4096")


def _feed(est: MRCEstimator, tr, chunk: int = 5000, rate: float = 1.0) -> None:
    for i in range(0, len(tr), chunk):
        j = min(len(tr), i + chunk)
        keys = tr.keys[i:j]
        if rate < 1.0:
            m = hash_sample_mask(keys, rate)
            gets = int(np.count_nonzero(tr.ops[i:j] == 0))
            est.update(RequestSample(keys=keys[m], sizes=tr.sizes[i:j][m], timestamps=tr.timestamps[i:j][m],
                                     ops=tr.ops[i:j][m], ttls=tr.ttls[i:j][m], rate=rate),
                       total_gets=gets, total_get_bytes=int(tr.sizes[i:j].sum()))
        else:
            est.update(RequestSample(keys=keys, sizes=tr.sizes[i:j], timestamps=tr.timestamps[i:j],
                                     ops=tr.ops[i:j], ttls=tr.ttls[i:j]))


def _bounds(tr, p: SimParams) -> tuple[int, int, float]:
    ws = int(working_set_charge(tr, p) + p.fixed_bytes)
    return int(0.05 * ws), ws, (ws - p.fixed_bytes) / tr.n_keys


def test_curves_match_full_simulation(web07) -> None:
    p = SimParams()
    lo, hi, obj = _bounds(web07, p)
    cfg = MRCConfig(n_sizes=8, half_life_gets=1e12, min_keys=2000)
    est = MRCEstimator(cfg, (lo, hi), n_keys_hint=web07.n_keys, mean_object_bytes=obj, sim_params=p)
    _feed(est, web07)
    curves = est.curves()
    assert curves.ready(1.0) and len(curves.sizes) == 8
    full = p.model_copy(update={"model_latency": False})
    for pol in cfg.policies:
        errs = []
        for size, h in zip(curves.sizes, curves.hit[pol], strict=True):
            sim = TieredCacheSim.for_trace(web07, RedisConfig(maxmemory=int(size), maxmemory_policy=pol), full)
            errs.append(abs(sim.run_counts(web07, 0, len(web07)).hit_ratio - h))
        assert np.mean(errs) < 0.03, (pol, errs)
        assert max(errs) < 0.08, (pol, errs)


def test_live_presampled_stream_gives_the_same_curves_as_the_dense_path(web07) -> None:
    """Arbitrary key ids, a stream already sampled at 5 % by the same hash, SHARDS-adj from the totals."""
    p = SimParams()
    lo, hi, obj = _bounds(web07, p)
    cfg = MRCConfig(n_sizes=6, half_life_gets=1e12, rate=0.05, min_keys=0, min_objects=0)
    dense = MRCEstimator(cfg, (lo, hi), n_keys_hint=web07.n_keys, mean_object_bytes=obj, sim_params=p)
    live = MRCEstimator(cfg, (lo, hi), n_keys_hint=None, mean_object_bytes=obj, sim_params=p)
    _feed(dense, web07)
    _feed(live, web07, rate=0.05)
    a, b = dense.curves(), live.curves()
    for pol in cfg.policies:
        assert np.max(np.abs(a.hit[pol] - b.hit[pol])) < 0.03, (a.hit[pol], b.hit[pol])


def test_window_follows_a_shift() -> None:
    """After the hot set moves to keys never seen before, a short window forgets the old phase."""
    rng = np.random.default_rng(0)
    from cachetuner.traces.trace import Trace

    keys = np.concatenate([rng.zipf(1.2, 40000) % 2000, 2000 + rng.integers(0, 20000, 40000)]).astype(np.int64)
    n = len(keys)
    tr = Trace(name="shift", timestamps=np.arange(n, dtype=float), keys=keys, sizes=np.full(n, 1000, np.int64),
               ops=np.zeros(n, np.uint8), ttls=np.zeros(n), n_keys=22000, key_bytes=np.full(22000, 16, np.int64),
               read_only=True)
    p = SimParams()
    est = MRCEstimator(MRCConfig(n_sizes=6, half_life_gets=300, rate=0.1, min_keys=0), (4 << 20, 40 << 20),
                       n_keys_hint=tr.n_keys, mean_object_bytes=1100, sim_params=p)
    _feed(est, _cut(tr, 0, 40000), chunk=4000)
    before = est.curves().hit["allkeys-lru"][0]
    _feed(est, _cut(tr, 40000, n), chunk=4000)
    after = est.curves().hit["allkeys-lru"][0]
    # phase 2 is uniform over 20,000 new keys: the smallest cache holds ~1,700 of them (~9 % hits)
    assert before > 0.5 and after < 0.25, (before, after)


def _cut(tr, a: int, b: int):
    from cachetuner.traces.trace import Trace

    return Trace(name=tr.name, timestamps=tr.timestamps[a:b], keys=tr.keys[a:b], sizes=tr.sizes[a:b], ops=tr.ops[a:b],
                 ttls=tr.ttls[a:b], n_keys=tr.n_keys, key_bytes=tr.key_bytes, read_only=tr.read_only)


@given(st.lists(st.floats(0, 1), min_size=2, max_size=30))
@settings(max_examples=60, deadline=None)
def test_isotonic_is_monotone_and_keeps_the_mean(ys: list[float]) -> None:
    y = np.asarray(ys)
    fit = isotonic(y)
    assert np.all(np.diff(fit) >= -1e-12)
    assert fit.mean() == pytest.approx(y.mean(), abs=1e-9)


def test_predicted_cost_is_the_rewards_arithmetic() -> None:
    rw = RewardConfig(memory_cost_per_gb_hour=100.0, miss_cost=0.0002, slo_penalty=0.0, switch_cost=0.0)
    snap = MetricsSnapshot(interval_s=10.0, gets=1000, hits=700, misses=300, maxmemory=64 << 20, latency_p95_ms=5.0)
    real = interval_cost(snap, changed=False, cfg=rw, slo_p95_ms=1500)["total"]
    prices = Prices(memory_per_gib_hour=100.0, miss=0.0002, interval_s=10.0)
    assert float(prices.interval_cost(np.array([64 << 20]), np.array([0.7]), 1000)[0]) == pytest.approx(real)


def test_p95_prediction_crosses_the_slo_where_misses_exceed_five_percent() -> None:
    prices = Prices(memory_per_gib_hour=1.0, miss=1.0, slo_penalty=10.0, slo_p95_ms=1000.0)
    p95 = prices.p95_ms(np.array([0.01, 0.04, 0.2, 0.9]))
    assert p95[0] < 1 and p95[1] < 1  # a hit is the 95th percentile
    assert p95[2] > 300 and p95[3] > p95[2]  # a model call is


def test_cost_curve_prefers_a_small_cache_when_memory_is_dear(web07) -> None:
    p = SimParams()
    lo, hi, obj = _bounds(web07, p)
    est = MRCEstimator(MRCConfig(n_sizes=8, half_life_gets=1e12), (lo, hi), n_keys_hint=web07.n_keys,
                       mean_object_bytes=obj, sim_params=p)
    _feed(est, web07)
    cheap = cost_curve(est.curves(), Prices(memory_per_gib_hour=0.0, miss=1.0), 1000, (lo, hi))
    dear = cost_curve(est.curves(), Prices(memory_per_gib_hour=1e9, miss=1.0), 1000, (lo, hi))
    assert cheap.best_size >= 0.9 * hi
    assert dear.best_size <= 1.1 * lo


def test_size_shortfall_keeps_a_cache_above_a_cliff_and_moves_a_smooth_optimum_little() -> None:
    """A loop's curve: 50 % hits below 13 MiB, 90 % from it. The plain argmin sits at the knee, where a cache that
    holds a little less than predicted loses the loop; with a 10 % shortfall the chosen size holds the knee with that
    margin. On a smooth curve the optimum moves up by at most about the shortfall."""
    from cachetuner.mrc.curves import MissRatioCurves

    MiB = 1 << 20
    sizes = np.geomspace(4 * MiB, 64 * MiB, 48)
    cliff = MissRatioCurves(sizes, hit={"allkeys-lru": np.where(sizes >= 13 * MiB, 0.9, 0.5)})
    prices = Prices(memory_per_gib_hour=2.0, miss=0.0002, interval_s=10)
    plain = cost_curve(cliff, prices, 3000, (4 * MiB, 64 * MiB))
    robust = cost_curve(cliff, prices, 3000, (4 * MiB, 64 * MiB), shortfall=0.1)
    assert 13 * MiB <= plain.best_size < 13.5 * MiB  # at the knee
    assert robust.best_size >= 13 * MiB / 0.9  # the knee with 10 % to spare
    assert robust.best_size < 1.2 * plain.best_size
    smooth = MissRatioCurves(sizes, hit={"allkeys-lru": 0.2 + 0.15 * np.log2(sizes / (4 * MiB))})
    a = cost_curve(smooth, prices, 3000, (4 * MiB, 64 * MiB))
    b = cost_curve(smooth, prices, 3000, (4 * MiB, 64 * MiB), shortfall=0.1)
    assert a.best_size <= b.best_size <= 1.2 * a.best_size


def _shift_trace(n_phase: int = 40000):
    """Phase 1 uniform over 20,000 keys (a big cache pays), phase 2 a Zipf-1.3 hot set (it does not)."""
    from cachetuner.traces.trace import Trace

    rng = np.random.default_rng(1)
    keys = np.concatenate([rng.integers(0, 20000, n_phase), rng.zipf(1.3, n_phase) % 20000]).astype(np.int64)
    n = len(keys)
    return Trace(name="regimes", timestamps=np.arange(n, dtype=float), keys=keys, sizes=np.full(n, 1000, np.int64),
                 ops=np.zeros(n, np.uint8), ttls=np.zeros(n), n_keys=20000, key_bytes=np.full(20000, 16, np.int64),
                 read_only=True)


def _regime_estimator(tr, **cfg) -> MRCEstimator:
    conf = MRCConfig(**{"n_sizes": 6, "half_life_gets": 3000, "rate": 0.05, "min_keys": 0, **cfg})
    return MRCEstimator(conf, (2 << 20, 24 << 20), n_keys_hint=tr.n_keys, mean_object_bytes=1100, sim_params=SimParams())


def test_two_window_test_restarts_the_window_after_a_regime_change() -> None:
    """With one long window the finished uniform phase still drags the curve 15 chunks after the
    change; the shift test restarts the window, and the curve is that of the new regime (as read by an
    estimator that saw only the new regime)."""
    tr = _shift_trace()
    with_test, one_window = _regime_estimator(tr), _regime_estimator(tr, shift_threshold=None)
    for est in (with_test, one_window):
        _feed(est, _cut(tr, 0, 40000), chunk=2000)
    assert with_test.shifts == 0  # a stationary phase never triggers it
    # the ideal: warm miniature caches whose counts are dropped exactly at the change
    fresh = _regime_estimator(tr, shift_threshold=None)
    _feed(fresh, _cut(tr, 0, 40000), chunk=2000)
    for m in fresh._minis:
        m.long = m.long if m.sim is None else m.long.cleared()
    for est in (with_test, one_window, fresh):
        _feed(est, _cut(tr, 40000, 70000), chunk=2000)
    assert with_test.shifts >= 1 and one_window.shifts == 0
    ref = fresh.curves().hit["allkeys-lru"]
    err = {k: float(np.mean(np.abs(e.curves().hit["allkeys-lru"] - ref)))
           for k, e in (("test", with_test), ("one", one_window))}
    assert err["test"] < 0.5 * err["one"], err


def test_long_window_lengthens_with_its_regime_and_restarts_short_after_a_shift() -> None:
    """``half_life_growth``: on a stationary phase the long window keeps more evidence than a fixed
    half-life allows (its weight saturates at half-life / ln 2), the short window is unchanged, and a
    detected shift drops the half-life back to the fixed one."""
    tr = _shift_trace()
    grow_cfg = {"half_life_gets": 1000, "half_life_growth": 0.5, "half_life_growth_after": 1, "rate": 0.2}
    fixed = _regime_estimator(tr, shift_threshold=None, half_life_gets=1000, rate=0.2, half_life_growth=None)
    grown = _regime_estimator(tr, shift_threshold=None, **grow_cfg)
    for est in (fixed, grown):
        _feed(est, _cut(tr, 0, 40000), chunk=2000)
    sampled = 0.2 * 40000
    assert fixed.half_life == 1000 and grown.half_life == pytest.approx(0.5 * (sampled - 1000))
    ev_fixed, ev_grown = (e.curves().evidence["allkeys-lru"] for e in (fixed, grown))
    live = np.isfinite(ev_fixed)
    assert np.all(ev_grown[live] > 1.8 * ev_fixed[live]), ev_grown[live] / ev_fixed[live]  # ~2x here
    short = [(a.short.expected, b.short.expected) for a, b in zip(fixed._minis, grown._minis, strict=True) if a.sim is not None]
    assert all(x == pytest.approx(y) for x, y in short)  # the shift test's window is untouched
    tested = _regime_estimator(tr, **grow_cfg)
    _feed(tested, _cut(tr, 0, 40000), chunk=2000)
    assert tested.shifts == 0 and tested.half_life > 1000
    _feed(tested, _cut(tr, 40000, 60000), chunk=2000)
    assert tested.shifts >= 1 and tested.half_life < 0.5 * grown.half_life


def test_readiness_counts_the_gets_a_point_accounts_for() -> None:
    """Under heavy skew the sample can miss the hottest keys: simulated GETs stay low, but SHARDS-adj
    accounts for every GET (rate x GETs), and readiness (the controllers' gate) follows that evidence."""
    from cachetuner.mrc import MissRatioCurves

    sizes = np.array([1 << 20, 4 << 20])
    c = MissRatioCurves(sizes, {"allkeys-lru": np.array([0.3, 0.6])}, weight={"allkeys-lru": np.array([40.0, 40.0])},
                        evidence={"allkeys-lru": np.array([2000.0, 1200.0])})
    assert c.ready(1000) and not c.ready(1500)
    assert c.monotone().ready(1000)  # evidence survives the monotone fit
    assert MissRatioCurves(sizes, dict(c.hit), weight=dict(c.weight)).ready(40) and not \
        MissRatioCurves(sizes, dict(c.hit), weight=dict(c.weight)).ready(41)  # no evidence: falls back to weight
    tr = _shift_trace()
    est = _regime_estimator(tr, shift_threshold=None, half_life_gets=1e12)
    _feed(est, _cut(tr, 40000, 80000), chunk=2000)
    ev = est.curves().evidence["allkeys-lru"]
    rates = np.array([est.rates[int(sz)] for sz in est.sizes])
    live = np.isfinite(ev)
    assert np.allclose(ev[live], rates[live] * 40000, rtol=1e-6)  # independent of which keys were sampled


def test_window_counts_decay_and_shift_rule() -> None:
    from cachetuner.mrc.window import Counts, shifted

    a = Counts()
    a.add(50, 500, 100, 1000, 100, 1000)
    a.decay(0.5)
    assert (a.hits, a.expected, a.weight, a.hit_ratio) == (25, 50, 50, 0.5)
    same = [(Counts(60, 0, 100, 0, 100, 100), Counts(58, 0, 100, 0, 100, 100))] * 6
    moved = [(Counts(60, 0, 400, 0, 400, 400), Counts(20, 0, 400, 0, 400, 400))] * 6
    assert not shifted(same, 50, 0.05) and shifted(moved, 50, 0.05)
    assert not shifted(moved[:3], 50, 0.05)  # too few points
    assert not shifted(moved, 500, 0.05)  # not enough evidence


def test_counts_before_and_moments_give_the_exact_sums_of_squares() -> None:
    from cachetuner.mrc.estimator import _moments
    from cachetuner.mrc.window import counts_before

    keys = np.array([3, 1, 3, 3, 1, 0, 3], dtype=np.int64)
    sizes = np.array([10, 20, 10, 10, 20, 5, 10], dtype=np.int64)
    totals = np.zeros((4, 4))
    totals[:, 3] = (2.0, 2.0, 20.0, 20.0)  # key 3 had 2 earlier GETs in the window
    before = counts_before(keys, sizes, totals)
    assert before[0].tolist() == [2, 0, 3, 4, 1, 0, 5]
    assert totals[0].tolist() == [1, 2, 0, 6] and totals[2].tolist() == [5, 40, 0, 60]
    rec = np.zeros((7, 2))
    rec[[2, 3, 4, 6], 0] = 1  # later requests of keys 3 and 1 hit
    mo = _moments(np.zeros(7, dtype=np.uint8), rec, sizes, before)
    g_new = np.array([1, 2, 0, 4])  # GETs of this batch per key
    g_end = totals[0]
    assert mo[1] == (g_end**2).sum() - 2.0**2  # sum g^2 grew by exactly the batch's share
    assert mo[3] == (totals[2] ** 2).sum() - 20.0**2
    assert mo[0] == 2 * (3 + 4 + 1 + 5) and g_new.sum() == 7


def test_regression_correction_beats_shards_adj_on_warm_keys_and_matches_it_on_one_hot_key() -> None:
    """Bernoulli key samples of two synthetic populations, estimated through ``Counts`` both ways:
    many warm keys whose hit ratio grows with their GETs (the ARC / Corda case, where SHARDS-adj put
    the curve 3-5 pp high) and a population dominated by one always-hit key (AdaptSize)."""
    from cachetuner.mrc.window import Counts

    rng = np.random.default_rng(0)

    def errors(g: np.ndarray, h: np.ndarray, rate: float) -> dict[str, float]:
        truth = h.sum() / g.sum()
        err: dict[str, list[float]] = {"regression": [], "shards": []}
        for _ in range(300):
            s = rng.random(len(g)) < rate
            gs, hs = g[s], h[s]
            # per-key moments as the estimator accumulates them (exact sum g^2; sum g h)
            moments = (float((gs * hs).sum()), float((gs * gs).sum()), 0.0, 0.0)
            for slope, name in ((None, "regression"), (1.0, "shards")):
                c = Counts(slope=slope, rate=rate)
                c.add(hs.sum(), 0.0, rate * g.sum(), 0.0, gs.sum(), 0.0, moments)
                err[name].append(abs(c.hit_ratio - truth))
        return {k: float(np.mean(v)) for k, v in err.items()}

    g = rng.geometric(0.3, 20_000).astype(float)  # warm keys: 1-10 GETs, the first one misses
    h = np.floor((g - 1) * rng.uniform(0.0, 0.6, len(g)))
    warm = errors(g, h, 0.01)
    assert warm["regression"] < 0.5 * warm["shards"]
    g_hot = np.concatenate([g, [2e5]])
    h_hot = np.concatenate([h, [2e5 - 1]])
    hot = errors(g_hot, h_hot, 0.01)
    assert hot["regression"] < 1.2 * hot["shards"]


@pytest.mark.parametrize(("lfu_gain", "switches"), [(0.02, False), (0.06, True)])
def test_mrc_switches_policy_only_for_a_gain_beyond_the_curves_error(lfu_gain: float, switches: bool) -> None:
    from cachetuner.mrc import MissRatioCurves
    from cachetuner.mrc.decide import MRCControlSettings, MRCDecider
    from cachetuner.space import ConfigSpace

    sizes = np.geomspace(1 << 20, 64 << 20, 8).astype(np.int64)
    lru = np.linspace(0.3, 0.5, 8)
    ev = {p: np.full(8, 5000.0) for p in ("allkeys-lru", "allkeys-lfu")}
    curves = MissRatioCurves(sizes, {"allkeys-lru": lru, "allkeys-lfu": lru + lfu_gain}, weight=dict(ev), evidence=ev)
    space = ConfigSpace(min_bytes=1 << 20, max_bytes=64 << 20, policies=("allkeys-lru", "allkeys-lfu"), timeouts=(0,))
    prices = Prices(memory_per_gib_hour=1e-3, miss=1.0, switch=0.0, interval_s=10)
    dec = MRCDecider(MRCControlSettings(confirm=1, shrink_confirm=1, min_weight=0, shrink_min_weight=0))
    cur = RedisConfig(maxmemory=int(sizes[-1]), maxmemory_policy="allkeys-lru")
    for _ in range(3):
        cur = dec.decide(curves, prices, 1000.0, cur, space)
    assert (cur.maxmemory_policy == "allkeys-lfu") is switches


@pytest.mark.parametrize(("lfu_gain", "budget", "switch_at"), [(0.015, 64 << 20, 24), (0.005, 64 << 20, None),
                                                             (0.015, None, None)])
def test_under_a_budget_a_smaller_policy_gain_switches_once_it_has_lasted(
    lfu_gain: float, budget: int | None, switch_at: int | None
) -> None:
    """``policy_sustained_gain``: under a memory budget 1.5 pp, below the 3 pp gate, switches after
    ``policy_patience`` intervals in a row; 0.5 pp never does; an interval without the gain starts the count
    again; with priced memory (no budget) the rule does not apply."""
    from cachetuner.mrc import MissRatioCurves
    from cachetuner.mrc.decide import MRCControlSettings, MRCDecider
    from cachetuner.space import ConfigSpace

    sizes = np.geomspace(1 << 20, 64 << 20, 8).astype(np.int64)
    lru = np.linspace(0.3, 0.5, 8)
    ev = {p: np.full(8, 5000.0) for p in ("allkeys-lru", "allkeys-lfu")}

    def curves(gain: float) -> MissRatioCurves:
        return MissRatioCurves(sizes, {"allkeys-lru": lru, "allkeys-lfu": lru + gain}, weight=dict(ev), evidence=ev)

    space = ConfigSpace(min_bytes=1 << 20, max_bytes=64 << 20, policies=("allkeys-lru", "allkeys-lfu"), timeouts=(0,))
    prices = Prices(memory_per_gib_hour=0.0 if budget else 1e-3, miss=1.0, switch=0.0, interval_s=10, budget_bytes=budget)
    # the quicker switch of a young cache (budget_policy_gain, the first budget_quick_intervals) is off: this is the
    # rule that holds after it
    dec = MRCDecider(MRCControlSettings(confirm=1, shrink_confirm=1, min_weight=0, shrink_min_weight=0, hysteresis=0.0,
                                        budget_policy_gain=None))
    cur = RedisConfig(maxmemory=int(sizes[-1]), maxmemory_policy="allkeys-lru")
    for _ in range(10):
        cur = dec.decide(curves(lfu_gain), prices, 1000.0, cur, space)
    cur = dec.decide(curves(0.0), prices, 1000.0, cur, space)  # the gap closes for one interval: count again
    switched = None
    for i in range(1, 40):
        cur = dec.decide(curves(lfu_gain), prices, 1000.0, cur, space)
        if cur.maxmemory_policy == "allkeys-lfu":
            switched = i
            break
    assert switched == switch_at


@pytest.mark.parametrize(("memory_per_gib_hour", "grows"), [(0.016, True), (100.0, False)])
def test_mrc_grows_straight_to_the_largest_size_only_when_that_cannot_cost_more_than_a_sliver(
    memory_per_gib_hour: float, grows: bool
) -> None:
    """``free_growth``: misses do not rise with size, so a move whose extra memory costs at most 1 % of the
    misses' cost is taken at once, before any curve is ready (list prices); with dear memory the rule
    waits for the curves as before."""
    from cachetuner.mrc.decide import MRCDecider
    from cachetuner.space import ConfigSpace

    space = ConfigSpace(min_bytes=1 << 20, max_bytes=1 << 30, policies=("allkeys-lru",), timeouts=(0,))
    prices = Prices(memory_per_gib_hour=memory_per_gib_hour, miss=0.002, switch=0.002, interval_s=10)
    cur = RedisConfig(maxmemory=64 << 20, maxmemory_policy="allkeys-lru")
    dec = MRCDecider()
    out = dec.decide(None, prices, gets=1000, cur=cur, space=space, misses=400)
    assert out.maxmemory == ((1 << 30) if grows else cur.maxmemory)
    assert out.maxmemory_policy == cur.maxmemory_policy
    assert dec.decide(None, prices, gets=1000, cur=cur, space=space).maxmemory == out.maxmemory  # EWMA kept
    assert MRCDecider().decide(None, prices, gets=1000, cur=cur, space=space) == cur  # no misses: no bound


@pytest.mark.parametrize(("amortized", "grows"), [(True, True), (False, False)])
def test_free_growth_at_a_low_request_rate_spreads_the_switch_price(amortized: bool, grows: bool) -> None:
    """At 10 req/s (50 misses an interval) 1 % of the misses is half a miss, less than the one-miss switch
    price; the price is paid once, so spread over ``payback_intervals`` it no longer blocks a move whose
    memory costs ~1e-5 of the misses (list prices)."""
    from cachetuner.mrc.decide import MRCControlSettings, MRCDecider
    from cachetuner.space import ConfigSpace

    space = ConfigSpace(min_bytes=1 << 20, max_bytes=16 << 20, policies=("allkeys-lru",), timeouts=(0,))
    prices = Prices(memory_per_gib_hour=0.016, miss=0.002, switch=0.002, interval_s=10)
    cur = RedisConfig(maxmemory=2 << 20, maxmemory_policy="allkeys-lru")
    # free growth's own 1 % (cold free growth's 25 % before the curves are ready would grow either way)
    dec = MRCDecider(MRCControlSettings(free_growth_amortized=amortized, cold_free_growth=None))
    out = dec.decide(None, prices, gets=100, cur=cur, space=space, misses=50)
    assert out.maxmemory == ((16 << 20) if grows else cur.maxmemory)


@pytest.mark.parametrize(
    ("miss_price", "full", "slo_penalty", "shrinks"),
    [(0.0002, True, 0.0, True), (0.002, True, 0.0, False), (0.0002, False, 0.0, False), (0.0002, True, 1.0, False)],
)
def test_mrc_shrinks_past_the_young_curve_gates_only_when_all_its_hits_are_worth_less_than_the_memory(
    miss_price: float, full: bool, slo_penalty: float, shrinks: bool
) -> None:
    """``free_shrink``: a curve with too little evidence for an ordinary shrink (``shrink_min_weight``) may
    still shrink a full cache whose every hit is worth less than the memory given back (the move cannot
    lose even if the smaller cache hit nothing). Valuable hits, a cache still filling from cold, or an SLO
    penalty the worst case would pay, wait."""
    from cachetuner.mrc import MissRatioCurves
    from cachetuner.mrc.decide import MRCDecider
    from cachetuner.space import ConfigSpace

    sizes = np.geomspace(1 << 20, 64 << 20, 8).astype(np.int64)
    ev = {"allkeys-lru": np.full(8, 600.0)}  # past min_weight (500), short of shrink_min_weight (1,500)
    curves = MissRatioCurves(sizes, {"allkeys-lru": np.full(8, 0.3)}, weight=dict(ev), evidence=ev)
    space = ConfigSpace(min_bytes=1 << 20, max_bytes=64 << 20, policies=("allkeys-lru",), timeouts=(0,))
    prices = Prices(memory_per_gib_hour=1000.0, miss=miss_price, switch=0.0, interval_s=10, slo_penalty=slo_penalty,
                    slo_p95_ms=1500.0)
    cur = start = RedisConfig(maxmemory=64 << 20, maxmemory_policy="allkeys-lru")
    dec = MRCDecider()
    moved_at = None
    for i in range(6):
        cur = dec.decide(curves, prices, 1000.0, cur, space, misses=700.0, full=full)
        if cur != start and moved_at is None:
            moved_at = i
    assert (cur.maxmemory < start.maxmemory) is shrinks
    if shrinks:
        assert moved_at == dec.settings.confirm - 1  # the ordinary confirmation, not shrink_confirm (8)
    off = MRCDecider(dec.settings.model_copy(update={"free_shrink": None}))
    cur = start
    for _ in range(6):
        cur = off.decide(curves, prices, 1000.0, cur, space, misses=700.0, full=full)
    assert cur == start  # without the rule the young curve's shrink waits for its evidence


@pytest.mark.parametrize(("miss_price", "full", "blind", "steps"),
                         [(1e-4, True, True, 2), (1e-2, True, True, 0), (1e-4, False, True, 0), (1e-4, True, False, 0)])
def test_before_the_curves_are_ready_a_cache_whose_hits_are_worth_little_steps_down(
    miss_price: float, full: bool, blind: bool, steps: int
) -> None:
    """``free_shrink_blind``: free shrink's bound needs no curve. With no curve ready, a full cache whose hits
    (300 a interval) are worth less than the memory a shrink gives back moves to the largest size that meets
    the bound and is a 1.25x step, every ``confirm`` full intervals; valuable hits, a filling cache or the
    setting off keep it."""
    from cachetuner.mrc.decide import MRCControlSettings, MRCDecider
    from cachetuner.space import ConfigSpace

    space = ConfigSpace(min_bytes=1 << 20, max_bytes=64 << 20, policies=("allkeys-lru",), timeouts=(0,))
    prices = Prices(memory_per_gib_hour=1000.0, miss=miss_price, switch=0.0, interval_s=10)
    dec = MRCDecider(MRCControlSettings(free_shrink_blind=blind))
    cur = RedisConfig(maxmemory=64 << 20, maxmemory_policy="allkeys-lru")
    sizes = [cur.maxmemory]
    for _ in range(6):
        cur = dec.decide(None, prices, 1000.0, cur, space, misses=700.0, full=full)
        if cur.maxmemory != sizes[-1]:
            sizes.append(cur.maxmemory)
    assert len(sizes) - 1 == steps
    for big, small in itertools.pairwise(sizes):
        given_back = float(prices.memory_cost(big) - prices.memory_cost(small))
        assert small * 1.25 <= big + 1 and given_back >= 1.25 * 300 * miss_price  # a step, and it cannot lose


@pytest.mark.parametrize(("gets", "min_gets", "shrinks"),
                         [(0.0, 500.0, False), (100.0, 500.0, False), (200.0, 500.0, True), (0.0, None, True)])
def test_free_shrink_needs_gets_served_before_it_judges_a_cache_by_its_hits(
    gets: float, min_gets: float | None, shrinks: bool
) -> None:
    """``free_shrink_min_gets``: a full cache that has served no GETs has made no hits, which passes free
    shrink's bound trivially but says nothing about what its data is worth (CloudPhysics: intervals of writes
    only, the data read back later). The bound is applied only once the cache in force has served
    ``free_shrink_min_gets`` GETs at its size (here 3 full intervals: 0 or 300 GETs wait, 600 do not)."""
    from cachetuner.mrc.decide import MRCControlSettings, MRCDecider
    from cachetuner.space import ConfigSpace

    space = ConfigSpace(min_bytes=1 << 20, max_bytes=64 << 20, policies=("allkeys-lru",), timeouts=(0,))
    prices = Prices(memory_per_gib_hour=1000.0, miss=1e-4, switch=0.0, interval_s=10)
    dec = MRCDecider(MRCControlSettings(free_shrink_min_gets=min_gets))
    start = cur = RedisConfig(maxmemory=64 << 20, maxmemory_policy="allkeys-lru")
    for _ in range(dec.settings.confirm):  # the bound's own wait: confirm full intervals at the size
        cur = dec.decide(None, prices, gets, cur, space, misses=gets, full=True)
    assert (cur.maxmemory < start.maxmemory) is shrinks


@pytest.mark.parametrize(("min_intervals", "full_intervals", "shrinks"),
                         [(None, 3, True), (15, 3, False), (15, 14, False), (15, 15, True)])
def test_free_shrink_min_intervals_counts_full_intervals_whatever_the_rate(
    min_intervals: int | None, full_intervals: int, shrinks: bool
) -> None:
    """``free_shrink_min_intervals``: at 1,000 req/s ``free_shrink_min_gets``' 1,500 GETs pass within one interval,
    so the bound would judge a cache by its first ``confirm`` full intervals; with the setting it also waits until
    the cache has been full at its size for that many intervals, however many GETs they held (10,000 here)."""
    from cachetuner.mrc.decide import MRCControlSettings, MRCDecider
    from cachetuner.space import ConfigSpace

    space = ConfigSpace(min_bytes=1 << 20, max_bytes=64 << 20, policies=("allkeys-lru",), timeouts=(0,))
    prices = Prices(memory_per_gib_hour=1000.0, miss=1e-5, switch=0.0, interval_s=10)
    dec = MRCDecider(MRCControlSettings(free_shrink_min_intervals=min_intervals))
    start = cur = RedisConfig(maxmemory=64 << 20, maxmemory_policy="allkeys-lru")
    for _ in range(full_intervals):
        cur = dec.decide(None, prices, 10_000.0, cur, space, misses=9_990.0, full=True)
    assert (cur.maxmemory < start.maxmemory) is shrinks


def test_policy_gap_summary_counts_the_switches_that_would_lose() -> None:
    """bench mrc's evidence for ``policy_min_gain``: how often a predicted gap points the wrong way."""
    from cachetuner.mrc.bench import policy_gap_summary

    predicted = np.array([0.02, -0.015, 0.004, 0.03])
    true = np.array([0.01, 0.005, 0.0, 0.03])
    s = policy_gap_summary(predicted, true)
    assert s["points"] == 4 and s["max_error_pp"] == pytest.approx(2.0)
    at1 = s["by_predicted_gap"][">=1.0pp"]
    assert at1["points"] == 3  # 2, -1.5 and 3 pp
    assert at1["wrong_direction_share"] == pytest.approx(0.333)  # -1.5 pp predicted, +0.5 pp true
    assert at1["realised_over_predicted"] == pytest.approx(round((0.01 - 0.005 + 0.03) / 0.065, 3))
    assert s["by_predicted_gap"][">=3.0pp"]["wrong_direction_share"] == 0.0


def test_bench_reports_the_error_of_the_policy_difference(web07) -> None:
    from cachetuner.mrc.bench import bench_trace

    tr = read_trace("bundled:web07", size_model="fixed:4096", limit=40_000)
    res = bench_trace(tr, MRCConfig(n_sizes=6), SimParams()).to_json()
    gap = res["policy_gap_error_pp"]["allkeys-lfu - allkeys-lru"]
    per = res["error_pp"]
    # a difference of two estimates errs by at most the sum of their errors, point by point
    assert 0 <= gap["max"] <= per["allkeys-lru"]["max"] + per["allkeys-lfu"]["max"] + 1e-6


def test_bench_mrc_measures_the_curves_with_the_value_sizes_asked_for(web07) -> None:
    """``bench mrc --size-model``: the same key stream with AI-inference value sizes (embeddings and generated
    answers, variable) gives other curves and other truths than with 4096-byte values, and the output says
    which sizes were used; the error stays within a few pp on this 30k-request excerpt."""
    from cachetuner.mrc.bench import bench_mrc

    cfg = MRCConfig(n_sizes=6)
    fixed = bench_mrc([("bundled:web07", "auto")], cfg=cfg, limit=30_000)
    llm = bench_mrc([("bundled:web07", "auto")], cfg=cfg, limit=30_000, size_model="llm")
    assert fixed["size_model"] == "fixed:4096" and llm["size_model"] == "llm"
    assert fixed["traces"][0]["error_pp"] != llm["traces"][0]["error_pp"]
    for pol, s in llm["summary"].items():
        assert 0.0 <= s["mean_error_pp"] <= 5.0, pol


def test_bench_mrc_reports_the_signed_error_by_size_and_takes_min_objects(web07) -> None:
    """The signed error per size (predicted - true) is what showed the curves' bias at small miniature caches, so
    the bench reports it per trace and averaged over traces (noise averages out, a bias stays); ``--min-objects``
    changes the miniature caches' floor and with it the curves."""
    import json

    from typer.testing import CliRunner

    import cachetuner.cli.mrc_cmds  # noqa: F401  (registers the command)
    from cachetuner.cli.app import app

    def run(*extra: str) -> dict:
        res = CliRunner().invoke(app, ["bench", "mrc", "--traces", "bundled:web07", "--limit", "20000", "--draws", "1",
                                       "--json", *extra])
        assert res.exit_code == 0, res.output[-2000:]
        return json.loads(res.stdout)

    base, more = run(), run("--min-objects", "400")
    assert (base["min_objects"], more["min_objects"]) == (MRCConfig().min_objects, 400)
    (t,) = base["traces"]
    for pol, s in base["summary"].items():
        signed = t["signed_error_pp_by_size"][pol]
        assert len(signed) == base["n_sizes"] == len(s["mean_signed_error_pp_by_size"])
        assert max(abs(x) for x in signed) == pytest.approx(t["error_pp"][pol]["max"], abs=2e-3)
        assert np.mean(np.abs(signed)) == pytest.approx(t["error_pp"][pol]["mean"], abs=2e-3)
        assert s["mean_signed_error_pp_by_size"] == pytest.approx(signed, abs=1e-3)  # one trace: its own
    assert more["traces"][0]["signed_error_pp_by_size"] != t["signed_error_pp_by_size"]


def test_a_relabelled_trace_is_the_same_traffic_under_another_key_sample(web07) -> None:
    """``Trace.relabelled``: a seeded permutation of the key ids keeps every request, its order, size and key-name
    length, so a full simulation of exact LRU measures the same hit ratio; only which keys the fixed hash
    samples changes. Draw 0 is the trace itself."""
    tr = web07
    assert tr.relabelled(0) is tr
    other = tr.relabelled(1)
    assert other.meta["key_draw"] == 1
    assert len(other) == len(tr) and other.n_keys == tr.n_keys
    np.testing.assert_array_equal(other.sizes, tr.sizes)
    np.testing.assert_array_equal(np.sort(np.bincount(other.keys)), np.sort(np.bincount(tr.keys)))
    np.testing.assert_array_equal(other.key_bytes[other.keys], tr.key_bytes[tr.keys])
    cfg = RedisConfig(maxmemory=8 << 20, maxmemory_policy="exact-lru")
    p = SimParams()
    hr = [TieredCacheSim.for_trace(t, cfg, p).run_counts(t, 0, len(t)).hit_ratio for t in (tr, other)]
    assert hr[0] == pytest.approx(hr[1], abs=1e-12)
    kept = [set(np.unique(t.keys[hash_sample_mask(t.keys, 0.05)]).tolist()) for t in (tr, other)]
    perm_back = {int(n): int(o) for o, n in zip(tr.keys, other.keys, strict=True)}
    assert {perm_back[k] for k in kept[1]} != kept[0]  # another sample of the same keys


def test_bench_mrc_averages_its_error_over_draws_of_the_key_sample(web07) -> None:
    """``bench mrc --draws``: one run measures one key sample, whose luck every size shares; with several draws
    the error is the mean over them, the first draw is the single run's, and each draw's mean is reported."""
    from cachetuner.mrc.bench import bench_mrc

    cfg = MRCConfig(n_sizes=6)
    one = bench_mrc([("bundled:web07", "auto")], cfg=cfg, limit=20_000)
    three = bench_mrc([("bundled:web07", "auto")], cfg=cfg, limit=20_000, draws=3)
    assert (one["draws"], three["draws"]) == (1, 3)
    (t1,), (t3,) = one["traces"], three["traces"]
    for pol, s in three["summary"].items():
        per = t3["error_pp_by_draw"][pol]
        assert len(per) == 3 == len(s["mean_error_pp_by_draw"])
        assert per[0] == pytest.approx(t1["error_pp"][pol]["mean"], abs=2e-3)  # draw 0 = the shipped hash
        assert t3["error_pp"][pol]["mean"] == pytest.approx(np.mean(per), abs=2e-3)
        assert t3["error_pp"][pol]["max"] >= t1["error_pp"][pol]["max"] - 1e-9
        assert len(set(per)) > 1 and s["draw_sd_pp"] > 0  # the draws sample other keys
    gap = next(iter(three["policy_gap"].values()))
    assert gap["points"] == 3 * next(iter(one["policy_gap"].values()))["points"]


def test_a_sample_short_of_bytes_stands_for_a_larger_cache_unless_a_hot_key_explains_it() -> None:
    """``size_correction``: a miniature cache whose key sample carried half the bytes ``rate`` promised
    behaves like a full cache of twice the data, so its point moves there; when the byte regression's slope
    says the heaviest keys explain the shortfall (b = 1: a hot key, resident at any size), it stays put."""
    p = SimParams()
    cfg = MRCConfig(n_sizes=4, policies=["allkeys-lru"], min_keys=0, min_objects=0)
    lo, hi = p.fixed_bytes + (1 << 20), p.fixed_bytes + (8 << 20)
    est = MRCEstimator(cfg, (lo, hi), n_keys_hint=1000, sim_params=p)
    ms = [m for m in est._minis if m.policy == "allkeys-lru"]
    for m in ms:
        m.long.add(10.0, 10.0 * 4096, 100.0, 100.0 * 4096 * 2, 100.0, 100.0 * 4096, (0.0, 1.0, 0.0, 1.0))
    x = est._represented_sizes(ms)
    np.testing.assert_allclose(x, p.fixed_bytes + 2.0 * (est.sizes - p.fixed_bytes))
    for m in ms:
        m.long.pb = m.long.qb  # the heaviest keys explain the whole discrepancy
    np.testing.assert_allclose(est._represented_sizes(ms), est.sizes)


def test_size_correction_brings_curves_with_ai_value_sizes_closer_to_full_simulation(web07) -> None:
    """Side by side on the bundled excerpt with AI-inference value sizes (embeddings and generated answers):
    the corrected curves are closer to full simulation for both policies (bench mrc measures every shared
    trace)."""
    from cachetuner.mrc.bench import bench_mrc

    err = {}
    for corr in (False, True):
        cfg = MRCConfig(n_sizes=8, size_correction=corr)
        err[corr] = bench_mrc([("bundled:web07", "auto")], cfg=cfg, limit=30_000, size_model="llm")["summary"]
    for pol in err[True]:
        assert err[True][pol]["mean_error_pp"] < err[False][pol]["mean_error_pp"], (pol, err)


@pytest.mark.parametrize("guard", [False, True])
def test_regrow_guard_refuses_a_shrink_that_free_growth_would_undo(guard: bool) -> None:
    """``regrow_guard``: a curve that predicts (almost) all hits at every size puts the optimum at the smallest
    one; at these prices the memory between it and the largest size is worth less than 1 % of the usual misses,
    so free growth grows such a cache straight back. Without the guard the rule shrinks and regrows (dropping
    the cache's data twice over); with it the size holds."""
    from cachetuner.mrc.curves import MissRatioCurves
    from cachetuner.mrc.decide import MRCControlSettings, MRCDecider
    from cachetuner.space import ConfigSpace

    sizes = np.geomspace(1 << 20, 1 << 30, 8).astype(np.int64)
    ev = {"allkeys-lru": np.full(8, 5000.0)}
    curves = MissRatioCurves(sizes, {"allkeys-lru": np.full(8, 0.999)}, weight=dict(ev), evidence=ev)
    space = ConfigSpace(min_bytes=1 << 20, max_bytes=1 << 30, policies=("allkeys-lru",), timeouts=(0,))
    # the largest size costs 1.0 an interval, a miss 1.0: 1 % of 500 misses is worth 5x that memory
    prices = Prices(memory_per_gib_hour=1.0, miss=1.0, switch=0.0, interval_s=3600)
    dec = MRCDecider(MRCControlSettings(confirm=1, shrink_confirm=1, min_weight=0, shrink_min_weight=0,
                                        cold_free_growth=None, free_shrink=None, regrow_guard=guard))
    cur = RedisConfig(maxmemory=1 << 30, maxmemory_policy="allkeys-lru")
    seen = []
    for _ in range(6):
        cur = dec.decide(curves, prices, 1000.0, cur, space, misses=500.0)
        seen.append(cur.maxmemory)
    if guard:
        assert seen == [1 << 30] * 6
    else:
        assert min(seen) < (1 << 30) / 2  # shrank ...
        assert seen.count(1 << 30) >= 2  # ... and free growth grew it straight back, over and over


def test_free_shrink_waits_for_as_many_gets_as_a_shrinks_curve_needs() -> None:
    """The default ``free_shrink_min_gets`` is ``shrink_min_weight``'s 1,500 GETs: a cache that hits nothing on the
    first pass of a loop longer than itself looks exactly like one that holds a scan, and at 100 GETs an interval
    500 GETs is five intervals (LIRS gli at 10 req/s: the shrink dropped data the second pass read, +16 to +20 %
    over hindsight on four audits). Here it holds for 15 full intervals at its size and shrinks once they are
    served."""
    from cachetuner.mrc.decide import MRCControlSettings, MRCDecider
    from cachetuner.space import ConfigSpace

    settings = MRCControlSettings()
    assert settings.free_shrink_min_gets == settings.shrink_min_weight
    space = ConfigSpace(min_bytes=1 << 20, max_bytes=64 << 20, policies=("allkeys-lru",), timeouts=(0,))
    prices = Prices(memory_per_gib_hour=1000.0, miss=1e-4, switch=0.0, interval_s=10)
    dec = MRCDecider(settings)
    start = cur = RedisConfig(maxmemory=64 << 20, maxmemory_policy="allkeys-lru")
    held = 0
    while cur.maxmemory == start.maxmemory and held < 40:
        cur = dec.decide(None, prices, 100.0, cur, space, misses=100.0, full=True)
        held += 1
    assert held == 15  # the 15th interval brings the GETs served to 1,500: that decision shrinks
    assert cur.maxmemory < start.maxmemory


def test_a_slow_load_floor_keeps_data_through_a_lull_and_follows_a_rise_as_fast() -> None:
    """``gets_floor_smoothing``: after a long busy stretch the GETs stop (the reads pause while the data waits for
    them). The 0.05 EWMA alone prices the misses at a load that has dropped, and the cost curve's optimum falls to
    the smallest size within tens of intervals; with the slow floor the load the data will meet when the reads
    return keeps it several times longer. A rise is followed as fast either way (the larger estimate counts)."""
    from cachetuner.mrc.curves import MissRatioCurves
    from cachetuner.mrc.decide import MRCControlSettings, MRCDecider
    from cachetuner.space import ConfigSpace

    sizes = np.geomspace(1 << 20, 1 << 30, 8).astype(np.int64)
    ev = {"allkeys-lru": np.full(8, 5000.0)}
    curves = MissRatioCurves(sizes, {"allkeys-lru": np.linspace(0.1, 0.9, 8)}, weight=dict(ev), evidence=ev)
    space = ConfigSpace(min_bytes=1 << 20, max_bytes=1 << 30, policies=("allkeys-lru",), timeouts=(0,))
    # at 1,000 GETs an interval the largest size is the cheapest; at a few GETs the smallest
    prices = Prices(memory_per_gib_hour=360.0, miss=0.01, switch=0.0, interval_s=10)
    base = dict(confirm=1, shrink_confirm=1, min_weight=0, shrink_min_weight=0, cold_free_growth=None, free_shrink=None)

    def first_move(floor: float | None, size: int, before: float, after: float) -> int | None:
        """Intervals at ``after`` GETs until the size held through 150 intervals at ``before`` first changes."""
        dec = MRCDecider(MRCControlSettings(**base, gets_floor_smoothing=floor))
        cur = RedisConfig(maxmemory=size, maxmemory_policy="allkeys-lru")
        for _ in range(150):
            cur = dec.decide(curves, prices, before, cur, space)
        assert cur.maxmemory == size  # busy: the largest size holds; idle: the smallest
        for i in range(400):
            cur = dec.decide(curves, prices, after, cur, space)
            if cur.maxmemory != size:
                return i
        return None

    fast, slow = first_move(None, 1 << 30, 1000.0, 0.0), first_move(0.01, 1 << 30, 1000.0, 0.0)
    assert fast is not None and fast < 60
    assert slow is None or slow >= 3 * fast
    rise = first_move(None, 1 << 20, 1.0, 1000.0)
    assert rise is not None and first_move(0.01, 1 << 20, 1.0, 1000.0) == rise


@pytest.mark.parametrize(("growth_band", "shrink_band", "grows", "shrinks"),
                         [(None, 0.03, False, False), (0.01, 0.03, True, False), (None, 0.01, True, True)])
def test_a_growth_band_narrows_the_hysteresis_for_growths_alone(
    growth_band: float | None, shrink_band: float, grows: bool, shrinks: bool
) -> None:
    """``hysteresis_growth``: a growth whose predicted saving is 2 % of the interval's cost waits under the 3 % band and
    is taken under a 1 % growth band, while a shrink saving 2 % still needs the 3 % band (a shrink drops warm data)."""
    from cachetuner.mrc import MissRatioCurves
    from cachetuner.mrc.decide import MRCControlSettings, MRCDecider
    from cachetuner.space import ConfigSpace

    sizes = np.geomspace(1 << 20, 64 << 20, 8).astype(np.int64)
    ev = {"allkeys-lru": np.full(8, 5000.0)}
    space = ConfigSpace(min_bytes=1 << 20, max_bytes=64 << 20, policies=("allkeys-lru",), timeouts=(0,))

    def rule() -> MRCDecider:
        return MRCDecider(MRCControlSettings(confirm=1, shrink_confirm=1, min_weight=0, shrink_min_weight=0,
                                             hysteresis=shrink_band, hysteresis_growth=growth_band, fill_headroom=None))

    # growth: 1,000 GETs at one unit a miss, the hit ratio 0.50 -> 0.51 over the range, memory almost free
    rising = MissRatioCurves(sizes, {"allkeys-lru": np.linspace(0.50, 0.51, 8)}, weight=dict(ev), evidence=ev)
    cheap = Prices(memory_per_gib_hour=1e-6, miss=1.0, switch=0.0, interval_s=10)
    small = RedisConfig(maxmemory=int(sizes[0]), maxmemory_policy="allkeys-lru")
    dec = rule()
    out = [small := dec.decide(rising, cheap, 1000.0, small, space) for _ in range(3)][-1]
    assert (out.maxmemory > sizes[0]) == grows
    # shrink: a flat curve, and 64 MiB of memory worth 2 % of the interval's cost
    flat = MissRatioCurves(sizes, {"allkeys-lru": np.full(8, 0.5)}, weight=dict(ev), evidence=ev)
    dear = Prices(memory_per_gib_hour=58_752.0, miss=1.0, switch=0.0, interval_s=10)
    large = RedisConfig(maxmemory=int(sizes[-1]), maxmemory_policy="allkeys-lru")
    dec = rule()
    out = [large := dec.decide(flat, dear, 1000.0, large, space) for _ in range(3)][-1]
    assert (out.maxmemory < sizes[-1]) == shrinks


def _shrunk_to(hit: list[float] | np.ndarray, memory_per_gib_hour: float, **settings: object) -> int:
    """``maxmemory`` after three decisions from 64 MiB, 1,000 GETs an interval at one unit a miss, on an LRU curve of
    ``hit`` at 8 log-spaced sizes (1-64 MiB) with ample evidence, every gate but the bands at its quickest."""
    from cachetuner.mrc import MissRatioCurves
    from cachetuner.mrc.decide import MRCControlSettings, MRCDecider
    from cachetuner.space import ConfigSpace

    sizes = np.geomspace(1 << 20, 64 << 20, 8).astype(np.int64)
    ev = {"allkeys-lru": np.full(8, 5000.0)}
    curves = MissRatioCurves(sizes, {"allkeys-lru": np.asarray(hit, float)}, weight=dict(ev), evidence=ev)
    space = ConfigSpace(min_bytes=1 << 20, max_bytes=64 << 20, policies=("allkeys-lru",), timeouts=(0,))
    prices = Prices(memory_per_gib_hour=memory_per_gib_hour, miss=1.0, switch=0.0, interval_s=10)
    dec = MRCDecider(MRCControlSettings(confirm=1, shrink_confirm=1, min_weight=0, shrink_min_weight=0,
                                        fill_headroom=None, **settings))  # type: ignore[arg-type]
    cur = RedisConfig(maxmemory=64 << 20, maxmemory_policy="allkeys-lru")
    for _ in range(3):
        cur = dec.decide(curves, prices, 1000.0, cur, space)
    return cur.maxmemory


def test_shrink_band_misses_lets_a_scan_give_back_memory_the_total_cost_band_holds() -> None:
    """``shrink_band_misses``: in a scan (hit ratio 0 at every size) memory worth 2 % of the interval's cost cannot
    clear the 3 % band on the total cost, but clears a band of 1 % of the GETs missing; a warm cache whose shrink
    would cost 14 more misses an interval stays with either band."""
    # 64 MiB of memory is worth 20 units an interval (2 % of the scan's 1,020)
    assert float(Prices(memory_per_gib_hour=115_200.0, miss=1.0, interval_s=10).memory_cost(64 << 20)) == pytest.approx(20.0)
    scan, warm = np.zeros(8), [0.936] * 7 + [0.95]
    assert _shrunk_to(scan, 115_200.0) == 64 << 20  # 20 units saved < 3 % of 1,020
    assert _shrunk_to(scan, 115_200.0, shrink_band_misses=0.01) < 64 << 20  # 20 > 1 % of 1,000 GETs missing (10)
    # the refill of 14 more misses an interval outweighs it
    assert _shrunk_to(warm, 115_200.0) == _shrunk_to(warm, 115_200.0, shrink_band_misses=0.01) == 64 << 20


def test_shrink_band_cap_narrows_the_band_of_a_scan_only() -> None:
    """``shrink_band_cap_misses``: a scan (no hits at any size) with 64 MiB worth 25 units an interval gives its memory
    back: the rule shrinks when the saving clears the band twice (the target is the band's edge, the saving must
    exceed the band), and 24.6 units clear twice the cap (3 % of the memory, 0.75, plus 1 % of 1,000 GETs missing,
    10) but not twice 3 % of the cost (1,025). Warm caches (misses 5-10 % of the GETs) keep today's band, which is
    under the cap, so the cap changes nothing there; a flat curve at 30 % hits is past ``shrink_band_cap_hit_ratio``
    (0.2), so the cap is off there unless that condition is."""
    assert float(Prices(memory_per_gib_hour=144_000.0, miss=1.0, interval_s=10).memory_cost(64 << 20)) == pytest.approx(25.0)
    scan = np.zeros(8)
    assert _shrunk_to(scan, 144_000.0, shrink_band_cap_misses=None) == 64 << 20  # off (the default before 2026-12-06)
    assert _shrunk_to(scan, 144_000.0, shrink_band_cap_misses=0.01) < 64 << 20
    assert _shrunk_to(scan, 144_000.0) == _shrunk_to(scan, 144_000.0, shrink_band_cap_misses=0.01)  # the default now
    for warm in ([0.5, 0.6, 0.7, 0.8, 0.9, 0.93, 0.949, 0.95], [0.5, 0.6, 0.7, 0.8, 0.9, 0.93, 0.94, 0.95]):
        assert _shrunk_to(warm, 144_000.0, shrink_band_cap_misses=None) == _shrunk_to(warm, 144_000.0,
                                                                                     shrink_band_cap_misses=0.01)
    assert _shrunk_to([0.5, 0.6, 0.7, 0.8, 0.9, 0.93, 0.94, 0.95], 144_000.0, shrink_band_cap_misses=0.01) == 64 << 20
    # 30 % hits everywhere: 3 % of 725 is 21.75, twice that is over the 24.6 saved; the cap (10.75) is not
    flat = np.full(8, 0.3)
    assert _shrunk_to(flat, 144_000.0, shrink_band_cap_misses=0.01) == 64 << 20
    assert _shrunk_to(flat, 144_000.0, shrink_band_cap_misses=0.01, shrink_band_cap_hit_ratio=None) < 64 << 20


def _phases_trace(n_phases: int = 40, phase: int = 600, tail: int = 30000):
    """Short phases alternating between a uniform spread over 20,000 keys and a Zipf hot set (a slow stream's
    few minutes each), then one long Zipf regime."""
    from cachetuner.traces.trace import Trace

    rng = np.random.default_rng(2)
    parts = [rng.integers(0, 20000, phase) if i % 2 == 0 else rng.zipf(1.3, phase) % 20000 for i in range(n_phases)]
    keys = np.concatenate([*parts, rng.zipf(1.3, tail) % 20000]).astype(np.int64)
    n = len(keys)
    return Trace(name="phases", timestamps=np.arange(n, dtype=float), keys=keys, sizes=np.full(n, 1000, np.int64),
                 ops=np.zeros(n, np.uint8), ttls=np.zeros(n), n_keys=20000, key_bytes=np.full(20000, 16, np.int64),
                 read_only=True)


def test_a_floor_in_requests_keeps_short_phases_of_a_slow_stream_from_restarting_the_window() -> None:
    """``short_window_min_requests`` (3,750 by default): a slow stream sampled in full counts every request as a sampled GET, so the
    shift test's short window spans few requests, each short phase reads as a shift, and every restart cuts the long
    window back to its shortest. The floor lengthens the short window to that many requests (never past the long
    one): the long window grows with its regime, and a lasting regime change is still detected. A fast stream's
    sample is left alone."""
    tr = _phases_trace()
    base = {"half_life_gets": 400, "rate": 1.0, "half_life_growth": 0.5, "half_life_growth_after": 1}
    plain = _regime_estimator(tr, **base, short_window_min_requests=None)
    floored = _regime_estimator(tr, **base, short_window_min_requests=1000)
    assert plain.short_half_life == 100 and floored.short_half_life == 400  # capped by the long window at first
    assert _regime_estimator(tr, **base).short_half_life == 400  # the default floors it too (3,750, since 2026-12-07)
    for est in (plain, floored):
        _feed(est, _cut(tr, 0, 40 * 600), chunk=300)
    assert plain.shifts >= 10 and floored.shifts == 0, (plain.shifts, floored.shifts)
    assert floored.short_half_life == 1000 and floored.half_life > 20 * plain.half_life
    _feed(floored, _cut(tr, 40 * 600, len(tr)), chunk=300)
    assert floored.shifts >= 1  # the lasting regime is a shift all the same
    fast = _regime_estimator(tr, **base, short_window_min_requests=1000)
    fast_cfg = fast.cfg.model_copy(update={"rate": 0.05})
    assert MRCEstimator(fast_cfg, (2 << 20, 24 << 20), n_keys_hint=tr.n_keys).short_half_life == 100  # 50 < 100


def test_shrink_patience_walks_from_the_bands_edge_to_a_lasting_optimum() -> None:
    """``shrink_patience``: on a flat LRU curve (30 % hits at every size) the optimum is the smallest size, but a
    shrink goes only to the edge of the 3 % band, and from there the saving left is within the band by construction:
    without patience the cache holds that edge for good; with it, once the optimum has been the smaller, cheaper
    size for that many intervals in a row, the rule moves there. Only from where a shrink of its own stopped: a size it
    started at (or grew to) within the band is held, and a curve that never points lower never moves it."""
    from cachetuner.mrc import MissRatioCurves
    from cachetuner.mrc.decide import MRCControlSettings, MRCDecider
    from cachetuner.space import ConfigSpace

    sizes = np.geomspace(1 << 20, 64 << 20, 8).astype(np.int64)
    ev = {"allkeys-lru": np.full(8, 5000.0)}
    space = ConfigSpace(min_bytes=1 << 20, max_bytes=64 << 20, policies=("allkeys-lru",), timeouts=(0,))
    # 64 MiB is worth 60 units an interval against 700 misses at one unit: the band (3 %) spans about half the range
    prices = Prices(memory_per_gib_hour=345_600.0, miss=1.0, switch=0.0, interval_s=10)

    def run(hit: np.ndarray, n: int, start: int = 64 << 20, **settings: object) -> list[int]:
        curves = MissRatioCurves(sizes, {"allkeys-lru": hit}, weight=dict(ev), evidence=ev)
        dec = MRCDecider(MRCControlSettings(confirm=1, shrink_confirm=1, min_weight=0, shrink_min_weight=0,
                                            fill_headroom=None, **settings))  # type: ignore[arg-type]
        cur, seen = RedisConfig(maxmemory=start, maxmemory_policy="allkeys-lru"), []
        for _ in range(n):
            cur = dec.decide(curves, prices, 1000.0, cur, space)
            seen.append(cur.maxmemory)
        return seen

    flat = np.full(8, 0.3)
    held = run(flat, 12)
    edge = held[0]
    assert sizes[0] < edge < 64 << 20 and set(held) == {edge}  # the band's edge, for good
    walked = run(flat, 12, shrink_patience=5)
    assert walked[:5] == [edge] * 5  # the streak restarts at the edge: five intervals there ...
    assert set(walked[5:]) == {int(sizes[0])}  # ... then the optimum, and it stays
    assert run(flat, 12, start=edge, shrink_patience=5) == [edge] * 12  # started there: the band holds it
    # a curve whose optimum is the size in force: patience never fires
    steep = np.array([0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.95])
    assert run(steep, 12, shrink_patience=1) == [64 << 20] * 12


def test_fill_pending_shrink_holds_the_bytes_in_use_at_long_intervals() -> None:
    """``fill_pending_shrink_from_s`` (57 s by default): the curve (ready at ``min_weight``) puts the optimum at the smallest size, but a
    shrink waits for ``shrink_min_weight``'s evidence, so the rule holds the size in force and the fill cap lets the
    still-filling cache grow into it with headroom. With the setting, at decisions at least that far apart, the cap
    holds the bytes in use instead (dropping nothing, buying nothing); at shorter intervals, and off (null), the cap is
    as before. Once the evidence is in, the shrink itself happens either way."""
    from cachetuner.metrics import MetricsSnapshot
    from cachetuner.mrc import MissRatioCurves
    from cachetuner.mrc.decide import MRCControlSettings, MRCDecider
    from cachetuner.space import ConfigSpace

    sizes = np.geomspace(8 << 20, 512 << 20, 8).astype(np.int64)
    space = ConfigSpace(min_bytes=8 << 20, max_bytes=512 << 20, policies=("allkeys-lru",), timeouts=(0,))
    hit = {"allkeys-lru": np.full(8, 0.02)}  # a scan: memory never pays
    prices = Prices(memory_per_gib_hour=50.0, miss=0.001, switch=0.0, interval_s=300)

    def first(interval_s: float, evidence: float, **settings: object) -> int:
        ev = {"allkeys-lru": np.full(8, evidence)}
        curves = MissRatioCurves(sizes, hit, weight=dict(ev), evidence=ev)
        dec = MRCDecider(MRCControlSettings(confirm=1, **settings))  # type: ignore[arg-type]
        cur = RedisConfig(maxmemory=512 << 20, maxmemory_policy="allkeys-lru")
        snap = MetricsSnapshot(interval_s=interval_s, gets=1000, hits=20, misses=980, sets=980, keys=10_000,
                               used_memory=100 << 20, maxmemory=512 << 20, config=cur)
        return dec.decide_after(snap, curves, prices, cur, space).maxmemory

    capped = first(300, 900.0, fill_pending_shrink_from_s=None)  # off: bytes in use plus two intervals of inserts
    assert (100 << 20) < capped < (512 << 20)
    assert first(300, 900.0) == 100 << 20  # the default (57 s, since 2026-12-07): held at the bytes in use
    assert first(60, 900.0) == 100 << 20
    assert first(30, 900.0) == first(30, 900.0, fill_pending_shrink_from_s=None) == capped  # a short interval: as before
    # held, the cache fills its cap and reads a few KB under it: the limit in force stays (no config change a reading)
    ev = {"allkeys-lru": np.full(8, 900.0)}
    curves = MissRatioCurves(sizes, hit, weight=dict(ev), evidence=ev)
    dec = MRCDecider(MRCControlSettings(confirm=1))
    cur = RedisConfig(maxmemory=512 << 20, maxmemory_policy="allkeys-lru")
    held = []
    dear_misses = Prices(memory_per_gib_hour=50.0, miss=0.01, switch=0.0, interval_s=300)  # hits worth their memory
    for used in (100 << 20, (100 << 20) - 4096, (100 << 20) - 9000):
        snap = MetricsSnapshot(interval_s=300, gets=1000, hits=900, misses=100, sets=100, keys=10_000, evictions=50,
                               used_memory=used, maxmemory=cur.maxmemory, config=cur)
        cur = dec.decide_after(snap, curves, dear_misses, cur, space)
        held.append(cur.maxmemory)
    assert held == [100 << 20] * 3
    # the evidence is in: the shrink goes ahead (to the band's edge, below the bytes in use), the setting or not
    shrunk = first(300, 5000.0)
    assert shrunk < 100 << 20 and first(300, 5000.0, fill_pending_shrink_from_s=None) == shrunk
