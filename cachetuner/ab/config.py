"""Typed configuration of an A/B experiment (``experiments/ab*.yaml``).

An experiment names two arms, the workload both arms see (an ``env:`` section, inline or taken
from another experiment YAML), how long it runs (a fixed horizon declared up front), the metric the
verdict is about, and where it is tracked. ``extra="forbid"`` everywhere: a misspelt field fails
with one line naming the file and the field.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from cachetuner.config import RedisConfig
from cachetuner.errors import ConfigError
from cachetuner.ttl import make_ttl_policy
from cachetuner.ttl.keyspace import FreshnessConfig
from cachetuner.yamlconfig import field_error, load_model, validate, validate_options


class ArmConfig(BaseModel):
    """One arm: exactly one of ``tuner`` (a registered baseline name), ``model`` (a trained PPO
    model .zip) or ``config`` (a fixed Redis configuration, e.g. what production runs today)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    tuner: str | None = Field(None, description="registered tuner: static-default, best-static, hill-climb, optuna, ...")
    model: str | None = Field(None, description="PPO model .zip (cachetuner train); the arm runs tuner 'ppo'")
    train_config: str | None = Field(
        None, description="experiment YAML to train `model` with when the file is missing (cachetuner.agent)"
    )
    config: RedisConfig | None = Field(None, description="fixed configuration held for the whole run")
    params: dict[str, Any] = Field(default_factory=dict, description="`baselines:` settings passed to the tuner")
    ttl: str | None = Field(
        None, description="client-side TTL policy (cachetuner.ttl spec: trace, fixed:300, rules, multi-factor, hotness)"
    )

    @model_validator(mode="after")
    def _one_kind(self) -> ArmConfig:
        given = [k for k in ("tuner", "model", "config") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(f"set exactly one of tuner / model / config (got {', '.join(given) or 'none'})")
        if self.train_config is not None and self.model is None:
            raise ValueError("train_config needs model")
        if self.tuner == "ppo":
            raise ValueError("use `model: PATH` for a PPO policy")
        return self

    @property
    def kind(self) -> Literal["tuner", "model", "config"]:
        return "tuner" if self.tuner is not None else "model" if self.model is not None else "config"

    def describe(self) -> str:
        """Short identity used in tags, plots and reports (``static-default``, ``ppo:PATH``, ``config:...``)."""
        ttl = f" ttl={self.ttl}" if self.ttl is not None else ""
        if self.tuner is not None:
            return self.tuner + ttl
        if self.model is not None:
            return f"ppo:{self.model}{ttl}"
        c = self.config
        assert c is not None
        return f"config:{c.maxmemory_policy}@{c.maxmemory}B,timeout={c.timeout}{ttl}"

    def identity(self) -> str:
        """What ``ab.treatment_model`` / ``ab.control`` tags hold: the model path, the tuner name, or
        ``config:<policy>@<bytes>``."""
        return self.model if self.model is not None else self.describe()

    def model_sha256(self) -> str | None:
        """First 12 hex digits of the model file's SHA-256 (tells retrained models at one path apart)."""
        if self.model is None or not Path(self.model).is_file():
            return None
        return hashlib.sha256(Path(self.model).read_bytes()).hexdigest()[:12]


class StatsConfig(BaseModel):
    """How the verdict is reached (see :mod:`cachetuner.ab.stats`)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    method: Literal["fixed-horizon", "msprt"] = Field(
        "fixed-horizon",
        description="fixed-horizon: block-bootstrap CI, verdict only at the horizon; msprt: always-valid CI, may stop early",
    )
    alpha: float = Field(0.05, gt=0, lt=0.5, description="1 - confidence level")
    n_resamples: int = Field(2000, ge=100, description="bootstrap resamples")
    block_len: int | None = Field(None, ge=1, description="intervals per bootstrap block; None = automatic")
    seed: int = Field(0, ge=0, description="seeds the bootstrap (reproducible CIs)")


class ShadowConfig(BaseModel):
    """Live shadow mode: the treatment decides without applying; its effect is estimated by mini
    simulations on a hash-sampled key stream (see :mod:`cachetuner.ab.shadow`). TTL arms: the
    control serves under its TTL policy and both policies run on the minis
    (:mod:`cachetuner.ab.ttl_shadow`)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    control_backend: Literal["live", "sim"] = Field(
        "live", description="live: the real Redis; sim: the simulator (validates the estimator against sim mode)"
    )
    sample_rate: float = Field(0.05, gt=0, le=1, description="share of the key space the mini simulations see")
    min_keys: int = Field(2000, ge=0, description="raise the rate so that about this many keys are sampled (sim)")
    modulus: int = Field(1 << 24, ge=2, description="P in 'keep key iff splitmix64(key) mod P < rate * P'")
    backend_options: dict[str, Any] = Field(
        default_factory=dict, description="keyword arguments of LiveRedisBackend (redis_url, prometheus_url, ...)"
    )
    interval_s: float | None = Field(None, gt=0, description="live: seconds per interval; None = env.interval_s")
    stack_dir: str | None = Field(
        None, description="live TTL A/B: the `cachetuner stack up` folder whose Redis the control's replay serves into"
    )
    speedup: float = Field(
        20.0, gt=0, description="live TTL A/B: replay the workload this many times faster than its clock (TTLs too)"
    )


class TrackingConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    enabled: bool = True
    tracking_uri: str | None = Field(None, description="None = MLFLOW_TRACKING_URI or sqlite:///mlflow.db")
    experiment: str = "cachetuner-ab"


class PromotionConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    daemon_config: str | None = Field(None, description="daemon YAML `cachetuner ab promote` writes the treatment into")
    log: str = Field("runs/ab/promotions.jsonl", description="one JSON line per promotion decision")


class ABConfig(BaseModel):
    """Everything ``cachetuner ab --config`` reads."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    name: str = Field("ab", pattern=r"^[A-Za-z0-9_.-]+$")
    mode: Literal["sim", "shadow"] = "sim"
    seed: int = Field(0, ge=0, description="workload window and simulator seed, identical for both arms")
    horizon_intervals: int = Field(..., ge=2, description="intervals to observe before a verdict (declared up front)")
    primary_metric: Literal["cost", "hit_ratio", "byte_hit_ratio", "p95_ms"] = "cost"
    control: ArmConfig
    treatment: ArmConfig
    env: dict[str, Any] | None = Field(None, description="inline env section (cachetuner.env.EnvConfig)")
    env_config: str | None = Field(None, description="experiment YAML whose env section both arms run on")
    env_section: str = "env"
    workloads: list[dict[str, Any]] | None = Field(
        None, description="replace the env's workloads (WorkloadSpec entries), e.g. a held-out trace"
    )
    workload: str | None = Field(None, description="workload label to run on (default: the first)")
    stats: StatsConfig = Field(default_factory=StatsConfig)
    shadow: ShadowConfig = Field(default_factory=ShadowConfig)
    tracking: TrackingConfig = Field(default_factory=TrackingConfig)
    promotion: PromotionConfig = Field(default_factory=PromotionConfig)
    freshness: FreshnessConfig = Field(
        default_factory=FreshnessConfig, description="TTL A/B: per-group source updates of traces without events"
    )
    tenants: str | None = Field(None, description="TTL A/B: a tenant workload YAML replacing the env's workloads")
    warmup_intervals: int = Field(5, ge=0, description="TTL A/B: intervals replayed before the first recorded one")
    memory_share: float | None = Field(
        None, gt=0, description="TTL A/B: both arms' maxmemory = this share of the workload's working set"
    )

    @model_validator(mode="after")
    def _env_source(self) -> ABConfig:
        if self.env is not None and self.env_config is not None:
            raise ValueError("set env or env_config, not both")
        return self

    @property
    def is_ttl(self) -> bool:
        """Arms that set ``ttl``: a TTL A/B (same configuration, different client-side TTL policies)."""
        return self.control.ttl is not None or self.treatment.ttl is not None


def load_ab_config(path: str | Path) -> ABConfig:
    """Read an A/B YAML; relative paths inside it (env_config, models, train configs) are resolved
    against the current directory, like every other experiment file."""
    cfg = load_model(ABConfig, path)
    check_ttl_arms(cfg, str(path))
    return cfg


def check_ttl_arms(cfg: ABConfig, source: str = "<ab config>") -> None:
    """A TTL A/B (an arm sets ``ttl``): both arms hold the same fixed ``config:`` and valid TTL specs;
    live shadow mode samples keys modulo 2^24 as the replayer does. One-line :class:`ConfigError`
    naming the file and the field otherwise."""
    if not cfg.is_ttl:
        return
    c, t = cfg.control, cfg.treatment
    for role, arm in (("control", c), ("treatment", t)):
        if arm.config is None:
            raise ConfigError(field_error(source, role, "a TTL A/B holds one fixed `config:` in both arms (arms differ only in ttl)"))
    if c.config != t.config:
        raise ConfigError(field_error(source, "treatment.config", "must equal control.config (a TTL A/B compares TTLs at one configuration)"))
    sh = cfg.shadow
    if cfg.mode == "shadow" and sh.control_backend == "live" and sh.modulus != 1 << 24:
        raise ConfigError(field_error(source, "shadow.modulus", "the live replayer samples modulo 2^24 (leave the default)"))
    for role, arm in (("control", c), ("treatment", t)):
        if arm.ttl is not None:
            make_ttl_policy(arm.ttl, field=f"{source}: field '{role}.ttl'")


def resolve_env_config(cfg: ABConfig, source: str = "<ab config>") -> Any:
    """The :class:`~cachetuner.env.config.EnvConfig` both arms run on, with the horizon applied.

    The episode is set to exactly ``horizon_intervals`` steps so that a trace long enough for the
    horizon is never cut short; shorter traces end earlier and the verdict is then inconclusive.
    """
    from cachetuner.env.config import EnvConfig

    if cfg.env_config is not None:
        env = EnvConfig.from_yaml(cfg.env_config, key=cfg.env_section)
    elif cfg.env is not None:
        env = validate(EnvConfig, cfg.env, source, prefix="env.")
    else:
        env = EnvConfig()
    if cfg.workloads is not None:
        from cachetuner.env.config import WorkloadSpec

        specs = [validate(WorkloadSpec, w, source, prefix=f"workloads.{i}.") for i, w in enumerate(cfg.workloads)]
        env = env.model_copy(update={"workloads": specs})
    return env.model_copy(update={"episode_intervals": cfg.horizon_intervals, "max_episode_steps": None})


def override_workload(env: Any, **trace_options: Any) -> Any:
    """Replace the env's workloads by one trace given on the command line (``--trace`` & co)."""
    from cachetuner.env.config import WorkloadSpec

    opts = {k: v for k, v in trace_options.items() if v is not None}
    if "trace" not in opts:
        return env
    spec = validate_options(WorkloadSpec, opts)  # a bad value names its option
    return env.model_copy(update={"workloads": [spec]})
