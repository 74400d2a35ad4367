"""Typed settings of the baselines (the ``baselines:`` section of an experiment YAML)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from cachetuner.config import Policy


class GridSettings(BaseModel):
    """The configuration grid the hindsight and search baselines choose from.

    Sizes are geometric between the env's maxmemory bounds; policies and timeouts default to the
    ones the env's action space can express, so that no baseline can pick a config PPO cannot.
    """

    model_config = ConfigDict(extra="forbid")

    n_sizes: int = Field(8, ge=2, description="sizes, geometric between the env's maxmemory bounds")
    policies: list[Policy] | None = Field(None, description="None = the policies of the env's action space")
    timeouts: list[int] | None = Field(None, description="None = the timeouts of the env's action space")


class HillClimbSettings(BaseModel):
    """Cliffhanger-style online size gradient and policy switching on the env's what-if estimates."""

    model_config = ConfigDict(extra="forbid")

    policy_margin: float = Field(0.01, ge=0, description="hit-ratio margin the other policy must win by to switch")
    max_step: float = Field(1.5, gt=1, description="largest size change per interval, as a factor")


class OptunaSettings(BaseModel):
    """Online TPE: every interval is one trial scored by that interval's cost."""

    model_config = ConfigDict(extra="forbid")

    n_startup_trials: int = Field(8, ge=1)


class OracleSettings(BaseModel):
    """Hindsight per-interval oracle (see :class:`cachetuner.baselines.oracle.Oracle`)."""

    model_config = ConfigDict(extra="forbid")

    horizon: int | None = Field(
        1,
        ge=1,
        description="intervals each candidate is held for in the lookahead (1 = greedy one-step; None = to the episode end)",
    )
    replan_every: int = Field(1, ge=1, description="intervals between two decisions (the choice is held in between)")


class BaselinesConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    static_maxmemory: int | None = Field(
        None, ge=1, description="static-default size in bytes; None = geometric middle of the env's bounds"
    )
    grid: GridSettings = Field(default_factory=GridSettings)
    hill_climb: HillClimbSettings = Field(default_factory=HillClimbSettings)
    optuna: OptunaSettings = Field(default_factory=OptunaSettings)
    oracle: OracleSettings = Field(default_factory=OracleSettings)
