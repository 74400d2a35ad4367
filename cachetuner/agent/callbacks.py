"""SB3 callbacks and logger output that send training to MLflow and progress to the terminal.

SB3's own callbacks (checkpoints, evaluation, early stopping) are used as they are; what is added
here is only what SB3 lacks: cache-level metrics per rollout (hit ratio, cost, memory, which
policies and actions the agent picks) and a rich progress bar on stderr.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.logger import KVWriter


class MLflowOutputFormat(KVWriter):
    """SB3 logger output that forwards numeric scalars (losses, entropy, eval reward) to the active MLflow run."""

    def write(self, key_values: dict[str, Any], key_excluded: dict[str, tuple[str, ...]], step: int = 0) -> None:
        import mlflow

        metrics: dict[str, float] = {}
        for key, value in key_values.items():
            excluded = key_excluded.get(key) or ()
            if "mlflow" in excluded:
                continue
            numeric = isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool)
            if numeric and np.isfinite(value):
                metrics[key.replace("/", ".")] = float(value)
        if metrics:
            mlflow.log_metrics(metrics, step=step)

    def close(self) -> None:
        pass


class RolloutMetricsCallback(BaseCallback):
    """Per rollout, log to MLflow what the agent did to the cache.

    Metrics (step = total env steps so far): ``rollout.reward_mean``, ``rollout.hit_ratio``
    (hits / gets over all envs and steps), ``rollout.cost_*`` per cost component,
    ``rollout.maxmemory_mib_mean``, ``rollout.policy_share.<policy>`` and
    ``rollout.action_share.<dim>_<value>`` (the action histogram, per action dimension).
    """

    def __init__(self) -> None:
        super().__init__()
        self._reset_buffers()

    def _reset_buffers(self) -> None:
        self.rewards: list[float] = []
        self.hits = 0
        self.gets = 0
        self.costs: dict[str, list[float]] = {}
        self.maxmemory: list[int] = []
        self.policies: Counter[str] = Counter()
        self.actions: Counter[str] = Counter()

    def _on_rollout_start(self) -> None:
        self._reset_buffers()

    def _on_step(self) -> bool:
        self.rewards.extend(float(r) for r in np.asarray(self.locals["rewards"]).ravel())
        for act in np.asarray(self.locals["actions"]).reshape(len(self.locals["infos"]), -1):
            for dim, v in enumerate(act):
                self.actions[f"{dim}_{int(v)}"] += 1
        for info in self.locals["infos"]:
            snap = info.get("snapshot")
            if snap is not None:
                self.hits += snap.hits
                self.gets += snap.gets
            for k, v in (info.get("cost") or {}).items():
                self.costs.setdefault(k, []).append(float(v))
            cfg = info.get("config")
            if cfg is not None:
                self.maxmemory.append(cfg.maxmemory)
                self.policies[cfg.maxmemory_policy] += 1
        return True

    def _on_rollout_end(self) -> None:
        import mlflow

        if not self.rewards:
            return
        m: dict[str, float] = {"rollout.reward_mean": float(np.mean(self.rewards))}
        if self.gets:
            m["rollout.hit_ratio"] = self.hits / self.gets
        for k, v in self.costs.items():
            m[f"rollout.cost_{k}"] = float(np.mean(v))
        if self.maxmemory:
            m["rollout.maxmemory_mib_mean"] = float(np.mean(self.maxmemory)) / 2**20
        n_pol = sum(self.policies.values())
        for p, c in self.policies.items():
            m[f"rollout.policy_share.{p}"] = c / n_pol
        n_dim: Counter[str] = Counter()
        for k, c in self.actions.items():
            n_dim[k.split("_")[0]] += c
        for k, c in self.actions.items():
            m[f"rollout.action_share.{k}"] = c / n_dim[k.split("_")[0]]
        mlflow.log_metrics(m, step=self.num_timesteps)


class RichProgressCallback(BaseCallback):
    """A rich progress bar over env steps, on the stderr console (stdout stays for results)."""

    def __init__(self, total: int, console: Console, description: str = "training") -> None:
        super().__init__()
        self.total = total
        self.console = console
        self.description = description
        self.progress: Progress | None = None
        self.task: Any = None

    def _on_training_start(self) -> None:
        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=self.console,
            transient=False,
        )
        self.progress.start()
        self.task = self.progress.add_task(self.description, total=self.total)

    def _on_step(self) -> bool:
        if self.progress is not None:
            self.progress.update(self.task, completed=min(self.num_timesteps, self.total))
        return True

    def _on_training_end(self) -> None:
        if self.progress is not None:
            self.progress.update(self.task, completed=min(self.num_timesteps, self.total))
            self.progress.stop()
            self.progress = None
