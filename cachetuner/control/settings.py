"""Typed settings of the built-in controllers (the ``controllers:`` section of an experiment YAML;
``baselines:`` is accepted as its older name)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from cachetuner.config import Policy
from cachetuner.mrc.decide import MRCControlSettings


class GridSettings(BaseModel):
    """The configuration grid the hindsight and search controllers choose from.

    Sizes are geometric between the maxmemory bounds; policies and timeouts default to the ones the
    env's action space can express, so that no baseline can pick a config PPO cannot.
    """

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    n_sizes: int = Field(8, ge=2, description="sizes, geometric between the maxmemory bounds")
    policies: list[Policy] | None = Field(None, description="None = the policies of the action space")
    timeouts: list[int] | None = Field(None, description="None = the timeouts of the action space")


class HillClimbSettings(BaseModel):
    """Cliffhanger-style gradient climbing on the local slope of the hit-ratio curve."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    policy_margin: float = Field(0.01, ge=0, description="hit-ratio margin the other policy must win by to switch")
    max_step: float = Field(1.25, gt=1, description="size change per interval, as a factor (the shadow-queue width)")


class OptunaSettings(BaseModel):
    """Online TPE: every interval is one trial scored by that interval's cost."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    n_startup_trials: int = Field(8, ge=1)


class SizedOnceSettings(BaseModel):
    """``sized-once``: how long the operator measures before sizing the cache."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    observe_intervals: int = Field(
        30, ge=1, description="intervals run at the initial config before the one decision (5 min at 10 s)"
    )
    min_weight: float = Field(
        500.0, gt=0, description="and until every curve point rests on this many windowed sampled GETs (mrc's)"
    )


class PPOSettings(BaseModel):
    """``ppo``: how a trained policy's actions are used (the policy itself is the artifact)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    defer_cold: bool | None = Field(
        None, description="null = the policy artifact's own setting (its train_config.yaml's controllers.ppo; false "
        "when absent). True: while the env's anchor (the mrc rule) is in its cold phase (its curves not yet ready "
        "since the start), run the anchor's config instead of the policy's action. Why: before the curves are ready "
        "the policy's curve features rest on little evidence, a phase that lasts a few intervals at the request rates "
        "it was trained on and tens at 10 req/s, and its moves there (holding a filling cache below the anchor's fill "
        "on short traces) were where it lost most against mrc on the audits; from the first ready curves on it acts "
        "as trained. The policy still sees every observation (a recurrent state stays in step). The shipped policy "
        "turns it on (adopted 2026-12-04 by the rule of experiments/suite-audit-7.yaml)."
    )
    defer_young: bool | None = Field(
        None, description="null = the policy artifact's own setting (false when absent). True: also while the anchor's "
        "cold growth may still act (its cold phase, or within the anchor's cold_growth_intervals of the start), run the "
        "anchor's config instead of the policy's action. Why: the shipped policy was trained around an anchor without "
        "that extension (its training anchor has cold_growth_intervals null), so in those intervals its offsets answer "
        "a rule it never saw; holding a loop's filling cache below the anchor's growth cost it 22 pp against mrc on one "
        "fresh cell (LIRS cs with lognormal sizes at 10 req/s, audit 19: 17.9 MiB held for 13 intervals under a "
        "21.7 MiB loop). Needs an anchor; the policy still sees every observation."
    )
    price_load: Literal["interval", "anchor"] | None = Field(
        None, description="null = the policy artifact's own setting (its train_config.yaml's controllers.ppo; "
        "'interval' when absent). The GETs the price feature divides the memory's cost by: 'interval', the last "
        "interval's GETs (how every policy so far was trained); 'anchor', the larger of those and the anchor rule's "
        "load estimate (mrc's `rate`: its quick EWMA of GETs, floored by the slow one, gets_floor_smoothing). Why: "
        "when the reads pause (a lull between bursts on a trace's own clock) the interval's GETs fall to zero, the "
        "feature says memory costs more per GET than ever seen in training, and the policy gives back the data the "
        "next burst reads, while its anchor, whose misses are priced at the floored load, holds it. Under steady "
        "load the two differ only by the interval's noise."
    )
    defer_outside: bool | None = Field(
        None, description="null = the policy artifact's own setting (false when absent). True: when the price feature "
        "(the interval's memory cost per GET in miss units, squashed) lies outside `price_support`, the range the policy "
        "saw on its training distribution, run the anchor's config instead of the policy's action. Why: the network's "
        "output there is an extrapolation; on the fresh cells of 2026-12-06 the shipped policy's departures from its "
        "anchor at `cheap-backend` prices (memory ~600x cheaper relative to a miss than in training) were all losses. "
        "Needs `price_support`; ignored for a policy trained without price features."
    )
    price_support: tuple[float, float] | None = Field(
        None, description="[low, high]: the range of the price feature on the policy's training distribution (0.5 % and "
        "99.5 % quantiles over seeded training episodes, written by `cachetuner train` (support_episodes) or measured "
        "by `cachetuner support`; part of the artifact, train_config.yaml's controllers.ppo). null = the artifact's own."
    )

    @field_validator("price_support")
    @classmethod
    def _ordered(cls, v: tuple[float, float] | None) -> tuple[float, float] | None:
        if v is not None and not 0.0 <= v[0] <= v[1] <= 1.0:
            raise ValueError(f"needs 0 <= low <= high <= 1 (the feature is squashed into [0, 1)), got {list(v)}")
        return v


class OracleSettings(BaseModel):
    """Receding-horizon hindsight oracle (see :class:`cachetuner.control.hindsight.Oracle`)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    horizon: int | None = Field(
        1, ge=1, description="intervals each candidate is held in the lookahead (None = to the episode end)"
    )
    replan_every: int = Field(1, ge=1, description="intervals between two decisions (the choice is held in between)")


class ControlSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    static_maxmemory: int | None = Field(
        None, ge=1, description="static-default size in bytes; None = the env's initial maxmemory"
    )
    grid: GridSettings = Field(default_factory=GridSettings)
    mrc: MRCControlSettings = Field(default_factory=MRCControlSettings)
    hill_climb: HillClimbSettings = Field(default_factory=HillClimbSettings)
    optuna: OptunaSettings = Field(default_factory=OptunaSettings)
    sized_once: SizedOnceSettings = Field(default_factory=SizedOnceSettings)
    ppo: PPOSettings = Field(default_factory=PPOSettings)
    oracle: OracleSettings = Field(default_factory=OracleSettings)


__all__ = ["ControlSettings", "GridSettings", "HillClimbSettings", "MRCControlSettings", "OptunaSettings", "OracleSettings",
           "SizedOnceSettings"]
