"""One sweep trial, as it runs inside a Ray worker: a normal ``cachetuner train`` run.

The trial is :func:`cachetuner.agent.train.train` with three additions passed in: its MLflow run is
a child of the sweep's parent run, tagged with the Ray trial id and the node it ran on; and an SB3
logger output (:class:`TuneReport`) hands each evaluation's ``eval/mean_reward`` (the validation
score) to Ray Tune, where ASHA compares trials and may stop this one. When training ends, one last
report carries the best validation score (that of the saved model), the model path and the run id.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np
from rich.console import Console
from stable_baselines3.common.logger import KVWriter

from cachetuner.agent.train import train
from cachetuner.cluster import enter_workdir, node_info
from cachetuner.control.learned import one_thread
from cachetuner.sweep.config import LoadedSweep

#: The metric every trial reports and the sweep maximises: SB3's mean validation episode reward.
METRIC = "score"


@dataclass(frozen=True)
class TrialContext:
    """What every trial needs from the driver (pickled to the workers)."""

    sweep: LoadedSweep
    parent_run_id: str
    tracking_uri: str
    workdir: str


class TuneReport(KVWriter):
    """SB3 logger output that reports each evaluation to Ray Tune (``score``, ``timesteps``, ``best``)."""

    def __init__(self, extra: dict[str, Any]) -> None:
        self.extra = extra
        self.best = -np.inf
        self.evaluations = 0

    def write(self, key_values: dict[str, Any], key_excluded: dict[str, tuple[str, ...]], step: int = 0) -> None:
        if "eval/mean_reward" not in key_values:
            return
        from ray import tune

        score = float(key_values["eval/mean_reward"])
        self.best = max(self.best, score)
        self.evaluations += 1
        tune.report({METRIC: score, "best_score": self.best, "timesteps": int(step), "final": False, **self.extra})

    def close(self) -> None:
        pass


def run_trial(params: dict[str, Any], ctx: TrialContext) -> None:
    """Ray Tune function trainable: train one config, report every evaluation, then the result."""
    import mlflow
    from ray import tune

    enter_workdir(ctx.workdir)
    one_thread()
    logging.getLogger("mlflow").setLevel(logging.WARNING)
    where = node_info()
    trial_id = tune.get_context().get_trial_id()
    cfg = ctx.sweep.trial_config(params)
    reporter = TuneReport({"trial_id": trial_id, **where})
    tags = {"kind": "sweep-trial", "sweep": ctx.sweep.cfg.name, "ray.trial_id": trial_id,
            **{f"ray.{k}": v for k, v in where.items()}}
    res = train(cfg, tracking_uri=ctx.tracking_uri, console=Console(quiet=True), parent_run_id=ctx.parent_run_id,
                run_tags=tags, log_outputs=[reporter])
    best = reporter.best  # at least one evaluation: load_sweep checks eval_freq <= total_timesteps
    client = mlflow.MlflowClient(ctx.tracking_uri)
    client.log_metric(res.run_id, "sweep.best_score", best)
    tune.report({METRIC: best, "best_score": best, "timesteps": res.timesteps, "final": True,
                 "model_path": str(res.model_path), "mlflow_run_id": res.run_id, **reporter.extra})
