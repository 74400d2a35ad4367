"""Typed configuration of the tuning environment (the ``env:`` section of an experiment YAML).

One model per concern (workloads, memory bounds, actions, reward, observation, what-if), all
``extra="forbid"`` so that a misspelt field fails with one line naming the file and the field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from cachetuner.config import Policy, RedisConfig, TenantTarget, redis_policies
from cachetuner.env.prices import PricesConfig
from cachetuner.errors import ConfigError, TraceError
from cachetuner.mrc.config import MRCConfig
from cachetuner.sim.params import SimParams
from cachetuner.traces.rate_profile import parse_rate_profile
from cachetuner.ttl.base import make_ttl_policy
from cachetuner.ttl.knobs import ClientTTL
from cachetuner.yamlconfig import load_model

_GIB = 1024**3

#: Parameters of the default workload (``synthetic:zipf``): small enough to step fast, big enough
#: for a real size/cost trade-off.
DEFAULT_WORKLOAD_PARAMS: dict[str, Any] = {"n_keys": 50_000, "n_requests": 1_500_000, "rate": 500.0, "sizes": "llm"}

#: The seed design's four policies of the ``discrete12`` action space (3 memory moves x 4 policies).
DISCRETE12_POLICIES: tuple[Policy, ...] = ("allkeys-lru", "allkeys-lfu", "volatile-lru", "volatile-ttl")


def _whatif_policies() -> list[Policy]:
    """The what-if estimator's default policies (a fresh list per model)."""
    return ["allkeys-lru", "allkeys-lfu"]


QosClass = Literal["gold", "silver", "bronze"]


class WorkloadSpec(BaseModel):
    """One workload: a trace file or ``synthetic:NAME``, read once with :func:`cachetuner.traces.read_trace`,
    or a multi-tenant workload YAML (``format: tenants``, :func:`cachetuner.tenants.load_tenant_workload`).

    Arguments other than ``trace``/``name``/``weight``/``ttl`` are passed to ``read_trace`` unchanged
    (``None`` = the reader's default; a tenant workload takes none of them).
    """

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    trace: str = Field(..., min_length=1, description="path or synthetic:NAME")
    name: str | None = Field(None, description="label in info/plots; default = trace")
    format: str = "auto"
    size_model: str | None = None
    rate: float | None = Field(None, gt=0, description="requests/s for traces without timestamps")
    rate_profile: str | None = Field(
        None, description="diurnal:PERIOD_S,AMPLITUDE or bursts:PERIOD_S,DUTY[,LOW]: the load swings around `rate` "
        "or comes in bursts (cachetuner.traces.rate_profile); None = steady"
    )
    seed: int = Field(0, ge=0)
    key_draw: int = Field(
        0, ge=0, description="relabel the key ids with a permutation seeded by this (Trace.relabelled; 0 = as read): "
        "the same traffic under another draw of the key sample the curves and what-if features read"
    )
    limit: int | None = Field(None, ge=1, description="read at most this many requests")
    start: int = Field(
        0, ge=0, description="read from this request on (before `limit` counts): a window of a long trace as a trace of "
        "its own, keys and working set the window's (unlike `skip`, which keeps the whole trace's key space)"
    )
    skip: int = Field(
        0, ge=0, description="then drop this many requests from the start: the episode replays the rest (a suite's "
        "`history:` is the part dropped; the key space stays the whole trace's)"
    )
    params: dict[str, Any] = Field(default_factory=dict, description="synthetic workload parameters")
    weight: float = Field(1.0, gt=0, description="sampling weight among workloads at reset")
    ttl: str | None = Field(
        None, description="client-side TTL policy spec applied at load (cachetuner.ttl, e.g. fixed:300; QoS class "
        "factors included); None = the trace's own TTLs"
    )

    @field_validator("rate_profile")
    @classmethod
    def _rate_profile(cls, v: str | None) -> str | None:
        if v is not None:
            try:
                parse_rate_profile(v)
            except TraceError as e:
                raise ValueError(str(e)) from None
        return v

    @field_validator("ttl")
    @classmethod
    def _ttl_policy(cls, v: str | None) -> str | None:
        if v is not None:
            try:
                make_ttl_policy(v)
            except ConfigError as e:
                raise ValueError(str(e).removeprefix("ttl: ")) from None
        return v

    @property
    def label(self) -> str:
        return self.name or self.trace


class MemoryBounds(BaseModel):
    """Range of ``maxmemory`` the tuner may choose. Absolute bytes win over fractions when both are set.

    Fractions are of the workload's *working set*: the memory the simulator needs to hold every key of
    the trace (values + key names + per-entry overhead), so bounds scale with each workload.
    """

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    min_bytes: int | None = Field(None, ge=1)
    max_bytes: int | None = Field(None, ge=1)
    min_fraction: float = Field(0.02, gt=0)
    max_fraction: float = Field(1.0, gt=0)
    initial_fraction: float = Field(0.25, gt=0, description="maxmemory at reset (clipped to the bounds)")
    initial_bytes: int | None = Field(None, ge=1, description="absolute maxmemory at reset; wins over the fraction")

    @model_validator(mode="after")
    def _ordered(self) -> MemoryBounds:
        if self.min_fraction >= self.max_fraction:
            raise ValueError("min_fraction must be < max_fraction")
        if self.min_bytes is not None and self.max_bytes is not None and self.min_bytes >= self.max_bytes:
            raise ValueError("min_bytes must be < max_bytes")
        return self

    def resolve(self, working_set_bytes: int | None) -> tuple[int, int]:
        """``(lo, hi)`` in bytes; fractions need ``working_set_bytes``."""

        def pick(absolute: int | None, fraction: float, what: str) -> int:
            if absolute is not None:
                return int(absolute)
            if not working_set_bytes:
                raise ConfigError(
                    f"env.bounds.{what}_bytes: the backend has no working set to take a fraction of; set it in bytes"
                )
            return max(1, int(fraction * working_set_bytes))

        lo, hi = pick(self.min_bytes, self.min_fraction, "min"), pick(self.max_bytes, self.max_fraction, "max")
        if lo >= hi:
            raise ConfigError(f"env.bounds: resolved min {lo} B >= max {hi} B; widen the bounds")
        return lo, hi

    def initial(self, working_set_bytes: int | None, lo: int, hi: int) -> int:
        if self.initial_bytes is not None:
            value = self.initial_bytes
        elif working_set_bytes:
            value = int(self.initial_fraction * working_set_bytes)
        else:
            value = int((lo * hi) ** 0.5)
        return int(min(max(value, lo), hi))


class ActionConfig(BaseModel):
    """What the agent may change each interval.

    ``multidiscrete``: ``[memory move, policy, timeout, (samples), (lfu-log-factor), (lfu-decay-time),
    (TTL multiplier...)]``; the optional ones only when their choice lists are set. ``discrete12``: the
    seed design's ``3 memory moves {down, hold, up} x 4 policies`` (:data:`DISCRETE12_POLICIES`), timeout
    unchanged.

    ``ttl_multipliers`` adds client-side TTL dimensions (:class:`~cachetuner.ttl.knobs.ClientTTL`): the
    factor every write's TTL is multiplied by, applied by the client, never by ``CONFIG SET``. One shared
    dimension, or one per class of ``ttl_classes``. Off (empty) by default, so existing models keep
    their action and observation shapes.
    """

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    space: Literal["multidiscrete", "discrete12", "mrc-offset"] = "multidiscrete"
    memory_steps: list[float] = Field(
        default_factory=lambda: [-0.3, -0.1, 0.0, 0.1, 0.3],
        min_length=1,
        description="relative maxmemory changes (new = old * (1 + step), clipped to the bounds)",
    )
    policies: list[Policy] = Field(default_factory=redis_policies, min_length=1)
    timeouts: list[int] = Field(default_factory=lambda: [0, 30, 300], min_length=1)
    samples: list[int] | None = Field(None, description="maxmemory-samples choices; None = not tuned")
    lfu_log_factors: list[int] | None = Field(None, description="lfu-log-factor choices; None = not tuned")
    lfu_decay_times: list[int] | None = Field(None, description="lfu-decay-time choices (minutes); None = not tuned")
    discrete_step: float = Field(0.25, gt=0, lt=1, description="discrete12: relative size of a down/up move")
    mrc_offsets: list[int] = Field(
        default_factory=lambda: [-2, -1, 0, 1, 2],
        min_length=1,
        description="mrc-offset: size offsets from the MRC optimum, in steps of offset_factor (plus 'keep')",
    )
    offset_factor: float = Field(1.25, gt=1, description="mrc-offset: one offset step, as a size factor")
    ttl_multipliers: list[float] = Field(
        default_factory=list, description="client-side TTL multiplier choices (x each write's TTL); empty = no TTL dimension"
    )
    ttl_classes: list[QosClass] = Field(
        default_factory=list, description="one TTL dimension per listed QoS class; empty = one shared by every class"
    )

    @field_validator("ttl_multipliers")
    @classmethod
    def _ttl_multipliers(cls, v: list[float], info: ValidationInfo) -> list[float]:
        if any(not (0 < m <= 100) for m in v):  # also rejects NaN
            raise ValueError("every multiplier must be within (0, 100]")
        if len(set(v)) != len(v):
            raise ValueError("has duplicates")
        space = info.data.get("space", "multidiscrete")
        if v and space != "multidiscrete":
            raise ValueError(f"needs space 'multidiscrete' (got {space!r})")
        return v

    @field_validator("ttl_classes")
    @classmethod
    def _ttl_classes(cls, v: list[str], info: ValidationInfo) -> list[str]:
        if len(set(v)) != len(v):
            raise ValueError("has duplicates")
        if v and not info.data.get("ttl_multipliers"):
            raise ValueError("needs ttl_multipliers (the choices of each class's dimension)")
        return v

    @model_validator(mode="after")
    def _check(self) -> ActionConfig:
        if any(s <= -1 for s in self.memory_steps):
            raise ValueError("memory_steps must be > -1")
        if len(set(self.policies)) != len(self.policies):
            raise ValueError("policies has duplicates")
        if any(t < 0 for t in self.timeouts):
            raise ValueError("timeouts must be >= 0")
        if self.samples is not None and any(not 1 <= s <= 64 for s in self.samples):
            raise ValueError("samples must be within 1..64")
        return self

    @property
    def ttl_enabled(self) -> bool:
        """True when the action has TTL dimensions."""
        return bool(self.ttl_multipliers)


class RewardConfig(BaseModel):
    """Reward weights; see :mod:`cachetuner.env.reward` for the formulas.

    Defaults model an LLM-answer cache in *backend-call units*: a miss that reaches the model costs
    ``miss_cost = 1``; memory is priced in calls per GiB-hour. What decides the trade-off is requests
    per key per hour: the synthetic workloads have ~1000x fewer keys than a production answer cache
    at a similar rate, so the memory price is scaled up accordingly. The default (6e5) was picked by
    sweeping sizes on the synthetic workloads (50k keys, 500 req/s, ``llm`` sizes): the cost-optimal
    maxmemory lies between 10 % and 75 % of the working set on every one of them (docs/env.md).
    With list prices (~$0.016/GiB-h RAM vs ~$0.002 per call, ratio 8) the largest cache always wins.
    """

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    kind: Literal["cost", "seed"] = "cost"
    memory_cost_per_gb_hour: float = Field(6e5, ge=0, description="cost units per GiB of maxmemory per hour")
    miss_cost: float = Field(1.0, gt=0, description="cost units per backend (inference) call")
    slo_penalty: float = Field(1000.0, ge=0, description="cost units per interval whose p95 exceeds the SLO")
    switch_cost: float = Field(50.0, ge=0, description="cost units per config change")
    tenant_slo: dict[str, TenantTarget] = Field(
        default_factory=dict, description="per tenant (MetricsSnapshot.tenants name): p95 target; each breach adds "
        "weight x slo_penalty to the interval's slo cost"
    )
    stale_cost: float = Field(
        0.0, ge=0, description="cost units per stale hit (a hit written before its source's last update); 0 = off"
    )
    normalise: bool = Field(True, description="divide by miss_cost * gets of the interval (scale-free reward)")
    anchor_deviation: float = Field(
        0.0, ge=0, description="training only (actions, not step_config): subtracted from the reward, after "
        "normalising and clipping, for each interval whose action runs another config than the anchor's (mrc-offset). "
        "A prior towards the classical rule: the policy leaves it only where it expects to gain more than this"
    )
    clip: float = Field(10.0, gt=0, description="reward is clipped to [-clip, clip]")
    w_hit: float = Field(0.6, description="seed reward: weight of the hit-ratio change")
    w_latency: float = Field(0.3, description="seed reward: weight of log(p95 before / p95 now)")
    w_memory: float = Field(0.1, description="seed reward: weight of the memory-utilisation change")


class ObservationConfig(BaseModel):
    """Normalisation references of the observation vector."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    rate_reference_rps: float | None = Field(
        None, gt=0, description="request rate mapped to 0; None = the workload's mean rate"
    )
    rate_log_base: float = Field(16.0, gt=1, description="rate feature = log(rate/ref)/log(base), clipped to [-1, 1]")
    volatility_window: int = Field(5, ge=2, description="intervals in the request-rate volatility (std/mean)")
    clients_reference: float = Field(50.0, gt=0, description="clients feature = c / (c + reference)")
    mrc_features: bool = Field(
        False, description="append the predicted cost curve and the MRC optimum (needs env.mrc.enabled)"
    )
    mrc_curve_points: int = Field(8, ge=2, le=32, description="cost-curve samples in the observation")


class WhatIfConfig(BaseModel):
    """Miniature simulations on a spatially hashed key sample (SHARDS); see :mod:`cachetuner.env.whatif`."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    enabled: bool = True
    rate: float = Field(0.01, gt=0, le=1, description="share of the key space sampled")
    min_keys: int = Field(500, ge=0, description="raise the rate so that about this many keys are sampled")
    modulus: int = Field(1 << 24, ge=2, description="P in 'keep key iff hash(key) mod P < rate * P'")
    sizes: list[float] = Field(default_factory=lambda: [0.5, 0.75, 1.25, 1.5, 2.0], description="x current maxmemory")
    policies: list[Policy] = Field(default_factory=_whatif_policies)
    mirror: bool = Field(True, description="also simulate the current config (x1.0) as a bias reference")
    adjust: bool = Field(True, description="SHARDS-adj: correct for over/under-sampled references")


class EnvConfig(BaseModel):
    """Everything that defines a :class:`~cachetuner.env.cache_env.CacheTuningEnv`."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    workloads: list[WorkloadSpec] = Field(
        default_factory=lambda: [WorkloadSpec(trace="synthetic:zipf", params=dict(DEFAULT_WORKLOAD_PARAMS))],
        min_length=1,
        description="default: Zipf(1.0), 50k keys, 500 req/s, llm sizes, 3000 s",
    )
    interval_s: float = Field(60.0, gt=0, description="trace seconds per step (one tuning interval)")
    episode_intervals: int | None = Field(
        30, ge=1, description="steps per episode; None = the whole trace from its beginning"
    )
    warmup_intervals: int = Field(5, ge=0, description="intervals simulated before the first observation")
    rate_factor: tuple[float, float] | None = Field(
        None, description="training-time domain randomisation (simulator only): each episode replays its trace "
        "at a log-uniform factor in [low, high] times its request rate; None = the trace's own rate"
    )
    slo_p95_ms: float = Field(
        1500.0, gt=0, description="p95 latency SLO (observation scale, SLO penalty); misses are ~1 s model calls"
    )
    initial_config: RedisConfig = Field(
        default_factory=RedisConfig, description="config at reset; maxmemory comes from bounds.initial_*"
    )
    client_ttl: ClientTTL = Field(
        default_factory=ClientTTL, description="client-side TTL multipliers per QoS class at reset (held by static "
        "baselines; the TTL action changes them)"
    )
    bounds: MemoryBounds = Field(default_factory=MemoryBounds)
    actions: ActionConfig = Field(default_factory=ActionConfig)
    reward: RewardConfig = Field(default_factory=RewardConfig)
    observation: ObservationConfig = Field(default_factory=ObservationConfig)
    whatif: WhatIfConfig = Field(default_factory=WhatIfConfig)
    mrc: MRCConfig = Field(default_factory=MRCConfig, description="full-range miss-ratio curves (cachetuner.mrc)")
    prices: PricesConfig | None = Field(
        None, description="prices in dollars (presets list/scaled/cheap-backend/budget); set, they override reward's"
    )
    sim: SimParams = Field(
        default_factory=SimParams,
        description="simulator world model; its cost section is overridden by `reward` (one source of truth)",
    )
    max_episode_steps: int | None = Field(
        None, ge=1, description="truncate after this many steps even if the window goes on; None = at the window end"
    )

    @model_validator(mode="after")
    def _apply_prices(self) -> EnvConfig:
        """``prices`` is the one source of truth when given: it sets the reward's memory and miss prices,
        and the budget regime caps ``bounds.max_bytes``."""
        if self.prices is not None:
            object.__setattr__(self, "reward", self.reward.model_copy(update=self.prices.resolve_all()))
            b = self.bounds
            if self.prices.budget_bytes is not None:
                lo = b.min_bytes if b.min_bytes is not None and b.min_bytes < self.prices.budget_bytes else None
                object.__setattr__(
                    self, "bounds", b.model_copy(update={"max_bytes": self.prices.budget_bytes, "min_bytes": lo})
                )
            elif self.prices.budget_fraction is not None:
                # a share of each workload's working set, so one suite entry fits traces of any size; the
                # lower bound stays below it (absolute bounds are checked once the working set is known)
                frac = self.prices.budget_fraction
                object.__setattr__(self, "bounds", b.model_copy(update={
                    "max_bytes": None, "max_fraction": frac, "min_fraction": min(b.min_fraction, frac / 2)}))
        if self.rate_factor is not None and not 0 < self.rate_factor[0] <= self.rate_factor[1]:
            raise ValueError("rate_factor must be [low, high] with 0 < low <= high")
        if self.observation.mrc_features and not self.mrc.enabled:
            raise ValueError("observation.mrc_features needs mrc.enabled")
        if self.actions.space == "mrc-offset" and not self.mrc.enabled:
            raise ValueError("actions.space 'mrc-offset' needs mrc.enabled")
        return self

    def with_prices(self, prices: PricesConfig) -> EnvConfig:
        """This config with its ``prices:`` replaced and validated again, so the reward's prices and a budget's bounds
        follow them (``evaluate --prices``, a suite's price regime, the daemon's ``policy.prices``). Only
        :class:`PricesConfig`'s own fields: a suite's regime also carries its label."""
        data = self.model_dump()
        data["prices"] = prices.model_dump(include=set(PricesConfig.model_fields))
        return EnvConfig.model_validate(data)

    @property
    def client_ttl_used(self) -> bool:
        """True when client-side TTL multipliers can differ from 1 (an action dimension or a static setting)."""
        return self.actions.ttl_enabled or not self.client_ttl.identity

    @classmethod
    def from_yaml(cls, path: str | Path, key: str | None = None) -> EnvConfig:
        """Load from YAML (optionally the ``key`` section); bad fields raise a one-line :class:`ConfigError`."""
        return load_model(cls, path, key=key)

    @staticmethod
    def gib(n_bytes: int) -> float:
        return n_bytes / _GIB
