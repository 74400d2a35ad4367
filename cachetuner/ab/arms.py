"""Turn an :class:`~cachetuner.ab.config.ArmConfig` into a :class:`~cachetuner.baselines.Tuner`.

Arms reuse the tuner registry of :mod:`cachetuner.baselines` (``static-default``, ``hill-climb``,
``optuna``, ``ppo``, ...). Two arm kinds are specific to A/B runs and live here: a fixed
configuration (what production runs today, written out in the YAML) and ``current`` (leave the
cache as it is: in live shadow mode the control is whatever the daemon has applied).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from cachetuner.ab.config import ArmConfig
from cachetuner.config import RedisConfig
from cachetuner.errors import ConfigError

#: Tuners that look into the future by forking the env: impossible on live traffic.
HINDSIGHT_TUNERS = ("best-static", "oracle")
#: Arm-only tuner name: keep the configuration the cache already has (the daemon's, in shadow mode).
CURRENT = "current"


class FixedConfig:
    """Holds one explicit configuration for the whole run (clipped to the env's bounds by ``step_config``)."""

    name = "config"

    def __init__(self, config: RedisConfig) -> None:
        self.config = config

    def reset(self, env: Any) -> None:
        return None

    def decide(self, obs: Any, info: dict[str, Any]) -> RedisConfig:
        return self.config


class KeepCurrent:
    """Never changes anything: the cache keeps whatever configuration it has (set by the daemon or by hand)."""

    name = CURRENT

    def __init__(self) -> None:
        self.env: Any = None

    def reset(self, env: Any) -> None:
        self.env = env

    def decide(self, obs: Any, info: dict[str, Any]) -> RedisConfig:
        return self.env.unwrapped.backend.config


def ensure_model(arm: ArmConfig, *, tracking_uri: str | None = None) -> Path | None:
    """The arm's model path; trains it with ``arm.train_config`` first when the file is missing.

    Training goes through :func:`cachetuner.agent.train.train` (its own MLflow run); the resulting
    model and its ``train_config.yaml`` sidecar are copied to the declared path.
    """
    if arm.model is None:
        return None
    path = Path(arm.model)
    if path.is_file():
        return path
    if arm.train_config is None:
        raise ConfigError(f"{path}: model file not found; train it (cachetuner train) or set train_config for the arm")
    from cachetuner.agent.config import TrainConfig
    from cachetuner.agent.train import CONFIG_SIDECAR, train

    result = train(TrainConfig.from_yaml(arm.train_config), tracking_uri=tracking_uri, config_path=arm.train_config)
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(result.model_path, path)
    sidecar = Path(result.model_path).parent / CONFIG_SIDECAR
    if sidecar.is_file():
        shutil.copyfile(sidecar, path.parent / CONFIG_SIDECAR)
    return path


def model_env_config(arm: ArmConfig) -> Any:
    """The env config a model was trained with (its ``train_config.yaml`` sidecar, else the arm's
    ``train_config``), or None."""
    if arm.model is None:
        return None
    from cachetuner.agent.train import CONFIG_SIDECAR
    from cachetuner.env.config import EnvConfig

    for candidate in (Path(arm.model).parent / CONFIG_SIDECAR, Path(arm.train_config) if arm.train_config else None):
        if candidate is not None and candidate.is_file():
            return EnvConfig.from_yaml(candidate, key="env")
    return None


def build_tuner(arm: ArmConfig, *, seed: int = 0, live: bool = False) -> Any:
    """A tuner for the arm (the model must exist: call :func:`ensure_model` first)."""
    from cachetuner.baselines import BaselinesConfig, make_tuner
    from cachetuner.yamlconfig import validate

    if arm.config is not None:
        return FixedConfig(arm.config)
    settings = validate(BaselinesConfig, arm.params, "arm params")
    if arm.model is not None:
        return make_tuner("ppo", model_path=arm.model, settings=settings, seed=seed)
    assert arm.tuner is not None
    if arm.tuner == CURRENT:
        return KeepCurrent()
    if live and arm.tuner in HINDSIGHT_TUNERS:
        raise ConfigError(
            f"tuner {arm.tuner!r} needs the future (it forks the env) and cannot run in shadow mode; "
            "use static-default, hill-climb, optuna, a model or a fixed config"
        )
    return make_tuner(arm.tuner, settings=settings, seed=seed)
