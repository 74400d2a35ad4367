"""Evaluation core: controllers on identical traffic, and the figures relative to static-default and to
the best hindsight reference (reports and MLflow logging live in :mod:`cachetuner.reports`)."""

from cachetuner.evaluation.compare import ControllerResult, EvalReport, evaluate_controllers, gap_closed
from cachetuner.evaluation.episode import (
    SUMMARY_FIELDS,
    IntervalRecord,
    context_from_env,
    run_episode,
    summarise,
)

__all__ = [
    "SUMMARY_FIELDS",
    "ControllerResult",
    "EvalReport",
    "IntervalRecord",
    "context_from_env",
    "evaluate_controllers",
    "gap_closed",
    "run_episode",
    "summarise",
]
