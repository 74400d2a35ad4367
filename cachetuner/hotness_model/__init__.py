"""Key-hotness predictor: which keys will be hot in the next interval.

Dataset from any trace (:mod:`.dataset`), an LSTM (:mod:`.model`), baselines (:mod:`.baselines`),
ranking metrics (:mod:`.metrics`), training with MLflow tracking (:mod:`.train`), the
:class:`HotnessPredictor` protocol (:mod:`.predictor`) and env features (:mod:`.features`).
"""

from cachetuner.hotness_model.baselines import BASELINES, BaselineConfig, make_baseline
from cachetuner.hotness_model.config import HotnessExperiment, load_experiment
from cachetuner.hotness_model.dataset import (
    DatasetConfig,
    HotnessDataset,
    Windows,
    bucket_counts,
    build_dataset,
)
from cachetuner.hotness_model.features import FEATURE_NAMES, HotnessFeatures
from cachetuner.hotness_model.metrics import METRIC_NAMES, ranking_metrics
from cachetuner.hotness_model.model import HotnessLSTM, LSTMConfig
from cachetuner.hotness_model.predictor import HotnessPredictor, InProcessPredictor

__all__ = [
    "BASELINES",
    "FEATURE_NAMES",
    "METRIC_NAMES",
    "BaselineConfig",
    "DatasetConfig",
    "HotnessDataset",
    "HotnessExperiment",
    "HotnessFeatures",
    "HotnessLSTM",
    "HotnessPredictor",
    "InProcessPredictor",
    "LSTMConfig",
    "Windows",
    "build_dataset",
    "bucket_counts",
    "load_experiment",
    "make_baseline",
    "ranking_metrics",
]
