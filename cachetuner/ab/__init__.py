"""A/B evaluation of tuners: paired lock-step runs (simulation) or live shadow estimates, block-bootstrap
verdicts with a fixed horizon (or mSPRT), MLflow parent/child logging, and promotion into a daemon config.

See docs/ab.md. Entry points: :func:`run_ab`, :func:`log_ab`, :func:`promote`, ``cachetuner ab``.
"""

from cachetuner.ab.config import ABConfig, ArmConfig, load_ab_config
from cachetuner.ab.promote import PromotionRefusedError, promote
from cachetuner.ab.result import ABResult, ArmSeries
from cachetuner.ab.runner import run_ab
from cachetuner.ab.shadow import ShadowBackend, ShadowEstimator, TeeBackend
from cachetuner.ab.stats import VERDICTS, Verdict, bootstrap_ci, compare, msprt_ci
from cachetuner.ab.tracking import log_ab, read_report

__all__ = [
    "VERDICTS",
    "ABConfig",
    "ABResult",
    "ArmConfig",
    "ArmSeries",
    "PromotionRefusedError",
    "ShadowBackend",
    "ShadowEstimator",
    "TeeBackend",
    "Verdict",
    "bootstrap_ci",
    "compare",
    "load_ab_config",
    "log_ab",
    "msprt_ci",
    "promote",
    "read_report",
    "run_ab",
]
