"""Eviction-knob variants under a memory budget (cachetuner.mrc.knobs): the estimator's extra miniature caches at the
cap and the rule that picks a (policy, knobs) arm."""

from __future__ import annotations

import numpy as np
import pytest

from cachetuner.backend import RequestSample
from cachetuner.config import RedisConfig
from cachetuner.errors import ConfigError
from cachetuner.metrics import MetricsSnapshot
from cachetuner.mrc import MissRatioCurves, MRCConfig, MRCEstimator, Prices
from cachetuner.mrc.curves import KnobPoint
from cachetuner.mrc.decide import MRCControlSettings, MRCDecider
from cachetuner.mrc.knobs import KnobVariant, default_variants
from cachetuner.space import ConfigSpace
from cachetuner.traces.trace import Op

SIZES = np.geomspace(1 << 20, 64 << 20, 8).astype(np.int64)
CAP = int(SIZES[-1])
SPACE = ConfigSpace(min_bytes=1 << 20, max_bytes=CAP, policies=("allkeys-lru", "allkeys-lfu"), timeouts=(0,))
BUDGET = Prices(memory_per_gib_hour=0.0, miss=1.0, switch=0.0, interval_s=10, budget_bytes=CAP)
LRU = np.linspace(0.3, 0.5, 8)
LF1 = KnobVariant(policy="allkeys-lfu", lfu_log_factor=1)


def _curves(lf1_hit: float, evidence: float = 5000.0) -> MissRatioCurves:
    ev = {p: np.full(8, 5000.0) for p in ("allkeys-lru", "allkeys-lfu")}
    base = RedisConfig(maxmemory=CAP)
    return MissRatioCurves(SIZES, {"allkeys-lru": LRU, "allkeys-lfu": LRU - 0.05}, weight=dict(ev), evidence=ev,
                           knobs=[KnobPoint(LF1.apply(base), lf1_hit, evidence)], knob_size=CAP, base_config=base)


def _run(curves: MissRatioCurves, prices: Prices, knobs: bool, n: int = 40) -> tuple[RedisConfig, int | None]:
    dec = MRCDecider(MRCControlSettings(confirm=1, shrink_confirm=1, min_weight=0, shrink_min_weight=0,
                                        hysteresis=0.0, knobs=knobs, fill_headroom=None))
    cur = RedisConfig(maxmemory=CAP, maxmemory_policy="allkeys-lru")
    snap_gets, first = 1000, None
    for i in range(1, n + 1):
        snap = MetricsSnapshot(interval_s=10, gets=snap_gets, hits=400, maxmemory=cur.maxmemory,
                               used_memory=cur.maxmemory, evictions=10, config=cur)
        cur = dec.decide_after(snap, curves, prices, cur, SPACE)
        if first is None and cur.lfu_log_factor == 1:
            first = i
    return cur, first


@pytest.mark.parametrize(("gain", "at"), [(0.05, 1), (0.015, 24), (0.005, None)])
def test_a_knob_variant_wins_by_the_budget_policy_rule(gain: float, at: int | None) -> None:
    """A variant predicted ``policy_min_gain`` (3 pp) better at the cap is taken once confirmed; 1.5 pp only after
    ``policy_patience`` (24) intervals in a row; 0.5 pp never. The switch sets the policy and the knob together."""
    cur, first = _run(_curves(float(LRU[-1]) + gain), BUDGET, knobs=True)
    assert first == at
    if at is not None:
        assert (cur.maxmemory_policy, cur.lfu_log_factor, cur.maxmemory) == ("allkeys-lfu", 1, CAP)


def test_the_knob_rule_is_off_without_a_budget_without_the_setting_and_without_evidence() -> None:
    good = _curves(float(LRU[-1]) + 0.05)
    priced = Prices(memory_per_gib_hour=1e-6, miss=1.0, switch=0.0, interval_s=10)
    assert _run(good, priced, knobs=True)[1] is None
    assert _run(good, BUDGET, knobs=False)[1] is None
    young = MRCDecider(MRCControlSettings(confirm=1, min_weight=500, knobs=True, fill_headroom=None))
    cur = RedisConfig(maxmemory=CAP)
    assert young._choose_knobs(_curves(float(LRU[-1]) + 0.05, evidence=10.0), BUDGET, cur, SPACE) == cur


def _stream(n: int, n_keys: int, seed: int) -> RequestSample:
    rng = np.random.default_rng(seed)
    keys = (rng.zipf(1.2, n) - 1) % n_keys
    return RequestSample(keys=keys, sizes=np.full(n, 4096), timestamps=np.arange(n) / 1000.0,
                         ops=np.full(n, Op.GET, dtype=np.uint8), ttls=np.zeros(n), rate=1.0)


def test_the_estimator_adds_one_cache_per_variant_at_the_cap_and_leaves_the_curves_as_they_were() -> None:
    cfg = MRCConfig(n_sizes=6, knob_variants=default_variants())
    bounds, kw = (1 << 20, 32 << 20), {"n_keys_hint": 20_000, "seed": 3}
    plain = MRCEstimator(cfg, bounds, **kw)
    knobbed = MRCEstimator(cfg, bounds, knob_size=32 << 20, **kw)
    off = MRCEstimator(cfg.model_copy(update={"knob_variants": []}), bounds, knob_size=32 << 20, **kw)
    for i in range(5):
        s = _stream(20_000, 20_000, i)
        for est in (plain, knobbed, off):
            est.update(s)
    a, b = plain.curves(), knobbed.curves()
    for p in a.hit:
        np.testing.assert_array_equal(a.hit[p], b.hit[p])  # the variants' caches take nothing from the curves'
    assert not a.knobs and not off.curves().knobs and b.knob_size == 32 << 20
    assert [(k.config.maxmemory_policy, k.config.maxmemory_samples, k.config.lfu_log_factor) for k in b.knobs] == [
        ("allkeys-lru", 10, 10), ("allkeys-lfu", 10, 10), ("allkeys-lfu", 5, 1), ("allkeys-lfu", 5, 100)]
    for k in b.knobs:
        assert 0.0 < k.hit < 1.0 and k.evidence > 1000 and k.config.maxmemory == 32 << 20
    lru_at_cap = float(b.hit["allkeys-lru"][-1])
    assert abs(b.knobs[0].hit - lru_at_cap) < 0.05  # 10 samples against 5: close on a Zipf stream
    assert knobbed.sampled_share > plain.sampled_share
    assert knobbed.clone().curves().knobs == b.knobs


def test_a_knob_variant_is_validated_with_its_field_named() -> None:
    from cachetuner.yamlconfig import validate

    with pytest.raises(ConfigError, match="lfu_log_factor"):
        validate(MRCConfig, {"knob_variants": [{"policy": "allkeys-lfu", "lfu_log_factor": 300}]}, "env.mrc")
    with pytest.raises(ConfigError, match="policy"):
        validate(MRCConfig, {"knob_variants": [{"policy": "allkeys-fifo"}]}, "env.mrc")


@pytest.mark.parametrize("budget", [True, False])
def test_the_env_measures_the_variants_at_the_budget_cap_only(budget: bool) -> None:
    from cachetuner.control.base import build_controllers
    from cachetuner.control.settings import ControlSettings
    from cachetuner.env import EnvConfig, WorkloadSpec
    from cachetuner.evaluation.compare import evaluate_controllers

    cfg = EnvConfig.model_validate({
        "workloads": [WorkloadSpec(trace="synthetic:zipf", rate=200, params={"n_requests": 30000, "n_keys": 2000})],
        "interval_s": 10, "episode_intervals": 12, "warmup_intervals": 1,
        "mrc": {"n_sizes": 8, "knob_variants": [v.model_dump() for v in default_variants()]},
        "prices": {"preset": "budget", "budget_fraction": 0.2} if budget else {"preset": "scaled"},
    })
    from cachetuner.env import CacheTuningEnv

    env = CacheTuningEnv(cfg)
    env.reset(seed=0)
    for _ in range(3):
        env.step(env.action_space.sample())
    curves = env.curves
    assert curves is not None
    if budget:
        assert curves.knob_size == env.bounds[1] and len(curves.knobs) == 4
        assert {k.config.maxmemory for k in curves.knobs} == {env.bounds[1]}
    else:
        assert curves.knob_size is None and not curves.knobs
    ctl = ControlSettings.model_validate({"mrc": {"knobs": True}})
    rep = evaluate_controllers(cfg, build_controllers(["mrc"], ctl, seed=0), seed=0)
    assert rep.results["mrc"].summary["cost"] > 0


@pytest.mark.parametrize(("budget", "settings", "min_weight", "switch_at"), [
    (True, {}, 500.0, 3),  # as mrc ships: 1.5 pp confirmed for 3 intervals, on 200 GETs of evidence (min_weight 500)
    (True, {"budget_policy_gain": None, "budget_min_weight": None}, 100.0, 24),  # without it: 1 pp held for 24
    (False, {}, 100.0, None),  # priced memory: the 3 pp gate
])
def test_under_a_budget_a_quicker_policy_switch_is_the_default(budget: bool, settings: dict, min_weight: float,
                                                               switch_at: int | None) -> None:
    """``budget_policy_gain`` replaces the 3 pp gate under a budget only; ``budget_min_weight`` lets the rule decide
    on curves with that much evidence (here 200 GETs a point: below ``min_weight``'s 500). Both hold in the first
    ``budget_quick_intervals`` intervals (``decide`` alone counts none, so here throughout)."""
    ev = {p: np.full(8, 200.0) for p in ("allkeys-lru", "allkeys-lfu")}
    curves = MissRatioCurves(SIZES, {"allkeys-lru": LRU, "allkeys-lfu": LRU + 0.015}, weight=dict(ev), evidence=ev)
    prices = BUDGET if budget else Prices(memory_per_gib_hour=1e-3, miss=1.0, switch=0.0, interval_s=10)
    dec = MRCDecider(MRCControlSettings(confirm=3, shrink_confirm=3, min_weight=min_weight, shrink_min_weight=0,
                                        hysteresis=0.0, fill_headroom=None, **settings))
    cur, switched = RedisConfig(maxmemory=CAP, maxmemory_policy="allkeys-lru"), None
    for i in range(1, 40):
        cur = dec.decide(curves, prices, 1000.0, cur, SPACE)
        if cur.maxmemory_policy == "allkeys-lfu":
            switched = i
            break
    assert switched == switch_at


@pytest.mark.parametrize(("keys", "switches"), [(200, True), (20_000, False)])
def test_a_budget_switch_must_repay_its_transient_which_grows_with_what_the_cache_holds(keys: int, switches: bool) -> None:
    """``budget_switch_transient``: a 1.5 pp gain at 1,000 GETs an interval saves 15 misses an interval, 450 over the
    30-interval payback; a cache of 200 keys at a 40 % hit ratio costs 40 misses to switch (it pays), one of 20,000
    keys 4,000 (it does not)."""
    ev = {p: np.full(8, 5000.0) for p in ("allkeys-lru", "allkeys-lfu")}
    curves = MissRatioCurves(SIZES, {"allkeys-lru": LRU, "allkeys-lfu": LRU + 0.015}, weight=dict(ev), evidence=ev)
    dec = MRCDecider(MRCControlSettings(confirm=1, shrink_confirm=1, min_weight=0, shrink_min_weight=0, hysteresis=0.0,
                                        fill_headroom=None, budget_policy_gain=0.01, budget_switch_transient=True))
    cur = RedisConfig(maxmemory=CAP, maxmemory_policy="allkeys-lru")
    for _ in range(3):
        snap = MetricsSnapshot(interval_s=10, gets=1000, hits=400, keys=keys, maxmemory=CAP, used_memory=CAP,
                               evictions=10, config=cur)
        cur = dec.decide_after(snap, curves, BUDGET, cur, SPACE)
    assert (cur.maxmemory_policy == "allkeys-lfu") is switches


@pytest.mark.parametrize(("window", "quick_confirm", "switch_at"),
                         [(None, None, 3), (10, None, 3), (2, None, None), (10, 1, 1), (0, 1, None)])
def test_the_quicker_budget_switch_can_be_kept_to_the_first_intervals(window: int | None, quick_confirm: int | None,
                                                                      switch_at: int | None) -> None:
    """``budget_quick_intervals``: the quicker switch's gates (1 pp, 100 GETs of evidence) hold only in the first that
    many intervals since the reset; a 1.5 pp gain confirmed for 3 intervals switches inside a window of 10, and after
    a window of 2 the 3 pp gate is back (and the lasting-gain rule is off here), so it never does.
    ``budget_quick_confirm`` 1: inside the window the first interval that shows the gain switches."""
    ev = {p: np.full(8, 5000.0) for p in ("allkeys-lru", "allkeys-lfu")}
    curves = MissRatioCurves(SIZES, {"allkeys-lru": LRU, "allkeys-lfu": LRU + 0.015}, weight=dict(ev), evidence=ev)
    dec = MRCDecider(MRCControlSettings(confirm=3, shrink_confirm=3, min_weight=0, shrink_min_weight=0, hysteresis=0.0,
                                        fill_headroom=None, policy_sustained_gain=None, budget_policy_gain=0.01,
                                        budget_min_weight=100.0, budget_quick_intervals=window,
                                        budget_quick_confirm=quick_confirm))
    cur, switched = RedisConfig(maxmemory=CAP, maxmemory_policy="allkeys-lru"), None
    for i in range(1, 30):
        snap = MetricsSnapshot(interval_s=10, gets=1000, hits=400, keys=200, maxmemory=CAP, used_memory=CAP,
                               evictions=10, config=cur)
        cur = dec.decide_after(snap, curves, BUDGET, cur, SPACE)
        if cur.maxmemory_policy == "allkeys-lfu":
            switched = i
            break
    assert switched == switch_at
