"""Key-hotness predictor: which keys will be hot in the next interval.

Dataset from any trace (:mod:`.dataset`), an LSTM (:mod:`.model`), baselines (:mod:`.baselines`),
ranking metrics (:mod:`.metrics`), training with MLflow tracking (:mod:`.train`), the
:class:`HotnessPredictor` protocol (:mod:`.predictor`) and env features (:mod:`.features`).
"""

import importlib
from typing import Any

#: public name -> the submodule that defines it. Imported on first use (PEP 562), so that reading a
#: training config (``hotness_model.settings``) does not load torch.
_EXPORTS = {
    "BASELINES": "baselines", "BaselineConfig": "baselines", "make_baseline": "baselines",
    "HotnessExperiment": "config", "load_experiment": "config",
    "DatasetConfig": "dataset", "HotnessDataset": "dataset", "Windows": "dataset", "bucket_counts": "dataset",
    "build_dataset": "dataset",
    "FEATURE_NAMES": "features", "HotnessFeatures": "features",
    "METRIC_NAMES": "metrics", "ranking_metrics": "metrics",
    "HotnessLSTM": "model", "LSTMConfig": "model",
    "HotnessPredictor": "predictor", "InProcessPredictor": "predictor",
    "HotnessSettings": "settings",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


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
    "HotnessSettings",
    "InProcessPredictor",
    "LSTMConfig",
    "Windows",
    "build_dataset",
    "bucket_counts",
    "load_experiment",
    "make_baseline",
    "ranking_metrics",
]
