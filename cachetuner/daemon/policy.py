"""The daemon's decider: one registered controller per target, fed from a mirror env.

The daemon must stay the only thing that touches Redis, yet a controller must decide from exactly the
context it would get in evaluation (same observation pipeline for a trained policy, same miss-ratio
curves for ``mrc``). So each target gets its own :class:`~cachetuner.env.CacheTuningEnv` over a
:class:`MirrorBackend`: a backend that *replays* what the daemon observed (the real snapshot, the real
config, the real sampled request stream) and whose ``apply`` changes nothing. Every interval the
daemon pushes the fresh snapshot, steps the mirror env with the config in force, builds the
:class:`~cachetuner.control.DecisionContext` from it and asks the controller; the proposal then goes
through the guardrails. Hindsight controllers (they need the future) are refused.

Approximation: the env's maxmemory bounds (the observation's ``maxmemory_position``, the action
decoder's clipping, the curves' span) are the target's daemon bounds, not the training workload's
working-set fractions; train with absolute ``env.bounds`` equal to the deployment bounds for an exact
match.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
from pydantic import ValidationError

from cachetuner.backend import ApplyResult, BackendFacts, CacheBackend, RequestSample
from cachetuner.config import RedisConfig
from cachetuner.control import (
    Controller,
    ControlSettings,
    controller_names,
    is_hindsight,
    make_controller,
    watches_history,
)
from cachetuner.control.learned import LearnedPolicy, load_policy
from cachetuner.control.mrc import MRCController
from cachetuner.daemon.checkpoint import Checkpoint, checkpoint_for
from cachetuner.daemon.config import DaemonConfig, HotnessConfig, TargetConfig
from cachetuner.daemon.records import config_dict
from cachetuner.daemon.targets import decision_interval_s
from cachetuner.env import CacheTuningEnv, EnvConfig
from cachetuner.env.prices import PricesConfig
from cachetuner.errors import CacheTunerError, ConfigError
from cachetuner.evaluation.episode import context_from_env
from cachetuner.metrics import MetricsSnapshot
from cachetuner.mrc.rule_settings import (
    AUTO_WALL_TIME_FROM_S,
    MEASURED_INTERVAL_S,
    MRCControlSettings,
    reference_in_force,
    resolve_reference,
    same_interval,
)
from cachetuner.traces.trace import Trace
from cachetuner.yamlconfig import validate

log = logging.getLogger("cachetuner.daemon")


@dataclass
class PolicyInput:
    """What the daemon hands its decider: one fresh interval of one target."""

    target: str
    snapshot: MetricsSnapshot
    current: RedisConfig


@runtime_checkable
class Policy(Protocol):
    """The runner's view of a decider (see :class:`ControllerPolicy`)."""

    name: str

    def decide(self, obs: PolicyInput) -> RedisConfig: ...

    def close(self) -> None: ...


@runtime_checkable
class CostEstimator(Protocol):
    """A decider that can price configs on its curves (optional; the daemon's cost telemetry, daemon/costs.py)."""

    def predicted_costs(self, configs: dict[str, RedisConfig]) -> dict[str, float]: ...


#: ``backend()`` returns the target's backend once it exists (None while Redis is unreachable).
BackendRef = Callable[[], "CacheBackend | None"]


class MirrorBackend:
    """A read-only CacheBackend view of what the daemon observed on the real target."""

    def __init__(self, real: BackendRef, bounds: tuple[int, int], interval_s: float) -> None:
        self.real = real
        self.bounds = bounds
        self.interval_s = interval_s
        self._config = RedisConfig()
        self._snap = MetricsSnapshot(interval_s=interval_s)

    def push(self, snap: MetricsSnapshot, current: RedisConfig) -> None:
        self._snap, self._config = snap, current

    @property
    def config(self) -> RedisConfig:
        return self._config

    def reset(self, *, seed: int | None = None) -> MetricsSnapshot:
        return self._snap

    def apply(self, config: RedisConfig) -> ApplyResult:
        """Never touches the target: the config in force stays what the daemon observed."""
        return ApplyResult(ok=True, requested=config, applied=self._config)

    def step(self) -> MetricsSnapshot:
        return self._snap

    def recent_requests(self) -> RequestSample:
        real = self.real()
        if real is None:
            return RequestSample()
        try:
            return real.recent_requests()
        except Exception:  # noqa: BLE001 (no sample: the estimates simply do not move)
            return RequestSample()

    @property
    def exhausted(self) -> bool:
        return False

    def facts(self) -> BackendFacts:
        """The target's daemon bounds (see the module docstring); nothing else is known ahead of time."""
        return BackendFacts(bounds=self.bounds)

    def close(self) -> None:
        pass


def policy_names() -> list[str]:
    """Controllers the daemon can run (every registered one that does not need the future)."""
    return controller_names(deployable=True)


class ControllerPolicy:
    """A registered controller over a mirror env of one target."""

    def __init__(
        self,
        name: str,
        controller: Controller,
        env_cfg: EnvConfig,
        target: TargetConfig,
        backend: BackendRef,
        seed: int,
        interval_s: float,
        hotness: HotnessConfig | None = None,
        history: Trace | None = None,
        history_rate: float = 1.0,
        checkpoint: Checkpoint | None = None,
    ) -> None:
        self.name = name
        self.controller = controller
        #: past traffic the curves watch before the first decision (``policy.history``), at the stream's rate
        self.history, self.history_rate = history, history_rate
        env_cfg = env_cfg.model_copy(update={"warmup_intervals": 0, "episode_intervals": None})
        self.mirror = MirrorBackend(backend, (target.bounds.maxmemory_min, target.bounds.maxmemory_max), interval_s)
        self.env = CacheTuningEnv(env_cfg, backend=self.mirror)  # type: ignore[arg-type]
        self.hot: Any = None
        if hotness is not None and hotness.enabled:
            from cachetuner.hotness_model.features import HotnessFeatures

            self.hot = HotnessFeatures(self.env, make_hotness_predictor(hotness), **hotness.options)
        self.seed = seed
        #: the mrc family's state across restarts (cachetuner.daemon.checkpoint); None = start cold every time
        self.checkpoint = checkpoint
        self._decisions = 0
        self._started = False
        #: GETs of the interval the decider saw last (what predicted_costs prices; its length is the env's priced
        #: interval, price_intervals_as), and the bytes in use when
        #: the cache in force did not evict in it (still filling, or a fill cap below the size the rule chose), else None
        self._gets = 0.0
        self.env.price_intervals_as(float(interval_s))  # until a snapshot says how long its interval was
        self._filling: float | None = None
        #: extra figures of the last decision for the audit log (hotness features and their backend)
        self.last_info: dict[str, Any] = {}
        self._curves_ready = False

    def decide(self, obs: PolicyInput) -> RedisConfig:
        self.mirror.push(obs.snapshot, obs.current)
        snap = obs.snapshot
        self._gets = float(snap.gets)
        if snap.interval_s > 0:
            # the decider weighs this interval's misses against memory held for this interval, not the env config's
            self.env.price_intervals_as(float(snap.interval_s))
        self._filling = float(snap.used_memory) if snap.evictions == 0 and 0 < snap.used_memory < snap.maxmemory else None
        if not self._started:
            outer = self.hot if self.hot is not None else self.env
            o, info = outer.reset(seed=self.seed)
            saved = self.checkpoint.load() if self.checkpoint is not None else None
            if saved is not None and "anchor" in saved:  # ppo restarted: its anchor goes on where it was
                self.controller.reset(context_from_env(self.env, o, info))
                self.env.resume_anchor(saved["estimator"], saved["anchor"])
                log.info("%s: resumed the curves and the anchor's state from %s", self.name, self.checkpoint.path)  # type: ignore[union-attr]
            elif saved is not None:  # a restart: the curves and the rule go on where they were
                self.env.mrc, self.controller = saved["estimator"], saved["controller"]
                log.info("%s: resumed the curves and the rule's state from %s", self.name, self.checkpoint.path)  # type: ignore[union-attr]
            else:
                if self.history is not None and self.env.mrc is not None:
                    n = self.env.mrc.watch(self.history, self.mirror.interval_s, rate=self.history_rate)
                    log.info("%s: the curves watched %d intervals of policy.history", self.name, n)
                self.controller.reset(context_from_env(self.env, o, info))
            self.history = None  # watched (or superseded by the checkpoint): not kept for the daemon's lifetime
            self._started = True
        o, _r, _term, _trunc, info = self.env.step_config(obs.current)
        if self.hot is not None:
            # HotnessFeatures extends observations in step(); the daemon steps by config, so the
            # wrapper's extension is applied to the step_config result here.
            o = self.hot._extend(o, info)
            self.last_info = {"hotness": {**info.get("hotness", {}), "backend": self.hot.predictor.backend}}
        before = self._handed()
        out = self.controller.decide(context_from_env(self.env, o, info))
        self._note_handed(before, info)
        self._note_curves()
        self._decisions += 1
        if self.checkpoint is not None and self._decisions % self.checkpoint.every == 0:
            self._save()
        return out

    def predicted_costs(self, configs: dict[str, RedisConfig]) -> dict[str, float]:
        """Each config's cost over the interval just decided on, priced on the curves (GET hit ratio at its size and
        policy) at the env's prices; ``nan`` before the curves are ready (the anchor rule's ``min_weight``), for a
        policy without a curve, or for ``maxmemory 0`` (unlimited: its size is whatever the data grows to).

        When the cache in force did not evict in the interval, the data in use is all any cache held: every config at
        least that large would have hit the same, so hits are priced at ``min(maxmemory, bytes in use)`` and such
        configs differ by their memory only. Without this, a fill cap (``mrc`` holding ``maxmemory`` just above the data
        while the cache fills) is priced as if it evicted at its size, and a cheaper config reads as a dearer one
        (measured: the cache2k web12 cell at cheap-backend prices read -25 % against a measured +0.01 %)."""
        curves = self.env.curves
        if curves is None or not curves.ready(float(self.env.anchor_rule.min_weight)):
            return {k: float("nan") for k in configs}
        mono, prices = curves.monotone(), self.env.prices
        out: dict[str, float] = {}
        for k, c in configs.items():
            if c.maxmemory <= 0 or c.maxmemory_policy not in mono.hit:
                out[k] = float("nan")
                continue
            size = float(c.maxmemory) if self._filling is None else min(float(c.maxmemory), self._filling)
            hit = mono.hit_ratio(c.maxmemory_policy, size)
            out[k] = float(prices.interval_cost(np.asarray(float(c.maxmemory)), hit, self._gets))
        return out

    def _handed(self) -> tuple[int, int, int] | None:
        """``ppo``'s counts of decisions handed to its anchor (cold, young, outside its price support); None otherwise."""
        c = self.controller
        return (c.deferred, c.deferred_young, c.deferred_outside) if isinstance(c, LearnedPolicy) else None

    def _note_handed(self, before: tuple[int, int, int] | None, info: dict[str, Any]) -> None:
        """For the audit log (``policy_info.ppo``): whether the policy decided this interval itself or handed it to
        its anchor, and why (``cold``, ``young``, ``outside``: its price feature outside what it saw in training), with
        the anchor's config. An operator sees how much of the tuning is the policy's own."""
        after = self._handed()
        if before is None or after is None:
            return
        why = next((k for k, b, a in zip(("cold", "young", "outside"), before, after, strict=True) if a > b), None)
        self.last_info = {**self.last_info, "ppo": {"handed_to_anchor": why, "anchor": config_dict(info.get("anchor"))}}

    def _note_curves(self) -> None:
        """For the audit log (``policy_info.curves``): how much evidence the curves carry and whether the rule's
        ``min_weight`` is reached, so an operator warming the curves in a dry run sees when they are ready; logged
        once when they first are."""
        decider = getattr(self.controller, "decider", None)
        if self.env.mrc is None or (decider is None and not isinstance(self.controller, LearnedPolicy)):
            return
        # ppo: the curves its anchor reads, ready at the anchor rule's min_weight
        rule = decider.settings if decider is not None else self.env.anchor_rule
        curves, need = self.env.curves, float(rule.min_weight)
        evidence = min((float(e.min()) for e in curves.evidence.values()), default=0.0) if curves is not None else 0.0
        ready = curves is not None and curves.ready(need)
        if ready and not self._curves_ready:
            log.info("%s: the curves are ready (%.0f sampled GETs at their sparsest point, %d decisions in)",
                     self.name, evidence, self._decisions + 1)
        self._curves_ready = ready
        self.last_info = {**self.last_info, "curves": {"ready": ready, "evidence_gets": round(evidence, 1),
                                                       "min_weight": need}}

    def _save(self) -> None:
        assert self.checkpoint is not None
        if self.env.mrc is None:
            return
        if isinstance(self.controller, MRCController):
            state: dict[str, Any] = {"estimator": self.env.mrc, "controller": self.controller}
        else:  # ppo: the policy network keeps nothing between intervals; its anchor does
            estimator, anchor = self.env.anchor_state()
            state = {"estimator": estimator, "anchor": anchor}
        try:
            self.checkpoint.save(state)
        except Exception as e:  # noqa: BLE001 (a full disk or an unpicklable state must not stop the tuning)
            log.warning("%s: checkpoint not saved (%s: %s)", self.name, type(e).__name__, e)

    def close(self) -> None:
        try:
            if self.checkpoint is not None and self._started:
                self._save()
        finally:
            if self.hot is not None:
                self.hot.predictor.close()
            self.env.close()


def load_env_config(cfg: DaemonConfig) -> EnvConfig:
    """The env config the decider observes through: ``policy.env_config`` (a YAML's ``env_section``),
    else defaults."""
    if cfg.policy.env_config:
        return EnvConfig.from_yaml(cfg.policy.env_config, key=cfg.policy.env_section)
    return EnvConfig()


def with_prices(env_cfg: EnvConfig, prices: PricesConfig) -> EnvConfig:
    """``env_cfg`` with its ``prices:`` replaced by ``policy.prices`` (:meth:`EnvConfig.with_prices`); a config they
    do not fit is a one-line error naming ``policy.prices``."""
    try:
        return env_cfg.with_prices(prices)
    except ValidationError as e:
        err = e.errors()[0]
        raise ConfigError(f"policy.prices: {err['msg']}") from None


def with_reference_interval(env_cfg: EnvConfig, settings: ControlSettings,
                            reference_s: float | None) -> tuple[EnvConfig, ControlSettings]:
    """``policy.reference_interval_s``, resolved: the decider's rule (``mrc``'s settings, and the anchor a policy
    offsets) and its curves count their intervals as ``reference_s`` of wall-clock time (None: per interval), so
    that at 60 s decisions they gather and confirm evidence as fast in seconds as at the 10 s they were measured at.
    A policy's anchor and curves live in the mirror env built from the returned config (the model artifact's own
    config gives only its actions)."""
    mrc = env_cfg.mrc
    anchor = None if mrc.anchor is None else mrc.anchor.model_copy(update={"reference_interval_s": reference_s})
    curves = mrc.model_copy(update={"reference_interval_s": reference_s, "anchor": anchor})
    rule = settings.mrc.model_copy(update={"reference_interval_s": reference_s})
    return env_cfg.model_copy(update={"mrc": curves}), settings.model_copy(update={"mrc": rule})


def make_policy(cfg: DaemonConfig, target: TargetConfig, backend: BackendRef) -> Policy:
    """The decider named ``cfg.policy.name`` for ``target``; unknown names list the valid ones."""
    name = cfg.policy.name
    if name not in controller_names():
        raise ConfigError(f"policy.name: unknown controller {name!r}; valid: {', '.join(policy_names())}")
    if is_hindsight(name):
        raise ConfigError(f"policy.name: {name!r} needs the future (hindsight reference); it cannot run on a live target")
    params = dict(cfg.policy.params)
    settings = validate(ControlSettings, params.pop("settings", {}), "policy.params.settings")
    env_cfg = load_env_config(cfg)
    if name == "ppo":
        artifact = load_policy(cfg.policy.model or "default", config=cfg.policy.env_config,
                               cache_dir=Path(cfg.state_dir), tracking_uri=cfg.tracking.tracking_uri)
        params["model"] = artifact
        env_cfg = artifact.env_config
    if cfg.policy.prices is not None:
        env_cfg = with_prices(env_cfg, cfg.policy.prices)
    # resolved here, at the pace the daemon decides at: the mirror env's own interval_s is its config's, not the
    # daemon's, so the configs' auto would resolve against the wrong interval
    pace_s = decision_interval_s(cfg, target)
    reference_s = resolve_reference(cfg.policy.reference_interval_s, pace_s)
    env_cfg, settings = with_reference_interval(env_cfg, settings, reference_s)
    if reference_in_force(reference_s, pace_s) is not None:
        log.info("%s: decisions every %gs; the decider counts its confirmations, payback and smoothing in wall time, "
                 "as intervals of %gs (policy.reference_interval_s: %s)", target.name, pace_s, reference_s,
                 cfg.policy.reference_interval_s)
    if name == "random":
        params["seed"] = int(params.pop("seed", cfg.policy.seed)) + sum(map(ord, target.name))
        seed = params.pop("seed")
    else:
        seed = cfg.policy.seed
    history = None
    if watches_history(name):
        history = _history(cfg, env_cfg, target, params)
    elif cfg.policy.history is not None:
        raise ConfigError(f"policy.history: only a controller that watches a history uses it (mrc-history), not {name!r}")
    controller = make_controller(name, settings, seed, **params)
    if getattr(controller, "decides_client_ttl", False):
        raise ConfigError(f"policy: controller {name!r} also decides client-side TTL multipliers, which the daemon "
                          "cannot apply (it changes Redis only through CONFIG SET; TTLs are set by the application)")
    if target.backend == "live":  # a sim target's snapshots carry its env's interval, not the daemon's pace
        _warn_interval(name, controller, env_cfg, cfg.interval_s)
    bounds = (target.bounds.maxmemory_min, target.bounds.maxmemory_max)
    checkpoint = checkpoint_for(controller, target.name, cfg.state_dir, cfg.policy.checkpoint_intervals, {
        "name": name, "curves": env_cfg.mrc.model_dump(mode="json"), "sim": env_cfg.sim.model_dump(mode="json"),
        "bounds": list(bounds), "interval_s": cfg.interval_s, "history_sample_rate": cfg.policy.history_sample_rate,
        "history": None if cfg.policy.history is None else cfg.policy.history.model_dump(mode="json")})
    return ControllerPolicy(name, controller, env_cfg, target, backend, cfg.policy.seed, cfg.interval_s, cfg.hotness,
                            history=history, history_rate=cfg.policy.history_sample_rate, checkpoint=checkpoint)


def _warn_interval(name: str, controller: Any, env_cfg: EnvConfig, interval_s: float) -> None:
    """Warn once when the decider is the ``mrc`` rule (or a policy anchored on it) and ``interval_s`` is not the 10 s
    it was measured at, unless its counts are scaled (``reference_interval_s``): they count intervals, so at 60 s it
    reacts six times slower in wall time (docs/control.md, the interval audits). With ``auto`` (the default) that
    leaves intervals under 57 s other than 10 s, and any interval where someone set null."""
    decider = getattr(controller, "decider", None)
    if decider is not None:
        rule = decider.settings
    elif isinstance(controller, LearnedPolicy):
        rule = env_cfg.mrc.anchor or MRCControlSettings()
    else:
        return
    scaled = resolve_reference(rule.reference_interval_s, interval_s) is not None
    if scaled or same_interval(interval_s, MEASURED_INTERVAL_S):
        return
    if interval_s >= AUTO_WALL_TIME_FROM_S:
        advice = ("policy.reference_interval_s: auto (the default) counts in wall time at 57 s or more: on six fresh "
                  "interval audits at 60 and 120 s, by a rule written before they ran, it cut mean regret 4.3 -> 1.5 "
                  "%, and on four at 300 s 13.4 -> 3.0 % (docs/control.md, rules five and six)")
    else:
        advice = ("below 57 s counting in wall time is not applied by default: at 30 s it swung cells both ways "
                  "(docs/control.md, rule four); policy.reference_interval_s: 10 forces it")
    log.warning("%s at interval_s=%gs: its rule was measured at %gs decisions and counts intervals (confirmations, "
                "payback, smoothing), so it reacts %.1fx %s in wall time; on the interval audits at 30-60 s it read "
                "2-3 %% mean regret against under 1 %% at 10 s. %s", name, interval_s,
                MEASURED_INTERVAL_S, max(interval_s, MEASURED_INTERVAL_S) / min(interval_s, MEASURED_INTERVAL_S),
                "slower" if interval_s > MEASURED_INTERVAL_S else "faster", advice)


def _history(cfg: DaemonConfig, env_cfg: EnvConfig, target: TargetConfig, params: dict[str, Any]) -> Trace:
    """``policy.history`` for a controller that watches the past (``mrc-history``): the trace, and in ``params`` its
    first config, ``cachetuner recommend`` on the trace at the policy env's prices within the target's bounds and
    allowed policies (unless ``params.config`` names one)."""
    from cachetuner.env.sim_backend import load_workload
    from cachetuner.mrc.recommend import recommend

    name = cfg.policy.name
    if cfg.policy.history is None:
        raise ConfigError(f"policy.history: {name!r} watches the target's past traffic before it starts; give a trace "
                          "of it (policy.history: {trace: ..., format: ...}), or run 'mrc'")
    if not env_cfg.mrc.enabled:
        raise ConfigError(f"policy: {name!r} needs the miss-ratio curves (env mrc.enabled)")
    try:
        trace = load_workload(cfg.policy.history)
    except CacheTunerError as e:
        raise ConfigError(f"policy.history ({cfg.policy.history.label}): {e}") from None
    if "config" not in params:
        policies = [p for p in env_cfg.mrc.policies if p in target.bounds.policies]
        if not policies:
            raise ConfigError(f"targets.{target.name}.bounds.policies: none of the curves' policies "
                              f"({', '.join(env_cfg.mrc.policies)}) is allowed, so policy.history cannot size a config")
        budget = env_cfg.prices.budget_bytes if env_cfg.prices is not None else None
        try:
            rec = recommend(trace, memory_per_gib_hour=env_cfg.reward.memory_cost_per_gb_hour,
                            per_miss=env_cfg.reward.miss_cost, cfg=env_cfg.mrc.model_copy(update={"policies": policies}),
                            budget_bytes=budget, verify=False, bounds=(target.bounds.maxmemory_min, target.bounds.maxmemory_max))
        except CacheTunerError as e:
            raise ConfigError(f"policy.history ({cfg.policy.history.label}): cannot size a first config: {e}") from None
        params["config"] = RedisConfig(maxmemory=rec.maxmemory, maxmemory_policy=rec.policy)  # type: ignore[arg-type]
        log.info("%s: policy.history %s (%d requests): starting at %s, %d B", target.name, cfg.policy.history.label,
                 len(trace), rec.policy, rec.maxmemory)
    return trace


def make_hotness_predictor(h: HotnessConfig) -> Any:
    """Triton with the in-process fallback (or in-process only without ``triton_url``)."""
    from cachetuner.serving.client import FallbackPredictor, InProcessPredictor, TritonPredictor

    assert h.model_path is not None
    if not Path(h.model_path).is_file():
        raise ConfigError(f"hotness.model_path: {h.model_path} not found (a model.pt from cachetuner hotness train)")
    local = InProcessPredictor(h.model_path, device="cpu")
    if not h.triton_url:
        return local
    remote = TritonPredictor(h.triton_url, protocol=h.protocol, timeout_s=h.timeout_s, retries=0, seq_len=local.seq_len)
    return FallbackPredictor(remote, local, retry_after_s=h.retry_after_s)
