"""Online Optuna TPE: every interval is one trial, scored by that interval's cost."""

from __future__ import annotations

from typing import Any

from cachetuner.baselines.base import register_tuner
from cachetuner.baselines.settings import BaselinesConfig
from cachetuner.baselines.space import config_space
from cachetuner.config import RedisConfig


@register_tuner("optuna")
class OptunaTuner:
    """A black-box search baseline: TPE (Optuna's default sampler) proposes ``maxmemory`` (log-uniform
    within the env's bounds), policy and timeout from the env's action space; the cost the env charges
    for the interval that config ran is the trial's value. It treats the workload as stationary, so
    after a shift it keeps exploiting stale trials — that is the weakness this baseline documents.
    """

    name = "optuna"

    def __init__(self, settings: BaselinesConfig | None = None, seed: int = 0) -> None:
        self.settings = settings or BaselinesConfig()
        self.seed = seed
        self.study: Any = None
        self.trial: Any = None
        self.env: Any = None

    def reset(self, env: Any) -> None:
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self.env = env
        sampler = optuna.samplers.TPESampler(seed=self.seed, n_startup_trials=self.settings.optuna.n_startup_trials)
        self.study = optuna.create_study(direction="minimize", sampler=sampler)
        self.trial = None

    def decide(self, obs: Any, info: dict[str, Any]) -> RedisConfig:
        if self.trial is not None and "cost" in info:
            self.study.tell(self.trial, float(info["cost"]["total"]))
        space = config_space(self.env)
        t = self.study.ask()
        size = t.suggest_float("maxmemory", space.min_bytes, space.max_bytes, log=True)
        policy = t.suggest_categorical("policy", list(self.settings.grid.policies or space.policies))
        timeout = t.suggest_categorical("timeout", list(self.settings.grid.timeouts or space.timeouts))
        self.trial = t
        cur: RedisConfig = self.env.unwrapped.backend.config
        return cur.evolve(maxmemory=space.clip(size), maxmemory_policy=policy, timeout=int(timeout))
