"""Turn an :class:`~cachetuner.ab.config.ArmConfig` into a :class:`~cachetuner.control.Controller`.

Arms use the controller registry of :mod:`cachetuner.control` (``static-default``, ``mrc``,
``ppo``, ``fixed`` for a config written out in the YAML, ``current`` to leave the cache as it is:
in live shadow mode the control is whatever the daemon has applied).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from cachetuner.ab.config import ArmConfig
from cachetuner.errors import ConfigError
from cachetuner.yamlconfig import field_error


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
    from cachetuner.control.learned import CONFIG_SIDECAR
    from cachetuner.env.config import EnvConfig

    for candidate in (Path(arm.model).parent / CONFIG_SIDECAR, Path(arm.train_config) if arm.train_config else None):
        if candidate is not None and candidate.is_file():
            return EnvConfig.from_yaml(candidate, key="env")
    return None


def check_arm(arm: ArmConfig, role: str, source: str = "<ab config>", *, live: bool = False) -> None:
    """The arm's ``tuner`` name and ``params`` before anything runs or trains: one line naming the file and the
    field (``AB.yaml: field 'treatment.tuner': unknown controller 'bogus' ...``)."""
    from cachetuner.control import ControlSettings, controller_names, is_hindsight, watches_history
    from cachetuner.yamlconfig import validate

    validate(ControlSettings, arm.params, source, prefix=f"{role}.params.")
    if arm.tuner is None:
        return
    if arm.tuner not in controller_names():
        valid = ", ".join(n for n in controller_names() if n not in ("ppo", "fixed"))
        raise ConfigError(field_error(source, f"{role}.tuner", f"unknown controller {arm.tuner!r}; valid: {valid}"))
    if live and is_hindsight(arm.tuner):
        raise ConfigError(field_error(source, f"{role}.tuner", f"{arm.tuner!r} needs the future (it forks the env) and "
                                      "cannot run in shadow mode; use static-default, mrc, hill-climb, a model or a "
                                      "fixed config"))
    if watches_history(arm.tuner):
        raise ConfigError(field_error(source, f"{role}.tuner", f"{arm.tuner!r} watches a history before it starts, "
                                      "which an A/B arm does not have; use mrc (evaluate it with a suite's `history:`)"))


def build_tuner(arm: ArmConfig, *, seed: int = 0, live: bool = False, role: str = "arm",
                source: str = "<ab config>") -> Any:
    """The arm's controller (the model must exist: call :func:`ensure_model` first)."""
    from cachetuner.control import ControlSettings, is_hindsight, make_controller, watches_history
    from cachetuner.yamlconfig import validate

    settings = validate(ControlSettings, arm.params, source, prefix=f"{role}.params.")
    if arm.config is not None:
        return make_controller("fixed", settings, seed, config=arm.config)
    if arm.model is not None:
        return make_controller("ppo", settings, seed, model=arm.model)
    assert arm.tuner is not None
    if live and is_hindsight(arm.tuner):
        raise ConfigError(
            f"tuner {arm.tuner!r} needs the future (it forks the env) and cannot run in shadow mode; "
            "use static-default, mrc, hill-climb, a model or a fixed config"
        )
    if watches_history(arm.tuner):
        raise ConfigError(f"tuner {arm.tuner!r} watches a history before it starts, which an A/B arm does not have; "
                          "use mrc (evaluate it with a suite's `history:`)")
    return make_controller(arm.tuner, settings, seed)
