"""``reference_interval_s``: the rule's interval counts and the curves' sampling rate mean the same wall-clock time
at any decision interval (they were all measured at 10 s)."""

from __future__ import annotations

import pytest

from cachetuner.config import RedisConfig
from cachetuner.env import CacheTuningEnv, EnvConfig, WorkloadSpec
from cachetuner.metrics import MetricsSnapshot
from cachetuner.mrc.decide import MRCDecider
from cachetuner.mrc.rule_settings import MRCControlSettings
from cachetuner.space import ConfigSpace

MiB = 1 << 20
SPACE = ConfigSpace(min_bytes=4 * MiB, max_bytes=1024 * MiB, policies=("allkeys-lru", "allkeys-lfu"), timeouts=(0,))


def test_at_the_reference_interval_the_settings_are_as_given() -> None:
    s = MRCControlSettings(reference_interval_s=10.0)
    assert s.scaled_to(10.0) is s
    assert s.scaled_to(10.3) is s  # a live interval a little long is the reference
    off = MRCControlSettings(reference_interval_s=None)  # null: the counts as given at any interval
    assert off.scaled_to(60.0) is off


def test_auto_counts_in_wall_time_at_a_minute_or_more_only() -> None:
    """``auto``, the default since rule six (docs/control.md): the measured 10 s at 57 s or more (rules five and
    six: cheaper at 60, 120 and 300 s), the counts as given below (rule four: dearer at 30 s)."""
    auto = MRCControlSettings()
    assert auto.reference_interval_s == "auto"
    assert auto.scaled_to(10.0) is auto and auto.scaled_to(30.0) is auto and auto.scaled_to(56.9) is auto
    assert auto.scaled_to(60.0) == MRCControlSettings(reference_interval_s=10.0).scaled_to(60.0).model_copy(
        update={"reference_interval_s": "auto"})
    assert auto.scaled_to(300.0).confirm == 1


def test_at_60_s_the_counts_cover_the_same_wall_clock_time() -> None:
    s = MRCControlSettings(reference_interval_s=10.0)
    t = s.scaled_to(60.0)
    assert (t.confirm, t.shrink_confirm, t.cold_growth_intervals, t.policy_patience, t.budget_quick_intervals) == (
        1, 1, 2, 4, 5)  # 30 s, 80 s, 100 s, 240 s, 300 s: rounded, at least one interval
    assert t.payback_intervals == pytest.approx(5.0)  # 300 s
    # the same decay per second: six intervals of 10 s at 0.05 are one of 60 s
    assert 1 - t.gets_smoothing == pytest.approx((1 - s.gets_smoothing) ** 6)
    assert s.gets_floor_smoothing is not None and t.gets_floor_smoothing is not None
    assert 1 - t.gets_floor_smoothing == pytest.approx((1 - s.gets_floor_smoothing) ** 6)
    # what is not counted in intervals is untouched: evidence in GETs, shares, the fill cap's headroom
    assert (t.min_weight, t.shrink_min_weight, t.hysteresis, t.fill_headroom) == (
        s.min_weight, s.shrink_min_weight, s.hysteresis, s.fill_headroom)
    five = s.scaled_to(5.0)
    assert (five.confirm, five.shrink_confirm, five.payback_intervals) == (6, 16, pytest.approx(60.0))
    assert MRCControlSettings(budget_quick_intervals=0, reference_interval_s=10.0).scaled_to(60.0).budget_quick_intervals == 0  # off stays off


def test_payback_min_intervals_floors_the_scaled_payback_at_long_intervals() -> None:
    """``payback_min_intervals``: the payback horizon scaled to a long interval never falls below that many intervals
    (at 300 s the 300 s of ``payback_intervals`` are one interval, the one in which a growth refills); at 100 s or
    less with 3 it changes nothing, and off it is the scaled count, at least one."""
    off = MRCControlSettings(reference_interval_s=10.0, payback_min_intervals=None)
    on = MRCControlSettings(reference_interval_s=10.0, payback_min_intervals=3.0)
    assert off.scaled_to(300.0).payback_intervals == pytest.approx(1.0)
    assert on.scaled_to(300.0).payback_intervals == pytest.approx(3.0)
    assert (off.scaled_to(120.0).payback_intervals, on.scaled_to(120.0).payback_intervals) == (
        pytest.approx(2.5), pytest.approx(3.0))
    for iv in (5.0, 30.0, 60.0, 100.0):
        assert on.scaled_to(iv).payback_intervals == pytest.approx(off.scaled_to(iv).payback_intervals)
    assert on.scaled_to(300.0).model_copy(update={"payback_intervals": 1.0, "payback_min_intervals": None}) == (
        off.scaled_to(300.0))  # nothing else moves
    assert MRCControlSettings().payback_min_intervals == 3.0  # the rule ships with it (rule twelve, 2026-12-08)


def test_the_rule_scales_to_the_interval_it_is_given() -> None:
    d = MRCDecider(MRCControlSettings(reference_interval_s=10.0))
    cur = RedisConfig(maxmemory=64 * MiB, maxmemory_policy="allkeys-lru")
    snap = MetricsSnapshot(interval_s=60, gets=6000, hits=3000, misses=3000, sets=3000, used_memory=20 * MiB,
                           maxmemory=cur.maxmemory, keys=5000)
    from cachetuner.mrc.cost import Prices

    d.decide_after(snap, None, Prices(memory_per_gib_hour=1.0, miss=0.001, interval_s=60.0), cur, SPACE)
    assert d.rule.confirm == 1 and d.rule.payback_intervals == pytest.approx(5.0)
    assert d.fill is not None and d.fill.horizon_intervals == pytest.approx(5.0)  # the fill cap's amortisation too
    assert d.settings.confirm == 3  # the settings as configured (what a checkpoint is keyed on)
    stale = MetricsSnapshot(interval_s=0, stale=True)
    d.decide_after(stale, None, Prices(memory_per_gib_hour=1.0, miss=0.001, interval_s=60.0), cur, SPACE)
    assert d.rule.confirm == 1  # a stale reading says nothing about the interval


@pytest.mark.parametrize(("reference", "ratio"), [(10.0, 1.0), (None, 6.0), ("auto", 1.0)])
def test_the_curves_sample_as_many_requests_a_second_at_any_interval(reference: float | str | None, ratio: float) -> None:
    def base_rate(interval_s: float) -> float:
        cfg = EnvConfig.model_validate({
            "workloads": [WorkloadSpec(trace="synthetic:zipf", rate=100, params={"n_requests": 20000, "n_keys": 50000})],
            "interval_s": interval_s, "episode_intervals": 2, "warmup_intervals": 0,
            "mrc": {"n_sizes": 8, "min_keys": 0, "reference_interval_s": reference},
        })
        env = CacheTuningEnv(cfg)
        try:
            env.reset(seed=0)
            assert env.mrc is not None
            return env.mrc.base_rate
        finally:
            env.close()

    # 100 req/s: 100 sampled requests per 10 s need a 10 % rate; counted per 60 s interval, a sixth of it
    assert base_rate(10.0) == pytest.approx(0.1, rel=0.01)  # the trace measures a little over 100 req/s
    assert base_rate(10.0) / base_rate(60.0) == pytest.approx(ratio)


def test_evaluate_says_when_intervals_count_in_wall_time() -> None:
    """``evaluate`` and ``evaluate --suite`` print a note naming what counts in wall time at the run's interval, so a
    60 s run is not read as the per-interval rule of the earlier interval audits; nothing at 10 or 30 s."""
    from cachetuner.control.learned import load_policy
    from cachetuner.reports.evaluate import wall_time_note

    shipped = load_policy("default").env_config

    def at(iv: float, **mrc: object) -> EnvConfig:
        return EnvConfig.model_validate({**shipped.model_dump(), "interval_s": iv,
                                         "mrc": {**shipped.mrc.model_dump(), **mrc}})

    assert wall_time_note(at(10.0)) is None and wall_time_note(at(30.0)) is None
    note = wall_time_note(at(60.0))
    assert note is not None and note.startswith("decisions every 60 s: intervals counted in wall time (mrc's rule as 10 s, "
                                                "the policy's anchor as 10 s, the curves as 10 s;")
    forced = wall_time_note(at(30.0), 10.0)  # a candidate's --set controllers.mrc.reference_interval_s=10 at 30 s
    assert forced is not None and "(mrc's rule as 10 s;" in forced
    per_interval = {**shipped.mrc.anchor.model_dump(), "reference_interval_s": None}
    assert wall_time_note(at(60.0, reference_interval_s=None, anchor=per_interval), None) is None
