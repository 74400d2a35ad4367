"""Run both arms in lock-step on the same request stream and compare them.

Simulation mode: two :class:`~cachetuner.env.CacheTuningEnv` over two simulators, reset with the same
seed and pinned to the same workload window, stepped interval by interval; the harness checks that
both arms really saw the same requests in every interval.

Shadow mode: the control runs on a real backend (live Redis, or the simulator when validating the
estimator); the treatment runs in its own env over a :class:`~cachetuner.ab.shadow.ShadowBackend`
that estimates each interval from the control's hash-sampled key stream.

TTL arms (an arm sets ``ttl``): :mod:`cachetuner.ab.ttl_runner` in sim mode,
:mod:`cachetuner.ab.ttl_shadow` in shadow mode.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cachetuner.ab.arms import build_tuner, check_arm, ensure_model, model_env_config
from cachetuner.ab.config import ABConfig, ArmConfig, check_ttl_arms, resolve_env_config
from cachetuner.ab.result import ABResult, ArmSeries, record_of
from cachetuner.ab.stats import compare
from cachetuner.ab.ttl_runner import run_ttl_sim
from cachetuner.ab.ttl_shadow import run_ttl_shadow
from cachetuner.errors import BackendError, ConfigError
from cachetuner.evaluation.episode import context_from_env, wants_sample
from cachetuner.yamlconfig import field_error

#: what LiveRedisBackend needs in ``shadow.backend_options`` (or from ``--stack-dir``)
LIVE_REQUIRED = ("redis_url", "prometheus_url")


def check_fixed_arms_in_bounds(cfg: ABConfig, bounds: tuple[int, int], source: str = "<ab config>",
                               where: str = "env.bounds") -> None:
    """A fixed-config arm outside the env's ``maxmemory`` bounds is refused: the env clamps every config into its
    bounds (by design, for tuners), so the arm would silently run another size than the one it is labelled with."""
    lo, hi = bounds
    for role, arm in (("control", cfg.control), ("treatment", cfg.treatment)):
        if arm.config is None:
            continue
        mm = arm.config.maxmemory
        if mm > hi or mm < lo:
            side, edge = ("above the maximum", hi) if mm > hi else ("below the minimum", lo)
            raise ConfigError(field_error(source, f"{role}.config.maxmemory", f"{mm} B is {side} {edge} B of {where}: "
                                          "the env would clamp it, and the arm would run another size than it is "
                                          "labelled with; widen env.bounds or change the arm"))


def _known_bounds(env_cfg: Any) -> tuple[int, int] | None:
    """The env's ``maxmemory`` bounds when both are absolute (fractions need the workload's working set)."""
    b = env_cfg.bounds
    if b.min_bytes is None and b.max_bytes is None:
        return None
    return (b.min_bytes or 1, b.max_bytes or 2**63)

#: Called after every interval with (intervals done, horizon).
StepFn = Callable[[int, int], None]


def arm_env_config(cfg: ABConfig, env_override: Any = None, source: str = "<ab config>") -> Any:
    """The env both arms run on: ``env`` / ``env_config`` of the A/B file, else the treatment (or
    control) model's training env, else defaults; then the command-line workload override."""
    if cfg.env is None and cfg.env_config is None:
        base = model_env_config(cfg.treatment) or model_env_config(cfg.control)
        if base is not None:
            cfg = cfg.model_copy(update={"env": base.model_dump(mode="json")})
    env = resolve_env_config(cfg, source)
    if env_override is not None:
        env = env_override(env)
    return env


def env_for_arm(env_cfg: Any, arm: ArmConfig) -> Any:
    """A fixed-config arm starts (and warms up) in its own configuration, so that it is not charged
    a switch from the env's initial configuration to the one it holds all along."""
    if arm.config is None:
        return env_cfg
    bounds = env_cfg.bounds.model_copy(update={"initial_bytes": arm.config.maxmemory})
    return env_cfg.model_copy(update={"initial_config": arm.config, "bounds": bounds})


def _reset_options(cfg: ABConfig) -> dict[str, Any]:
    return {"workload": cfg.workload if cfg.workload is not None else 0, "start": "begin"}


def run_ab(
    cfg: ABConfig,
    *,
    env_override: Callable[[Any], Any] | None = None,
    max_intervals: int | None = None,
    on_step: StepFn | None = None,
    source: str = "<ab config>",
    tracking_uri: str | None = None,
) -> ABResult:
    """Run the experiment ``cfg`` and return both arms' series and the verdict.

    ``max_intervals`` stops early (a peek): with the fixed-horizon method the verdict is then
    ``inconclusive (horizon not reached)`` whatever the data say.
    """
    check_ttl_arms(cfg, source)
    live_control = cfg.mode == "shadow" and cfg.shadow.control_backend == "live"
    check_arm(cfg.control, "control", source, live=live_control)
    check_arm(cfg.treatment, "treatment", source, live=cfg.mode == "shadow")
    if live_control and not cfg.is_ttl:
        missing = [k for k in LIVE_REQUIRED if k not in cfg.shadow.backend_options]
        if missing:
            raise ConfigError(field_error(source, "shadow.backend_options", f"missing {', '.join(missing)} (the live "
                                          "Redis and Prometheus the control runs on); set them, or pass --stack-dir"))
    if env_override is not None or cfg.env is not None or cfg.env_config is not None:
        early = arm_env_config(cfg, env_override, source)  # a bad value fails now, not after an arm is trained
        known = _known_bounds(early)
        if known is not None and not cfg.is_ttl:
            check_fixed_arms_in_bounds(cfg, known, source)
    for arm in (cfg.control, cfg.treatment):
        ensure_model(arm, tracking_uri=tracking_uri)
    env_cfg = arm_env_config(cfg, env_override, source)
    known = _known_bounds(env_cfg)
    if known is not None and not cfg.is_ttl:
        check_fixed_arms_in_bounds(cfg, known, source)
    n = cfg.horizon_intervals if max_intervals is None else min(max_intervals, cfg.horizon_intervals)
    extras: dict[str, Any] = {}
    if cfg.is_ttl and cfg.mode == "shadow":
        control, treatment, meta, extras = run_ttl_shadow(cfg, env_cfg, n, on_step)
    elif cfg.is_ttl:
        control, treatment, meta, extras = run_ttl_sim(cfg, env_cfg, n, on_step)
    elif cfg.mode == "sim":
        control, treatment, meta = _run_sim(cfg, env_cfg, n, on_step, source)
    else:
        control, treatment, meta = _run_shadow(cfg, env_cfg, n, on_step, source)
    verdict = compare(
        control.arrays(),
        treatment.arrays(),
        primary_metric=cfg.primary_metric,
        horizon=cfg.horizon_intervals,
        alpha=cfg.stats.alpha,
        method=cfg.stats.method,
        n_resamples=cfg.stats.n_resamples,
        block_len=cfg.stats.block_len,
        seed=cfg.stats.seed,
    )
    live = cfg.mode == "shadow" and cfg.shadow.control_backend == "live" and not cfg.is_ttl  # TTL: its own workload
    meta.update(
        workload="live traffic" if live else [w.model_dump(mode="json") for w in env_cfg.workloads],
        interval_s=env_cfg.interval_s,
        seed=cfg.seed,
    )
    return ABResult(cfg.name, cfg.mode, control, treatment, verdict, meta, extras=extras)


def _record(series: ArmSeries, info: dict) -> None:
    series.records.append(record_of(info["snapshot"], info["cost"]))
    series.configs.append(info["config"].model_dump(mode="json"))


def _lockstep(
    env_c: Any, env_t: Any, tuner_c: Any, tuner_t: Any, n: int, *, paired_check: bool, on_step: StepFn | None,
    control: ArmSeries, treatment: ArmSeries, seed: int, options: dict[str, Any] | None,
    check: Callable[[Any, Any], None] | None = None,
) -> None:
    obs_c, info_c = env_c.reset(seed=seed, options=options)
    obs_t, info_t = env_t.reset(seed=seed, options=options if paired_check else None)
    control.initial = info_c["config"].model_dump(mode="json")
    treatment.initial = info_t["config"].model_dump(mode="json")
    if check is not None:  # bounds resolved from the working set are known only now, before the first interval
        check(env_c, env_t)
    hc, ht = bool(getattr(tuner_c, "hindsight", False)), bool(getattr(tuner_t, "hindsight", False))
    sc, st = wants_sample(tuner_c), wants_sample(tuner_t)
    tuner_c.reset(context_from_env(env_c, obs_c, info_c, hindsight=hc, sample=sc))
    tuner_t.reset(context_from_env(env_t, obs_t, info_t, hindsight=ht, sample=st))
    for i in range(n):
        cfg_c = tuner_c.decide(context_from_env(env_c, obs_c, info_c, hindsight=hc, sample=sc))
        cfg_t = tuner_t.decide(context_from_env(env_t, obs_t, info_t, hindsight=ht, sample=st))
        obs_c, _, _, trunc_c, info_c = env_c.step_config(cfg_c)
        obs_t, _, _, trunc_t, info_t = env_t.step_config(cfg_t)
        if paired_check and info_c["snapshot"].requests != info_t["snapshot"].requests:
            raise BackendError(
                f"A/B arms are not paired at interval {i}: control saw {info_c['snapshot'].requests} requests, "
                f"treatment {info_t['snapshot'].requests}"
            )
        _record(control, info_c)
        _record(treatment, info_t)
        if on_step is not None:
            on_step(i + 1, n)
        if trunc_c or trunc_t:
            break


def _bounds_check(cfg: ABConfig, source: str) -> Callable[[Any, Any], None]:
    def check(env_c: Any, env_t: Any) -> None:
        for env in (env_c, env_t):
            lo, hi = env.bounds
            check_fixed_arms_in_bounds(cfg, (int(lo), int(hi)), source, where="env.bounds (resolved from the working set)")

    return check


def _run_sim(cfg: ABConfig, env_cfg: Any, n: int, on_step: StepFn | None,
             source: str = "<ab config>") -> tuple[ArmSeries, ArmSeries, dict]:
    from cachetuner.env.cache_env import CacheTuningEnv
    from cachetuner.env.sim_backend import SimBackend, load_workload

    traces = [load_workload(w) for w in env_cfg.workloads]  # read once, shared (immutable) by both arms
    cfg_c, cfg_t = env_for_arm(env_cfg, cfg.control), env_for_arm(env_cfg, cfg.treatment)
    env_c = CacheTuningEnv(cfg_c, backend=SimBackend(cfg_c, traces))
    env_t = CacheTuningEnv(cfg_t, backend=SimBackend(cfg_t, traces))
    control = ArmSeries("control", cfg.control.describe())
    treatment = ArmSeries("treatment", cfg.treatment.describe())
    try:
        _lockstep(
            env_c, env_t, build_tuner(cfg.control, seed=cfg.seed, role="control", source=source),
            build_tuner(cfg.treatment, seed=cfg.seed, role="treatment", source=source), n,
            paired_check=True, on_step=on_step, control=control, treatment=treatment, seed=cfg.seed,
            options=_reset_options(cfg), check=_bounds_check(cfg, source),
        )
    finally:
        env_c.close()
        env_t.close()
    return control, treatment, {"workload_label": env_c.workload}


def _run_shadow(cfg: ABConfig, env_cfg: Any, n: int, on_step: StepFn | None,
                source: str = "<ab config>") -> tuple[ArmSeries, ArmSeries, dict]:
    from cachetuner.ab.shadow import ShadowBackend, TeeBackend
    from cachetuner.env.cache_env import CacheTuningEnv

    sh = cfg.shadow
    if sh.control_backend == "sim":
        from cachetuner.env.sim_backend import SimBackend

        inner: Any = SimBackend(env_for_arm(env_cfg, cfg.control))
        options: dict[str, Any] | None = _reset_options(cfg)
    else:
        from cachetuner.live.backend import LiveRedisBackend

        opts = dict(sh.backend_options)
        opts.setdefault("interval_s", sh.interval_s or env_cfg.interval_s)
        if isinstance(opts.get("bounds"), list):
            opts["bounds"] = tuple(opts["bounds"])
        missing = [k for k in LIVE_REQUIRED if k not in opts]
        if missing:
            raise ConfigError(field_error(source, "shadow.backend_options", f"missing {', '.join(missing)} (the live "
                                          "Redis and Prometheus the control runs on); set them, or pass --stack-dir"))
        try:
            inner = LiveRedisBackend(**opts)
        except TypeError as e:
            raise ConfigError(field_error(source, "shadow.backend_options", str(e).split(".__init__() ")[-1])) from None
        options = None
    tee = TeeBackend(inner)
    shadow = ShadowBackend(tee, rate=sh.sample_rate, min_keys=sh.min_keys, modulus=sh.modulus,
                           initial_config=cfg.treatment.config)
    env_c = CacheTuningEnv(env_cfg, backend=tee)  # type: ignore[arg-type]
    env_t = CacheTuningEnv(env_cfg, backend=shadow)  # type: ignore[arg-type]
    live = sh.control_backend == "live"
    control = ArmSeries("control", cfg.control.describe())
    treatment = ArmSeries("treatment", cfg.treatment.describe(), estimated=True)
    try:
        _lockstep(
            env_c, env_t, build_tuner(cfg.control, seed=cfg.seed, live=live, role="control", source=source),
            build_tuner(cfg.treatment, seed=cfg.seed, live=True, role="treatment", source=source), n,
            paired_check=False, on_step=on_step, control=control, treatment=treatment, seed=cfg.seed,
            options=options, check=_bounds_check(cfg, source) if sh.control_backend == "sim" else None,
        )
    finally:
        env_c.close()
        env_t.close()
    est = shadow.estimator
    meta = {
        "workload_label": env_c.workload,
        "shadow_control_backend": sh.control_backend,
        "shadow_sample_rate": est.rate if est is not None else sh.sample_rate,
        "shadow_sampled_keys": est.sampled_keys if est is not None else 0,
    }
    return control, treatment, meta
