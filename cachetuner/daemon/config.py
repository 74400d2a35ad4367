"""Typed configuration of the tuning daemon (``experiments/daemon*.yaml``).

One model per concern (bounds, SLO, guardrails, rollout, policy, HTTP, tracking), all
``extra="forbid"``: a misspelt field fails at load with one line naming the file and the field,
before the daemon touches any Redis.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from cachetuner.config import Policy, TenantTarget, redis_policies
from cachetuner.env.config import WorkloadSpec
from cachetuner.env.prices import PricesConfig
from cachetuner.mrc.rule_settings import ReferenceInterval
from cachetuner.yamlconfig import load_model

#: Guard names in the default order: cheap vetoes first, clamps next, then time and SLO vetoes.
DEFAULT_GUARDS: tuple[str, ...] = ("stale", "bounds", "max_change", "cooldown", "slo")


class Bounds(BaseModel):
    """The only configurations the daemon may ever apply to a target.

    Checked twice: by the ``bounds`` guard (which may clamp ``maxmemory``) and again, on the exact
    config, immediately before ``CONFIG SET`` (:func:`cachetuner.daemon.guardrails.bounds_violations`).
    """

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    maxmemory_min: int = Field(..., ge=1, description="bytes; 0 (unlimited) is never allowed")
    maxmemory_max: int = Field(..., ge=1, description="bytes")
    policies: list[Policy] = Field(default_factory=redis_policies, min_length=1)
    timeouts: list[int] = Field(default_factory=lambda: [0, 30, 300], min_length=1, description="allowed `timeout` values (s)")
    samples: list[int] | None = Field(None, description="allowed maxmemory-samples; None = any value 1..64")
    clamp_maxmemory: bool = Field(True, description="bounds guard clamps maxmemory into range instead of vetoing")

    @model_validator(mode="after")
    def _check(self) -> Bounds:
        if self.maxmemory_min > self.maxmemory_max:
            raise ValueError("maxmemory_min must be <= maxmemory_max")
        if "exact-lru" in self.policies:
            raise ValueError("exact-lru exists only in the simulator")
        if any(t < 0 for t in self.timeouts):
            raise ValueError("timeouts must be >= 0")
        return self


class SLO(BaseModel):
    """Service-level objective evaluated on every fresh snapshot; ``None`` disables a term."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    p95_latency_ms: float | None = Field(None, gt=0, description="client-side p95 latency ceiling")
    min_hit_ratio: float | None = Field(None, ge=0, le=1)
    max_evictions_per_s: float | None = Field(None, ge=0)
    min_gets: int = Field(20, ge=0, description="hit ratio is only judged on intervals with at least this many gets")
    tenants: dict[str, TenantTarget] = Field(
        default_factory=dict, description="per-tenant p95 ceilings (the replayer's tenant label, read back with PromQL)"
    )


class RollbackConfig(BaseModel):
    """Return to the last known-good config when the SLO breaks shortly after a change."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    enabled: bool = True
    window_intervals: int = Field(
        2, ge=1, description="a breach within this many fresh intervals after a change triggers the rollback"
    )
    known_good_after: int = Field(
        2, ge=1, description="consecutive SLO-passing fresh intervals before a config becomes the known-good one"
    )


class TargetConfig(BaseModel):
    """One Redis instance (tenant / shard) with its own metrics source, bounds and SLO."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    name: str = Field(..., pattern=r"^[A-Za-z0-9_.-]+$")
    backend: Literal["live", "sim"] = "live"
    redis_url: str | None = Field(None, description="redis://[user@]host:port/db; the password comes from env/file")
    prometheus_url: str | None = None
    username: str | None = Field(None, description="ACL user (overrides the URL's user)")
    password_env: str | None = Field("CACHETUNER_REDIS_PASSWORD", description="environment variable holding the password")
    password_file: str | None = Field(None, description="file holding the password (wins over password_env)")
    bounds: Bounds
    slo: SLO = Field(default_factory=SLO)
    rollback: RollbackConfig = Field(default_factory=RollbackConfig)
    guards: list[str] = Field(default_factory=lambda: list(DEFAULT_GUARDS), description="guard names, in order")
    max_relative_change: float = Field(0.5, gt=0, description="largest |new/old - 1| of maxmemory per change")
    cooldown_s: float = Field(0.0, ge=0, description="minimum seconds between two changes (rollbacks exempt)")
    backend_options: dict[str, Any] = Field(
        default_factory=dict, description="extra keyword arguments of the backend (live: LiveRedisBackend; sim: SimBackend)"
    )

    @model_validator(mode="after")
    def _check(self) -> TargetConfig:
        if self.backend == "live" and (not self.redis_url or not self.prometheus_url):
            raise ValueError("live targets need redis_url and prometheus_url")
        # redis-py reads a URL without a scheme as a path on localhost: "notaurl" would connect to 127.0.0.1
        if self.redis_url and not self.redis_url.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError(f"redis_url {self.redis_url!r}: expected redis://[user@]host:port/db (or rediss://, unix://)")
        if self.prometheus_url and not self.prometheus_url.startswith(("http://", "https://")):
            raise ValueError(f"prometheus_url {self.prometheus_url!r}: expected http://host:port")
        return self


class PolicyConfig(BaseModel):
    """Which controller decides (``policy:`` in the daemon YAML): any deployable registered controller.

    The default is ``ppo`` with the shipped general policy (``model: default``), since 2026-12-06: by a rule written
    before 252 fresh held-out cells ran (docs/daemon.md, "Pre-registered: the daemon's default controller") it was
    cheaper than ``mrc`` on their mean (paired -0.08 pp, 95 % CI -0.15 to -0.01), costlier than static-default in
    no more cells, and no worse in its worst cell. Until then the default was ``mrc``, which needs no model and
    makes the same decision in most cells (the policy offsets its anchor, the same rule). ``hold`` observes only.
    """

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    name: str = "ppo"
    model: str | None = Field(
        None, description="ppo: model .zip path, default (the shipped policy; what an omitted model means) or MLflow "
        "URI runs:/<id>/model, models:/<name>/<v>"
    )
    prices: PricesConfig | None = Field(
        None, description="the prices the decider weighs, in dollars (a preset and/or explicit fields, as an env's "
        "`prices:`); they replace those of the decider's env config (for ppo the model's training config, whose "
        "evaluation env has `scaled`; for the others policy.env_config's, else the reward's own units)")
    env_config: str | None = Field(
        None, description="experiment YAML whose `env:` section the policy was trained with (observation/decoder)"
    )
    env_section: str = "env"
    reference_interval_s: ReferenceInterval = Field(
        "auto", description="count the decider's interval-counted settings in wall-clock time at this reference: "
        "sets reference_interval_s of its rule (mrc's, or the policy's anchor) and of its curves (docs/mrc.md). "
        "auto: 10 when the decider decides every 57 s or more (the daemon's interval_s on a live target, the env's on "
        "a sim one), per interval below that; adopted by rule five, written before six fresh interval audits at 60 "
        "and 120 s ran, and kept at 300 s by rule six (docs/control.md); at 30 s it swung cells both ways (rule "
        "four). A number: that reference at any interval; null = per interval. It replaces the decider's configs' own "
        "reference_interval_s (the rule's, the anchor's, the curves')")
    deterministic: bool = True
    seed: int = Field(0, ge=0)
    params: dict[str, Any] = Field(default_factory=dict, description="keyword arguments of the policy/tuner")
    history: WorkloadSpec | None = Field(
        None, description="mrc-history only: a trace of the target's past traffic, with the key ids of its sampled "
        "stream (the replayer's trace ids), read like an env workload. Before the first decision the curves watch it, "
        "and the first config is what `cachetuner recommend` computes on it at the policy env's prices within the "
        "target's bounds (unless params.config names one); README 'Against an operator with history'")
    checkpoint_intervals: int | None = Field(
        6, ge=1, description="mrc, mrc-history and ppo (its anchor): save the curves and the rule's state to "
        "state_dir every this many decisions and at shutdown, and resume from them after a restart with the same "
        "policy, settings and bounds instead of starting cold (cachetuner.daemon.checkpoint); null = off")
    history_sample_rate: float = Field(
        0.01, gt=0, le=1, description="the hash-sampling rate the curves watch the history at: the target's sampled "
        "stream's (the replayer's --sample-rate, 1 % by default; 1 for a simulated target). A live stream coarser than "
        "this rebuilds the miniature caches once and loses what they watched")

    @model_validator(mode="after")
    def _check(self) -> PolicyConfig:
        if self.prices is not None and self.prices.budget_fraction is not None:
            raise ValueError("prices.budget_fraction: a daemon's target has no known working set; give budget_bytes "
                             "(or cap the target's bounds.maxmemory_max)")
        return self


class HotnessConfig(BaseModel):
    """Hotness features (predicted hot-set bytes and churn) appended to an env policy's observation,
    for PPO models trained with them. Triton first; on any failure the in-process model answers and a
    circuit breaker keeps Triton out of the loop for ``retry_after_s`` (``FallbackPredictor``)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    enabled: bool = False
    model_path: str | None = Field(None, description="TorchScript model.pt (the in-process fallback, same weights)")
    triton_url: str | None = Field(None, description="host:port of Triton; None = in-process only")
    protocol: Literal["grpc", "http"] = "grpc"
    timeout_s: float = Field(0.5, gt=0, description="per Triton request; keep well below interval_s")
    retry_after_s: float = Field(30.0, gt=0)
    options: dict[str, Any] = Field(default_factory=dict, description="HotnessFeatures kwargs (max_keys, top_k_share, max_ratio)")

    @model_validator(mode="after")
    def _check(self) -> HotnessConfig:
        if self.enabled and not self.model_path:
            raise ValueError("hotness.enabled needs model_path (the in-process fallback model)")
        return self


class HttpConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    host: str = Field("127.0.0.1", description="loopback by default; expose deliberately")
    port: int = Field(9464, ge=0, le=65535, description="0 = any free port (written to <state_dir>/daemon.addr)")
    enabled: bool = True
    stack_dir: str | None = Field(
        None, description="a local stack's folder (`cachetuner stack up --dir`): register /metrics with its Prometheus "
        "as job cachetuner-daemon while the daemon runs, as deploy/prometheus.yml scrapes it in production"
    )


class TrackingConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    enabled: bool = True
    tracking_uri: str | None = None
    experiment: str = "cachetuner-daemon"


class RolloutConfig(BaseModel):
    """``independent``: every target runs the policy. ``staged``: only ``canary`` does; its config is
    promoted to the other targets after ``promote_after`` consecutive SLO-passing intervals."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    mode: Literal["independent", "staged"] = "independent"
    canary: str | None = None
    promote_after: int = Field(3, ge=1)


class BackoffConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    initial_s: float = Field(1.0, gt=0)
    max_s: float = Field(60.0, gt=0)
    factor: float = Field(2.0, ge=1)

    @model_validator(mode="after")
    def _check(self) -> BackoffConfig:
        if self.max_s < self.initial_s:
            raise ValueError(f"max_s ({self.max_s:g}) must be at least initial_s ({self.initial_s:g})")
        return self


class DaemonConfig(BaseModel):
    """Everything ``cachetuner daemon --config`` reads."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    interval_s: float = Field(10.0, gt=0, description="seconds between decisions")
    dry_run: bool = Field(False, description="decide, guard and log, never CONFIG SET")
    state_dir: str = Field("runs/daemon", description="state.json, audit.jsonl, daemon.addr")
    persist: Literal["none", "rewrite"] = Field(
        "none", description="rewrite: CONFIG REWRITE once a config has proven known-good (needs +config|rewrite)"
    )
    max_iterations: int | None = Field(None, ge=1, description="stop after this many loops (tests, smoke runs)")
    policy: PolicyConfig = Field(default_factory=PolicyConfig)
    hotness: HotnessConfig = Field(default_factory=HotnessConfig)
    http: HttpConfig = Field(default_factory=HttpConfig)
    tracking: TrackingConfig = Field(default_factory=TrackingConfig)
    rollout: RolloutConfig = Field(default_factory=RolloutConfig)
    backoff: BackoffConfig = Field(default_factory=BackoffConfig)
    targets: list[TargetConfig] = Field(..., min_length=1)

    @model_validator(mode="after")
    def _check(self) -> DaemonConfig:
        names = [t.name for t in self.targets]
        if len(set(names)) != len(names):
            raise ValueError(f"target names must be unique, got {names}")
        if self.rollout.mode == "staged":
            if self.rollout.canary not in names:
                raise ValueError(f"rollout.canary must name a target ({', '.join(names)})")
            if len(names) < 2:
                raise ValueError("staged rollout needs at least two targets")
        return self

    @property
    def state_path(self) -> Path:
        return Path(self.state_dir) / "state.json"

    @property
    def audit_path(self) -> Path:
        return Path(self.state_dir) / "audit.jsonl"

    @property
    def addr_path(self) -> Path:
        return Path(self.state_dir) / "daemon.addr"


def load_daemon_config(path: str | Path) -> DaemonConfig:
    """Read a daemon YAML; errors are one line naming the file and the field."""
    return load_model(DaemonConfig, path)
