"""The LSTM learns a periodic hot-set rotation that recency baselines cannot follow."""

from __future__ import annotations

from cachetuner.hotness_model.baselines import BaselineConfig
from cachetuner.hotness_model.config import TrainConfig
from cachetuner.hotness_model.dataset import DatasetConfig, build_dataset
from cachetuner.hotness_model.model import LSTMConfig
from cachetuner.hotness_model.synthetic import periodic_rotation_trace
from cachetuner.hotness_model.train import evaluate_models, train_lstm

#: Stated thresholds: rank correlation of the LSTM at least this, and this much above EWMA's.
MIN_SPEARMAN = 0.6
MIN_MARGIN_OVER_EWMA = 0.25


def test_lstm_learns_periodic_rotation() -> None:
    # 4 groups x 4 buckets: period 16 < seq_len 32, so each key's last hot phase is in its input
    trace = periodic_rotation_trace(n_buckets=240, seed=11)
    cfg = DatasetConfig(bucket_s=60.0, seq_len=32, horizon_buckets=2, keys_per_anchor=256, eval_keys_per_anchor=1000)
    ds = build_dataset(trace, cfg)
    res = train_lstm(
        ds.train, ds.val, LSTMConfig(seq_len=32, hidden=32, layers=1),
        TrainConfig(epochs=6, max_train_rows=20000, lr=3e-3, max_seconds=None),
    )
    assert res.history[-1]["val_loss"] < res.history[0]["val_loss"]
    metrics, _ = evaluate_models(ds, res.model, BaselineConfig())
    lstm, ewma = metrics["lstm"], metrics["ewma"]
    assert lstm["spearman"] >= MIN_SPEARMAN, metrics
    assert lstm["spearman"] >= ewma["spearman"] + MIN_MARGIN_OVER_EWMA, metrics
    assert lstm["top10_precision"] > ewma["top10_precision"], metrics
