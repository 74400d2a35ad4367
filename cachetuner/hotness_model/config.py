"""The typed config of a hotness experiment (``experiments/hotness*.yaml``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from cachetuner.errors import ConfigError
from cachetuner.hotness_model.baselines import BaselineConfig
from cachetuner.hotness_model.dataset import DatasetConfig
from cachetuner.hotness_model.model import LSTMConfig
from cachetuner.yamlconfig import field_error, load_model


class TraceSource(BaseModel):
    """Which trace to learn from: a file path or ``synthetic:NAME`` (passed to ``read_trace``)."""

    model_config = ConfigDict(extra="forbid")

    path: str = Field(..., description="trace file, or synthetic:NAME (synthetic:periodic-rotation is built in)")
    format: str = "auto"
    size_model: str | None = Field(None, description="size model for traces without sizes, e.g. fixed:4096")
    rate: float | None = Field(None, gt=0, allow_inf_nan=False, description="requests/s for traces without timestamps")
    limit: int | None = Field(None, ge=1, description="read at most this many requests")
    seed: int = Field(0, ge=0)
    params: dict[str, Any] = Field(default_factory=dict, description="reader/workload params, e.g. {expand: false} for arc")

    @field_validator("format")
    @classmethod
    def _known_format(cls, v: str) -> str:
        """An unknown name is refused even for a synthetic trace (where the format is not read): a typo should not
        pass silently and then fail, or be ignored, later."""
        from cachetuner.traces import FORMATS

        if v != "auto" and v not in FORMATS.names():
            raise ValueError(f"unknown trace format {v!r}; valid: auto, {', '.join(FORMATS.names())}")
        return v


class TrainConfig(BaseModel):
    """Optimiser settings. ``max_seconds`` caps wall time so a run stays a 1-2 minute CPU job."""

    model_config = ConfigDict(extra="forbid")

    epochs: int = Field(6, ge=1)
    batch_size: int = Field(256, ge=1)
    lr: float = Field(2e-3, gt=0)
    weight_decay: float = Field(0.0, ge=0)
    max_train_rows: int = Field(60000, ge=100, description="uniform subsample of the training windows")
    max_seconds: float | None = Field(120.0, gt=0, description="stop after the epoch that passes this")
    seed: int = 0


class TrackingConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    experiment: str = "hotness"
    tracking_uri: str | None = None


class HotnessExperiment(BaseModel):
    """One experiment: trace + dataset + model + training + baselines + tracking + output."""

    model_config = ConfigDict(extra="forbid")

    name: str = "hotness"
    trace: TraceSource
    dataset: DatasetConfig = DatasetConfig()
    model: LSTMConfig = LSTMConfig()
    train: TrainConfig = TrainConfig()
    baselines: BaselineConfig = BaselineConfig()
    tracking: TrackingConfig = TrackingConfig()
    output_dir: str = Field("runs/hotness", description="model.pt, hotness.json and plots go below this")


def load_experiment(path: str | Path) -> HotnessExperiment:
    """Read and validate a hotness YAML (one-line ConfigError naming file and field)."""
    cfg = load_model(HotnessExperiment, path)
    if cfg.model.seq_len != cfg.dataset.seq_len:
        raise ConfigError(field_error(path, "model.seq_len", f"must equal dataset.seq_len ({cfg.dataset.seq_len})"))
    from cachetuner.outputs import output_dir_problem

    why = output_dir_problem(cfg.output_dir)  # checked now: save_model runs only after training, which would be lost
    if why is not None:
        raise ConfigError(field_error(path, "output_dir", f"{cfg.output_dir}: {why}"))
    return cfg
