"""``optuna``: online black-box search (TPE), every interval one trial."""

from __future__ import annotations

from typing import Any, ClassVar

from cachetuner.config import RedisConfig
from cachetuner.control.base import DecisionContext, register_controller
from cachetuner.control.settings import ControlSettings


@register_controller("optuna")
class OptunaSearch:
    """TPE (Optuna's default sampler) proposes ``maxmemory`` (log-uniform within the bounds), policy and
    timeout; the cost of the interval that config ran is the trial's value. It treats the workload as
    stationary and every interval as an independent trial (a cache needs many intervals to fill after a
    change), so it keeps exploring: the weakness this baseline documents."""

    name = "optuna"
    hindsight: ClassVar[bool] = False

    def __init__(self, settings: ControlSettings, seed: int = 0) -> None:
        self.settings = settings
        self.seed = seed
        self.study: Any = None
        self.trial: Any = None

    def reset(self, ctx: DecisionContext) -> None:
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        sampler = optuna.samplers.TPESampler(seed=self.seed, n_startup_trials=self.settings.optuna.n_startup_trials)
        self.study = optuna.create_study(direction="minimize", sampler=sampler)
        self.trial = None

    def decide(self, ctx: DecisionContext) -> RedisConfig:
        cost = ctx.info.get("cost")
        if self.trial is not None and cost:
            self.study.tell(self.trial, float(cost["total"]))
        space = ctx.space
        t = self.study.ask()
        size = t.suggest_float("maxmemory", space.min_bytes, space.max_bytes, log=True)
        policy = t.suggest_categorical("policy", list(self.settings.grid.policies or space.policies))
        timeout = t.suggest_categorical("timeout", list(self.settings.grid.timeouts or space.timeouts))
        self.trial = t
        return ctx.config.evolve(maxmemory=space.clip(size), maxmemory_policy=policy, timeout=int(timeout))
