"""Switch trials under a memory budget (cachetuner.mrc.trials): two clones of the in-force policy's miniature cache
at the cap, one switched, fed the same sample; and the decider's gate that reads them."""

from __future__ import annotations

import numpy as np
import pytest

from cachetuner.backend import RequestSample
from cachetuner.config import RedisConfig
from cachetuner.mrc import MissRatioCurves, MRCConfig, MRCEstimator, Prices
from cachetuner.mrc.decide import MRCControlSettings, MRCDecider
from cachetuner.mrc.trials import SwitchTrials, TrialResult, trial_evidence
from cachetuner.sim import TieredCacheSim
from cachetuner.space import ConfigSpace
from cachetuner.traces.trace import Op, Trace

SIZES = np.geomspace(1 << 20, 64 << 20, 8).astype(np.int64)
CAP = int(SIZES[-1])
SPACE = ConfigSpace(min_bytes=1 << 20, max_bytes=CAP, policies=("allkeys-lru", "allkeys-lfu"), timeouts=(0,))
BUDGET = Prices(memory_per_gib_hour=0.0, miss=1.0, switch=0.0, interval_s=10, budget_bytes=CAP)
LRU = np.linspace(0.3, 0.5, 8)


def _zipf_keys(n: int, n_keys: int, seed: int) -> np.ndarray:
    return (np.random.default_rng(seed).zipf(1.2, n) - 1) % n_keys


def _trace(keys: np.ndarray) -> Trace:
    n = len(keys)
    return Trace(name="t", timestamps=np.arange(n) / 1000.0, keys=keys, sizes=np.full(n, 4096),
                 ops=np.full(n, Op.GET, dtype=np.uint8), ttls=np.zeros(n), n_keys=2000, key_bytes=np.full(2000, 16, dtype=np.int64), read_only=True)


def _sim(policy: str) -> TieredCacheSim:
    return TieredCacheSim(n_keys=2000, config=RedisConfig(maxmemory=4 << 20, maxmemory_policy=policy), seed=1)


def test_a_trial_measures_the_switch_against_the_same_cache_staying() -> None:
    """A scan-resistant workload (a hot Zipf set under a one-pass scan): LFU keeps the hot keys, LRU lets the scan
    flush them, so the switched clone hits more; the clone that stays is the source's twin (same hits as the source
    fed the same requests). Trials restart after their span and keep the finished one as a result."""
    src = _sim("allkeys-lru")
    trials = SwitchTrials(span=3, policies=("allkeys-lru", "allkeys-lfu"))
    src.run_counts(_trace(_zipf_keys(5000, 500, 0)), 0, 5000)
    trials.roll("allkeys-lru", src)
    assert trials.results() == []  # a trial that has seen nothing is no evidence
    for i in range(5):
        hot = _zipf_keys(3000, 500, i + 1)
        scan = 1000 + (np.arange(1500) + 1500 * i) % 1000  # keys 1000..1999, each read once per pass
        tr = _trace(np.concatenate([hot, scan, hot[:1500]]))
        before = src.run_counts(tr, 0, len(tr)).hits
        trials.feed(tr)
        if i == 0:
            t = trials._running["allkeys-lfu"]
            assert t.hits_stay == before  # the twin hits what the source hits
        trials.roll("allkeys-lru", src)
    res = trials.results()
    assert {(r.source, r.target) for r in res} == {("allkeys-lru", "allkeys-lfu")}
    done = [r for r in res if r.done]
    assert len(done) == 1 and done[0].age == 3 and done[0].gain > 0.01
    assert [r.age for r in res if not r.done] == [2]
    # a change of the policy in force drops every trial: they were about a switch from the old one
    trials.roll("allkeys-lfu", src)
    assert trials.results() == []
    assert trials.clone().results() == trials.results()


@pytest.mark.parametrize(("results", "expected"), [
    ([], None),
    ([TrialResult("allkeys-lru", "allkeys-lfu", 0.02, 500, 2, False)], None),  # too young, nothing finished
    ([TrialResult("allkeys-lru", "allkeys-lfu", -0.01, 900, 10, True),
      TrialResult("allkeys-lru", "allkeys-lfu", 0.02, 500, 2, False)], -0.01),  # the finished one
    ([TrialResult("allkeys-lru", "allkeys-lfu", -0.01, 900, 10, True),
      TrialResult("allkeys-lru", "allkeys-lfu", 0.02, 500, 3, False)], 0.02),  # the running one, old enough
    ([TrialResult("allkeys-lfu", "allkeys-lru", 0.05, 900, 10, True)], None),  # a trial from another policy
])
def test_the_evidence_is_the_running_trial_once_old_enough_else_the_last_finished(
        results: list[TrialResult], expected: float | None) -> None:
    ev = trial_evidence(results, "allkeys-lru", "allkeys-lfu", min_age=3)
    assert (ev.gain if ev is not None else None) == expected


@pytest.mark.parametrize(("gain", "setting", "switches"), [
    (None, None, True),   # off: the 3 pp predicted gain switches
    (None, 3, False),     # on, but no trial yet
    (-0.01, 3, False),    # the trial shows the switched cache behind
    (0.01, 3, True),      # ahead
])
def test_a_budget_switch_waits_for_a_trial_that_shows_it_ahead(gain: float | None, setting: int | None,
                                                                switches: bool) -> None:
    trials = [] if gain is None else [TrialResult("allkeys-lru", "allkeys-lfu", gain, 800, 10, True)]
    ev = {p: np.full(8, 5000.0) for p in ("allkeys-lru", "allkeys-lfu")}
    curves = MissRatioCurves(SIZES, {"allkeys-lru": LRU, "allkeys-lfu": LRU + 0.05}, weight=dict(ev), evidence=ev,
                             trials=trials)
    dec = MRCDecider(MRCControlSettings(confirm=1, shrink_confirm=1, min_weight=0, shrink_min_weight=0, hysteresis=0.0,
                                        fill_headroom=None, budget_switch_trial=setting))
    cur = RedisConfig(maxmemory=CAP, maxmemory_policy="allkeys-lru")
    for _ in range(3):
        cur = dec.decide(curves, BUDGET, 1000.0, cur, SPACE)
    assert (cur.maxmemory_policy == "allkeys-lfu") is switches
    # with priced memory the setting does not apply
    priced = Prices(memory_per_gib_hour=1e-9, miss=1.0, switch=0.0, interval_s=10)
    dec2 = MRCDecider(MRCControlSettings(confirm=1, shrink_confirm=1, min_weight=0, shrink_min_weight=0,
                                         hysteresis=0.0, fill_headroom=None, budget_switch_trial=3))
    assert dec2.decide(curves, priced, 1000.0, RedisConfig(maxmemory=CAP), SPACE).maxmemory_policy == "allkeys-lfu"


def test_the_estimator_runs_trials_at_the_cap_under_a_budget_only_and_leaves_the_curves_as_they_were() -> None:
    cfg = MRCConfig(n_sizes=6, switch_trial_intervals=4)
    bounds, kw = (1 << 20, 32 << 20), {"n_keys_hint": 20_000, "seed": 3}
    plain = MRCEstimator(cfg.model_copy(update={"switch_trial_intervals": None}), bounds, knob_size=32 << 20, **kw)
    tried = MRCEstimator(cfg, bounds, knob_size=32 << 20, **kw)
    unbudgeted = MRCEstimator(cfg, bounds, **kw)
    for i in range(6):
        keys = _zipf_keys(20_000, 20_000, i)
        s = RequestSample(keys=keys, sizes=np.full(len(keys), 4096), timestamps=np.arange(len(keys)) / 1000.0,
                          ops=np.full(len(keys), Op.GET, dtype=np.uint8), ttls=np.zeros(len(keys)), rate=1.0)
        for est in (plain, tried, unbudgeted):
            est.update(s, policy="allkeys-lru")
    a, b = plain.curves(), tried.curves()
    for p in a.hit:
        np.testing.assert_array_equal(a.hit[p], b.hit[p])
    assert not a.trials and not unbudgeted.curves().trials
    assert {(r.source, r.target, r.done) for r in b.trials} == {("allkeys-lru", "allkeys-lfu", True),
                                                                 ("allkeys-lru", "allkeys-lfu", False)}
    assert all(r.gets > 0 and -1.0 < r.gain < 1.0 for r in b.trials)
    assert tried.clone().curves().trials == b.trials
