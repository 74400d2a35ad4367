"""Dataset shapes, the time split (no leakage), sampling, metrics and baselines."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cachetuner.errors import ConfigError
from cachetuner.hotness_model.baselines import BASELINES, BaselineConfig, make_baseline
from cachetuner.hotness_model.dataset import (
    DatasetConfig,
    bucket_counts,
    build_dataset,
    stratified_keys,
    time_split,
)
from cachetuner.hotness_model.metrics import byte_recall, hot_set_precision, ranking_metrics
from cachetuner.hotness_model.synthetic import periodic_rotation_trace
from cachetuner.traces import read_trace

CFG = DatasetConfig(bucket_s=60.0, seq_len=32, horizon_buckets=3, keys_per_anchor=64, eval_keys_per_anchor=300)


@pytest.fixture(scope="module")
def trace():
    return periodic_rotation_trace(n_buckets=120, keys_per_group=16, cold_keys=64, seed=3)


def test_bucket_counts_match_requests(trace) -> None:
    bc = bucket_counts(trace, 60.0)
    assert bc.counts.shape == (trace.n_keys, 120)
    assert bc.counts.sum() == len(trace)
    # one key, one bucket, counted by hand
    k = int(trace.keys[0])
    b = np.floor((trace.timestamps - trace.timestamps[0]) / 60.0).astype(int)
    assert bc.counts[k, 5] == np.sum((trace.keys == k) & (b == 5))


def test_window_shapes_and_scaling(trace) -> None:
    ds = build_dataset(trace, CFG)
    for w in (ds.train, ds.val, ds.test):
        assert w.x.shape == (len(w), CFG.seq_len) and w.x.dtype == np.float32
        assert w.y.shape == (len(w),) and len(w.key) == len(w) == len(w.sizes)
        assert (w.x >= 0).all() and (w.y >= 0).all()
    # target of one test row recomputed from the raw requests
    i = 0
    t, k = int(ds.test.anchor[i]), int(ds.test.key[i])
    b = np.floor((trace.timestamps - trace.timestamps[0]) / 60.0).astype(int)
    raw = np.sum((trace.keys == k) & (b >= t) & (b < t + CFG.horizon_buckets))
    assert ds.test.y[i] == pytest.approx(np.log1p(raw))
    raw_hist = np.sum((trace.keys == k) & (b == t - 1))
    assert ds.test.x[i, -1] == pytest.approx(np.log1p(raw_hist))


def test_time_split_has_no_leakage(trace) -> None:
    """No bucket of any test target is used by any training or validation window."""
    ds = build_dataset(trace, CFG)
    h, L = CFG.horizon_buckets, CFG.seq_len
    test_target_buckets = {int(t) + j for t in np.unique(ds.test.anchor) for j in range(h)}
    for w in (ds.train, ds.val):
        used = set()
        for t in np.unique(w.anchor):
            used.update(range(int(t) - L, int(t) + h))  # inputs and targets
        assert not used & test_target_buckets
    assert ds.train.anchor.max() + h <= ds.split.split_bucket <= ds.test.anchor.min()
    # validation targets do not overlap training targets either
    if len(ds.val):
        assert ds.val.anchor.min() >= ds.train.anchor.max() + h


@given(nb=st.integers(40, 400), h=st.integers(1, 10), frac=st.floats(0.1, 0.5))
@settings(max_examples=60, deadline=None)
def test_time_split_property(nb: int, h: int, frac: float) -> None:
    cfg = DatasetConfig(horizon_buckets=h, test_fraction=frac, min_history=4)
    try:
        s = time_split(nb, cfg)
    except ConfigError:
        return
    last_fit = max(s.train.max(), s.val.max() if len(s.val) else 0)
    assert last_fit + h <= s.test.min()
    assert s.test.max() + h <= nb


def test_stratified_sampling_keeps_hot_and_cold() -> None:
    rng = np.random.default_rng(0)
    totals = np.concatenate([np.ones(10000), np.full(20, 1000.0)])
    picked = stratified_keys(totals, np.arange(len(totals)), 100, 4, rng)
    assert len(picked) == 100 and len(np.unique(picked)) == 100
    assert np.sum(totals[picked] == 1000) >= 20  # all hot keys, although they are 0.2 % of keys
    assert np.sum(totals[picked] == 1) >= 50


def test_too_short_trace_is_a_config_error(trace) -> None:
    with pytest.raises(ConfigError, match="too few"):
        build_dataset(trace, DatasetConfig(bucket_s=3600.0))


def test_metrics_on_known_rankings() -> None:
    actual = np.array([0, 0, 0, 5, 3, 0, 0, 0, 0, 1.0])
    assert hot_set_precision(actual, actual, 0.3) == 1.0
    assert hot_set_precision(-actual, actual, 0.1) == 0.0
    assert byte_recall(actual, actual, np.ones(10), 0.3) == 1.0
    pred = np.array([0, 0, 0, 4, 3, 1, 0, 0, 0, 0.0])
    assert hot_set_precision(pred, actual, 0.3) == pytest.approx(2 / 3)


def test_baselines_registry_and_behaviour(trace) -> None:
    with pytest.raises(ConfigError, match="unknown hotness baseline 'nope'; valid: last_value, ewma, sketch$"):
        make_baseline("nope")
    ds = build_dataset(trace, CFG)
    for name in BASELINES:
        pred = make_baseline(name, BaselineConfig()).predict(ds.test, ds.counts, CFG.horizon_buckets)
        assert pred.shape == ds.test.y.shape and np.isfinite(pred).all()
        m = ranking_metrics(pred, ds.test)
        assert -1 <= m["spearman"] <= 1 and 0 <= m["top10_precision"] <= 1
    # EWMA of a constant history is that constant
    w = ds.test
    const = type(w)(x=np.full((3, CFG.seq_len), np.log1p(4.0), np.float32), y=np.zeros(3, np.float32),
                    anchor=np.zeros(3, np.int64), key=np.arange(3), sizes=np.ones(3, np.int64))
    ewma = make_baseline("ewma").predict(const, ds.counts, 1)
    np.testing.assert_allclose(np.expm1(ewma), 4.0, rtol=1e-5)


def test_sketch_never_underestimates_aged_counts(trace) -> None:
    """Count-min sketches only over-count (collisions add): estimate >= the key's own aged count."""
    cfg = BaselineConfig(sketch_width=64, sketch_age_buckets=1000)  # no aging in the window: raw totals
    ds = build_dataset(trace, CFG)
    sk = make_baseline("sketch", cfg)
    est = np.expm1(sk.predict(ds.test, ds.counts, 2 * 1000)) / 1.0  # undo the horizon/(2*age) scaling
    own = np.array([ds.counts.counts[k, :t].sum() for k, t in zip(ds.test.key, ds.test.anchor, strict=True)])
    assert (est >= own - 1e-3).all()


def test_dataset_from_a_real_trace(shared_traces) -> None:
    tr = read_trace(shared_traces / "cache2k" / "web07.trace", "raw-be-i4")
    ds = build_dataset(tr, DatasetConfig(bucket_s=None, auto_buckets=128, seq_len=32, horizon_buckets=4,
                                         keys_per_anchor=128, eval_keys_per_anchor=500))
    assert ds.counts.counts.sum() == len(tr)
    assert len(ds.train) > 1000 and len(ds.test) > 1000
    assert ds.train.y.max() > ds.train.y.min()
