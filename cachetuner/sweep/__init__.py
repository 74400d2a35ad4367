"""Hyperparameter sweeps on Ray Tune (Optuna search, ASHA early stopping), tracked in MLflow.

Ray is optional (``pip install 'cachetuner[ray]'``): this package imports it only in the modules
that run trials (:mod:`.trial`, :mod:`.progress`, :mod:`.run`), never at ``import cachetuner``.
Entry points: :func:`cachetuner.sweep.run.run_sweep` (``cachetuner sweep``) and
:func:`cachetuner.sweep.bench.bench_suite` (``cachetuner bench sweep``).
"""

from cachetuner.sweep.config import Dimension, SweepConfig, load_sweep

__all__ = ["Dimension", "SweepConfig", "load_sweep"]
