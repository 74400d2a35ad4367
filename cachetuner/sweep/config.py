"""Typed sweep configuration (``experiments/sweep_*.yaml``).

A sweep is a base training experiment (the ``train:`` YAML path or an inline mapping, exactly what
``cachetuner train`` reads) plus a search space whose keys are dotted field paths of that config
(``ppo.learning_rate``, ``env.reward.switch_cost``, ``seed``). Every key is checked against the
training config when the sweep is loaded, so a misspelt path fails with one line naming the file and
``search.<path>`` before any trial starts.
"""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from cachetuner.agent.config import TrainConfig
from cachetuner.errors import ConfigError
from cachetuner.yamlconfig import field_error, format_validation_error, load_model, load_yaml, validate


class Dimension(BaseModel):
    """One search dimension: exactly one of ``loguniform``/``uniform`` ``[low, high]``, ``randint``
    ``[low, high]`` (both ends included) or ``choice`` ``[values...]``."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    loguniform: tuple[float, float] | None = None
    uniform: tuple[float, float] | None = None
    randint: tuple[int, int] | None = None
    choice: list[Any] | None = Field(None, min_length=1)

    @model_validator(mode="after")
    def _one_kind(self) -> Dimension:
        set_ = [k for k in ("loguniform", "uniform", "randint", "choice") if getattr(self, k) is not None]
        if len(set_) != 1:
            raise ValueError("give exactly one of loguniform, uniform, randint, choice")
        rng = self.loguniform or self.uniform or self.randint
        if rng is not None and not rng[0] < rng[1]:
            raise ValueError(f"{set_[0]}: low must be below high")
        if self.loguniform is not None and self.loguniform[0] <= 0:
            raise ValueError("loguniform: low must be > 0")
        if self.choice is not None and not all(v is None or isinstance(v, bool | int | float | str) for v in self.choice):
            raise ValueError("choice: values must be numbers, strings, booleans or null (Optuna's categorical)")
        return self

    def sample_values(self) -> list[Any]:
        """Values that every trial could draw at the edges (to validate the key before running)."""
        if self.choice is not None:
            return list(self.choice)
        lo, hi = self.loguniform or self.uniform or self.randint  # type: ignore[misc]
        return [lo, hi]

    def tune_domain(self) -> Any:
        from ray import tune

        if self.loguniform is not None:
            return tune.loguniform(*self.loguniform)
        if self.uniform is not None:
            return tune.uniform(*self.uniform)
        if self.randint is not None:
            return tune.randint(self.randint[0], self.randint[1] + 1)
        return tune.choice(list(self.choice or []))


class AshaSettings(BaseModel):
    """ASHA early stopping (Ray Tune ``ASHAScheduler``), counted in evaluations."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    enabled: bool = True
    grace_period: int = Field(1, ge=1, description="evaluations every trial gets before it can be stopped")
    reduction_factor: float = Field(2.0, gt=1)


class SweepConfig(BaseModel):
    """A hyperparameter sweep: Optuna (TPE) proposes, ASHA stops the weak, each trial is ``train``."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    name: str = Field(..., min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    train: str | dict[str, Any] = Field(..., description="base experiment: a training YAML path or an inline mapping")
    search: dict[str, Dimension] = Field(..., min_length=1, description="dotted training-config path -> dimension")
    num_trials: int = Field(..., ge=1)
    max_concurrent: int | None = Field(None, ge=1, description="None = as many as the cluster's CPUs allow")
    cpus_per_trial: float = Field(1.0, gt=0)
    points_to_evaluate: list[dict[str, Any]] = Field(
        default_factory=list, description="configs tried first (known-good settings), keys as in search"
    )
    seed: int = Field(0, ge=0, description="seed of Optuna's sampler")
    asha: AshaSettings = Field(default_factory=AshaSettings)
    experiment: str | None = Field(None, min_length=1, max_length=500, description="MLflow experiment; default sweep-NAME")
    register_as: str | None = Field(
        None, min_length=1, pattern=r"^[A-Za-z0-9_.-]+$",
        description="registered model name (letters, digits, _ . -; MLflow refuses / and :); default cachetuner-NAME",
    )
    output_dir: Path = Field(Path("runs/sweeps"), description="trial models, the best model and Ray's files")

    @property
    def mlflow_experiment(self) -> str:
        return self.experiment or f"sweep-{self.name}"

    @property
    def model_name(self) -> str:
        return self.register_as or f"cachetuner-{self.name}"


def set_path(data: dict[str, Any], dotted: str, value: Any) -> None:
    node = data
    *head, last = dotted.split(".")
    for k in head:
        node = node.setdefault(k, {})
    node[last] = value


def _has_path(data: Any, dotted: str) -> bool:
    for k in dotted.split("."):
        if not isinstance(data, dict) or k not in data:
            return False
        data = data[k]
    return True


class LoadedSweep:
    """A validated sweep: its config, the base training config as a dict, and where it came from."""

    def __init__(self, cfg: SweepConfig, base: dict[str, Any], source: str) -> None:
        self.cfg = cfg
        self.base = base
        self.source = source

    def trial_config(self, params: dict[str, Any]) -> TrainConfig:
        """The training config of one trial: the base with ``params`` (dotted keys) set, the sweep's
        experiment, and the model under ``output_dir/trials``."""
        data = copy.deepcopy(self.base)
        for k, v in params.items():
            set_path(data, k, v)
        data["experiment"] = self.cfg.mlflow_experiment
        data["output_dir"] = str((self.cfg.output_dir / "trials").resolve())
        return validate(TrainConfig, data, f"{self.source}: trial", prefix="")

    def evaluations(self) -> int:
        """Evaluations of the longest trial (ASHA's ``max_t``)."""
        steps = [self.base.get("total_timesteps", 1)]
        d = self.cfg.search.get("total_timesteps")
        if d is not None:
            steps += d.sample_values()
        freq = (self.base.get("eval") or {}).get("eval_freq", 2048)
        return max(1, math.ceil(max(int(s) for s in steps) / max(int(freq), 1)))


def load_sweep(path: str | Path) -> LoadedSweep:
    """Read and check a sweep YAML: its fields, its base experiment, every search path and point."""
    src = str(path)
    cfg = load_model(SweepConfig, path)
    if isinstance(cfg.train, str):
        base_path = Path(cfg.train)
        if not base_path.is_file() and (Path(path).parent / base_path).is_file():
            base_path = Path(path).parent / base_path
        if not base_path.is_file():
            raise ConfigError(field_error(src, "train", f"{cfg.train}: experiment YAML not found"))
        base = load_yaml(base_path)
        base_cfg = TrainConfig.from_yaml(base_path)
    else:
        base = dict(cfg.train)
        base.setdefault("experiment", cfg.mlflow_experiment)
        base_cfg = validate(TrainConfig, base, src, prefix="train.")
    if not base_cfg.eval.enabled:
        raise ConfigError(field_error(src, "train.eval.enabled", "a sweep scores trials by their evaluations; enable it"))
    resolved = base_cfg.model_dump(mode="json")
    shortest = min([base_cfg.total_timesteps, *(int(v) for v in (cfg.search["total_timesteps"].sample_values()
                                                               if "total_timesteps" in cfg.search else []))])
    if base_cfg.eval.eval_freq > shortest:
        raise ConfigError(field_error(src, "train.eval.eval_freq", f"{base_cfg.eval.eval_freq} > total_timesteps "
                                      f"{shortest}: every trial must evaluate at least once"))
    _check_output_dir(cfg.output_dir, src)
    sweep = LoadedSweep(cfg, base, src)
    for key, dim in cfg.search.items():
        if not _has_path(resolved, key):
            raise ConfigError(field_error(src, f"search.{key}", "not a field of the training config"))
        for v in dim.sample_values():
            data = copy.deepcopy(base)
            set_path(data, key, v)
            validate(TrainConfig, data, src, prefix="train(with search values).")
        _check_integer_field(base, key, dim, src)
    for i, point in enumerate(cfg.points_to_evaluate):
        unknown = sorted(set(point) - set(cfg.search))
        if unknown:
            raise ConfigError(field_error(src, f"points_to_evaluate.{i}.{unknown[0]}", "not a key of search"))
        missing = sorted(set(cfg.search) - set(point))
        if missing:
            raise ConfigError(field_error(src, f"points_to_evaluate.{i}", f"missing {missing[0]!r} (give every search key)"))
        try:  # the trial this point would run: a bad value fails here, not inside a Ray worker per trial
            trial = sweep.trial_config(point)
        except ConfigError:
            data = copy.deepcopy(base)
            for k, v in point.items():
                set_path(data, k, v)
            try:
                TrainConfig.model_validate(data)
            except ValidationError as e:
                first = e.errors()[0]
                got = f" (got {first['input']!r})" if "input" in first and not isinstance(first["input"], dict) else ""
                raise ConfigError(format_validation_error(e, src, prefix=f"points_to_evaluate.{i}.") + got) from None
            raise
        if trial.eval.eval_freq > trial.total_timesteps:
            raise ConfigError(field_error(src, f"points_to_evaluate.{i}.total_timesteps", f"{trial.total_timesteps} < "
                                          f"train.eval.eval_freq {trial.eval.eval_freq}: the trial must evaluate at least once"))
    return sweep


def _check_output_dir(out: Path, src: str) -> None:
    """``output_dir`` must be a folder or creatable as one: an existing file there used to fail only when the sweep
    started writing (after MLflow's store was created)."""
    from cachetuner.outputs import output_dir_problem

    why = output_dir_problem(out)
    if why is not None:
        raise ConfigError(field_error(src, "output_dir", f"{out}: {why}"))


def _check_integer_field(base: dict[str, Any], key: str, dim: Dimension, src: str) -> None:
    """A ``uniform``/``loguniform`` range draws fractional values: on an integer field every trial but those at the
    ends would fail, so refuse it here and point at ``randint``."""
    rng = dim.uniform or dim.loguniform
    if rng is None:
        return
    lo, hi = rng
    probe = math.floor(lo) + 0.5
    if not lo < probe < hi:
        probe = lo + (hi - lo) / 2
    if probe == int(probe):
        return
    data = copy.deepcopy(base)
    set_path(data, key, probe)
    try:
        TrainConfig.model_validate(data)
    except ValidationError as e:
        if any(str(err.get("type", "")).startswith("int_") for err in e.errors()):
            kind = "uniform" if dim.uniform is not None else "loguniform"
            ints = f"[{math.ceil(lo)}, {math.floor(hi)}]"
            raise ConfigError(field_error(src, f"search.{key}.{kind}", f"draws fractional values (e.g. {probe:g}) but "
                                          f"{key} is an integer field; use randint: {ints} (or choice: [...])")) from None
