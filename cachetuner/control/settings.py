"""Typed settings of the built-in controllers (the ``controllers:`` section of an experiment YAML;
``baselines:`` is accepted as its older name)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from cachetuner.config import Policy
from cachetuner.mrc.decide import MRCControlSettings


class GridSettings(BaseModel):
    """The configuration grid the hindsight and search controllers choose from.

    Sizes are geometric between the maxmemory bounds; policies and timeouts default to the ones the
    env's action space can express, so that no baseline can pick a config PPO cannot.
    """

    model_config = ConfigDict(extra="forbid")

    n_sizes: int = Field(8, ge=2, description="sizes, geometric between the maxmemory bounds")
    policies: list[Policy] | None = Field(None, description="None = the policies of the action space")
    timeouts: list[int] | None = Field(None, description="None = the timeouts of the action space")


class HillClimbSettings(BaseModel):
    """Cliffhanger-style gradient climbing on the local slope of the hit-ratio curve."""

    model_config = ConfigDict(extra="forbid")

    policy_margin: float = Field(0.01, ge=0, description="hit-ratio margin the other policy must win by to switch")
    max_step: float = Field(1.25, gt=1, description="size change per interval, as a factor (the shadow-queue width)")


class OptunaSettings(BaseModel):
    """Online TPE: every interval is one trial scored by that interval's cost."""

    model_config = ConfigDict(extra="forbid")

    n_startup_trials: int = Field(8, ge=1)


class OracleSettings(BaseModel):
    """Receding-horizon hindsight oracle (see :class:`cachetuner.control.hindsight.Oracle`)."""

    model_config = ConfigDict(extra="forbid")

    horizon: int | None = Field(
        1, ge=1, description="intervals each candidate is held in the lookahead (None = to the episode end)"
    )
    replan_every: int = Field(1, ge=1, description="intervals between two decisions (the choice is held in between)")


class GuardSettings(BaseModel):
    """The baseline guard (``mrc-guarded``, ``ppo-guarded``; :mod:`cachetuner.control.guard`): fall back to
    static-default while the wrapped controller is estimated to cost more than ``alpha`` over it."""

    model_config = ConfigDict(extra="forbid")

    alpha: float = Field(0.005, ge=0, description="allowed excess over static-default's estimated cost so far, as a share of it")
    z: float = Field(2.0, ge=0, description="noise margin: standard deviations of the excess estimate added to the allowance")
    min_intervals: int = Field(
        30, ge=1, description="intervals before any verdict (mrc's payback horizon: a move may cost first and repay later)"
    )
    release: float = Field(
        0.5, ge=0, le=1, description="hand control back once the excess is below this share of the allowance (hysteresis)"
    )
    rate: float = Field(0.05, gt=0, le=1, description="sampling rate of the paired miniature caches")
    min_objects: int = Field(
        400, ge=1, description="the baseline's miniature cache holds at least this many objects (raises the rate for small caches)"
    )


class ControlSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    static_maxmemory: int | None = Field(
        None, ge=1, description="static-default size in bytes; None = the env's initial maxmemory"
    )
    grid: GridSettings = Field(default_factory=GridSettings)
    mrc: MRCControlSettings = Field(default_factory=MRCControlSettings)
    hill_climb: HillClimbSettings = Field(default_factory=HillClimbSettings)
    optuna: OptunaSettings = Field(default_factory=OptunaSettings)
    oracle: OracleSettings = Field(default_factory=OracleSettings)
    guard: GuardSettings = Field(default_factory=GuardSettings)


__all__ = ["ControlSettings", "GridSettings", "GuardSettings", "HillClimbSettings", "MRCControlSettings", "OptunaSettings", "OracleSettings"]
