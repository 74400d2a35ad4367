"""``cachetuner evaluate`` as a function: resolve the configs, run the controllers, log to MLflow.

Used by the CLI and the demo (which print from its result). The env config comes from ``--config``,
else from the model's training config (so a policy is evaluated under the observation pipeline it
was trained with), else defaults.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from rich.console import Console

from cachetuner.agent.config import TrainConfig
from cachetuner.control import DEFAULT_EVALUATION, build_controllers
from cachetuner.control.learned import CONFIG_SIDECAR, DEFAULT_MODEL, SHIPPED_DIR, load_policy
from cachetuner.env import EnvConfig, WorkloadSpec
from cachetuner.env.prices import PRESETS, PricesConfig
from cachetuner.env.sim_backend import preload
from cachetuner.errors import ConfigError
from cachetuner.evaluation.compare import EvalReport, evaluate_controllers
from cachetuner.evaluation.episode import SUMMARY_FIELDS
from cachetuner.mrc.rule_settings import ReferenceInterval, reference_in_force
from cachetuner.yamlconfig import validate_options, with_overrides


def resolve_train_config(model: str | Path | None, config: Path | None) -> tuple[TrainConfig, Path | None]:
    """``--config``, else the model's ``train_config.yaml`` (``default``: the shipped one), else defaults."""
    if config is not None:
        return TrainConfig.from_yaml(config), config
    if model is not None:
        side = SHIPPED_DIR / CONFIG_SIDECAR if str(model) == DEFAULT_MODEL else Path(model).parent / CONFIG_SIDECAR
        if side.is_file():
            return TrainConfig.from_yaml(side), side
    return TrainConfig(experiment="evaluate", total_timesteps=1), None


def evaluation_env(
    cfg: TrainConfig,
    *,
    trace: str | None = None,
    fmt: str = "auto",
    size_model: str | None = None,
    rate: float | None = None,
    seed: int = 0,
    limit: int | None = None,
    params: dict[str, Any] | None = None,
    workload: int = 0,
    intervals: int | None = None,
    prices: str | PricesConfig | None = None,
    rate_profile: str | None = None,
    key_draw: int = 0,
    start: int = 0,
) -> tuple[EnvConfig, int]:
    """The env config to evaluate on (``trace`` replaces the config's evaluation workloads, ``key_draw`` relabelling
    its keys; ``prices``, a preset name or a :class:`PricesConfig`, replaces its prices)."""
    env_cfg = cfg.eval_env_config()
    if rate_profile is not None and trace is None:
        raise ConfigError("--rate-profile: only with --trace (a config's workloads set `rate_profile:` themselves)")
    if start and trace is None:
        raise ConfigError("--start: only with --trace (a config's workloads set `start:` themselves)")
    if trace is not None:
        spec = validate_options(WorkloadSpec, dict(trace=trace, format=fmt, size_model=size_model, rate=rate,
                                                   rate_profile=rate_profile, limit=limit, seed=seed,
                                                   key_draw=key_draw, start=start, params=params or {}))
        env_cfg = env_cfg.model_copy(update={"workloads": [spec]})
        workload = 0
    elif workload >= len(env_cfg.workloads):
        raise ConfigError(f"--workload {workload}: the config has {len(env_cfg.workloads)} evaluation workloads")
    data = env_cfg.model_dump()
    data["episode_intervals"] = intervals
    env_cfg = EnvConfig.model_validate(data)
    if prices is not None:
        env_cfg = env_cfg.with_prices(PricesConfig(preset=prices) if isinstance(prices, str) else prices)
    return env_cfg, workload


def price_option(preset: str | None, budget: str | None) -> str | PricesConfig | None:
    """``--prices`` and ``--budget`` as :func:`evaluation_env` takes them. ``--budget`` is the budget
    regime's cap: bytes (``64mb``) or a share of the working set (``10%``); it implies ``--prices budget``."""
    from cachetuner.sim.sizing import parse_size

    if budget is None:
        if preset == "budget":
            raise ConfigError("--prices budget: give the cap with --budget (bytes like 64mb, or a share like 10%)")
        if preset is not None and preset not in PRESETS:
            raise ConfigError(f"--prices {preset!r}: expected one of {', '.join(PRESETS)}")
        return preset
    if preset not in (None, "budget"):
        raise ConfigError(f"--budget: the budget regime makes memory free below the cap; it does not combine with --prices {preset}")
    text = budget.strip()
    if text.endswith("%"):
        try:
            share = float(text[:-1]) / 100.0
        except ValueError:
            raise ConfigError(f"--budget {budget!r}: expected a number before '%'") from None
        if not 0 < share <= 10:
            raise ConfigError(f"--budget {budget!r}: the share must be in (0, 1000]%")
        return PricesConfig(preset="budget", budget_fraction=share)
    cap = parse_size(text, what="--budget")
    if cap < 1:
        raise ConfigError(f"--budget {budget!r}: the cap must be at least 1 byte (0 would mean unlimited in Redis)")
    return PricesConfig(preset="budget", budget_bytes=cap)


def with_history(env_cfg: EnvConfig, share: float, workload: int = 0) -> tuple[EnvConfig, dict[str, dict[str, Any]]]:
    """The env replaying only workload ``workload`` after its first ``share`` (its only workload, skipping that part),
    and the params of the controllers that use the part skipped: ``recommended`` holds, and ``mrc-history`` starts
    at, ``cachetuner recommend`` on it at the env's prices. Under a budget the cap is the env's own in bytes (the
    operator has the same memory as every controller, not a share of the past's working set). A suite's
    ``history:`` and ``cachetuner evaluate --history``."""
    from cachetuner.config import RedisConfig
    from cachetuner.env.sim_backend import load_workload, sim_params_for, working_set_bytes
    from cachetuner.mrc.recommend import recommend

    spec = env_cfg.workloads[workload]
    trace = load_workload(spec)
    skip = int(share * len(trace))
    if not 0 < skip < len(trace):
        raise ConfigError(f"history {share:g}: leaves no past or nothing to replay of {spec.label}'s {len(trace):,} requests")
    past = trace.slice(0, skip)
    env_cfg = env_cfg.model_copy(update={"workloads": [spec.model_copy(update={"skip": skip})]})
    prices = env_cfg.prices
    budget = None
    if prices is not None and prices.budget is not None:  # the cap the env gives the replayed part
        budget = prices.budget_cap(working_set_bytes(load_workload(env_cfg.workloads[0]), sim_params_for(env_cfg)))
    # the reward holds the prices in dollars (EnvConfig resolves `prices` into it)
    rec = recommend(past, memory_per_gib_hour=env_cfg.reward.memory_cost_per_gb_hour, per_miss=env_cfg.reward.miss_cost,
                    budget_bytes=budget, verify=False)
    config = RedisConfig(maxmemory=rec.maxmemory, maxmemory_policy=rec.policy)  # type: ignore[arg-type]
    # mrc-history starts at the operator's config, then follows the traffic
    return env_cfg, {"recommended": {"config": config}, "mrc-history": {"config": config}}


def wall_time_note(env_cfg: EnvConfig, rule: ReferenceInterval = "auto") -> str | None:
    """One line when decisions are far enough apart that ``mrc``'s rule (``rule``: its ``reference_interval_s``), the
    anchor a policy offsets (the env's ``mrc.anchor``) or the curves count their intervals in wall time
    (``auto`` by default from 57 s), so a reader of a 60 s run knows which rule ran; None where all count per
    interval (at 10 s always)."""
    iv = env_cfg.interval_s
    parts = [("mrc's rule", rule), ("the curves", env_cfg.mrc.reference_interval_s)]
    if env_cfg.mrc.anchor is not None:
        parts.insert(1, ("the policy's anchor", env_cfg.mrc.anchor.reference_interval_s))
    scaled = [(name, ref) for name, ref in ((n, reference_in_force(r, iv)) for n, r in parts) if ref is not None]
    if not scaled:
        return None
    refs = ", ".join(f"{name} as {ref:g} s" for name, ref in scaled)
    return (f"decisions every {iv:g} s: intervals counted in wall time ({refs}; reference_interval_s, auto by default "
            "from 57 s: docs/control.md, rules five and six)")


def run_evaluation(
    *,
    model: str | Path | None,
    trace: str | None,
    fmt: str = "auto",
    size_model: str | None = None,
    rate: float | None = None,
    rate_profile: str | None = None,
    seed: int = 0,
    limit: int | None = None,
    start: int = 0,
    params: dict[str, Any] | None = None,
    config: Path | None = None,
    controllers: list[str] | None = None,
    workload: int = 0,
    intervals: int | None = None,
    prices: str | PricesConfig | None = None,
    history: float | None = None,
    tracking_uri: str | None = None,
    console: Console | None = None,
    overrides: list[str] | None = None,
) -> tuple[dict[str, Any], EvalReport]:
    """Run ``model`` and the other controllers on the same traffic and log the comparison to MLflow.

    ``history``: replay only the workload after that share, which ``recommended`` is sized on and ``mrc-history``
    watches (both join the default controllers). ``overrides``: ``PATH=VALUE`` settings applied to the experiment
    config (:func:`~cachetuner.yamlconfig.with_overrides`). Returns the JSON-ready summary (with ``mlflow_run_id``)
    and the :class:`EvalReport`.
    """
    import mlflow
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from cachetuner.agent.plots import episode_figures
    from cachetuner.tracking import log_figure_png, run_name, setup_tracking

    cfg, cfg_source = resolve_train_config(model, config)
    if overrides:
        cfg = with_overrides(cfg, overrides)
    env_cfg, workload = evaluation_env(cfg, trace=trace, fmt=fmt, size_model=size_model, rate=rate, seed=seed,
                                       limit=limit, params=params, workload=workload, intervals=intervals,
                                       prices=prices, rate_profile=rate_profile, start=start)
    names = controllers or [t for t in DEFAULT_EVALUATION if t != "ppo" or model is not None]
    params_by_name: dict[str, dict[str, Any]] = {}
    if history is not None:
        env_cfg, params_by_name = with_history(env_cfg, history, workload)
        workload = 0
        names = names if controllers else [*names, "recommended", "mrc-history"]
    artifact = load_policy(model, config=config) if (model is not None and "ppo" in names) else None
    built = build_controllers(names, cfg.controllers, seed=seed, model=artifact, params=params_by_name)
    preload(env_cfg, workload)  # a trace that cannot be read fails before the progress display, not inside it
    console = console or Console(stderr=True)
    note = wall_time_note(env_cfg, cfg.controllers.mrc.reference_interval_s)
    if note:
        console.print(f"note: {note}", highlight=False)
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=console) as prog:
        tasks = {n: prog.add_task(f"{n}: waiting", total=None) for n in built}

        def tick(name: str, n: int) -> None:
            prog.update(tasks[name], description=f"{name}: interval {n}")

        report = evaluate_controllers(env_cfg, built, seed=seed, workload=workload, on_interval=tick)

    result = report.to_json()
    if overrides:
        result["overrides"] = list(overrides)
    setup_tracking(tracking_uri, experiment=cfg.experiment)
    label = "SimRedisDiscrete-v0" if env_cfg.actions.space == "discrete12" else "SimRedis-v0"
    with mlflow.start_run(run_name=run_name(label, f"{cfg.experiment}-eval", seed)) as run:
        mlflow.set_tags({"kind": "evaluate", "workload": report.workload, "model_path": str(model or "")})
        mlflow.log_params({"trace": trace or report.workload, "format": fmt, "size_model": str(size_model),
                           "rate": str(rate), "limit": str(limit), "start": start, "tuners": ",".join(names), "seed": seed,
                           "config": str(cfg_source or "defaults"), "prices": _price_label(prices),
                           "history": str(history), "overrides": " ".join(overrides or [])[:6000]})
        mlflow.log_metrics({f"{t}.{k}": float(v) for t, s in result["tuners"].items() for k, v in s.items()
                            if isinstance(v, int | float) and not isinstance(v, bool)})
        with tempfile.TemporaryDirectory() as d:
            p = Path(d) / "evaluation.json"
            p.write_text(json.dumps({"summary": result, "records": report.records_json()}))
            mlflow.log_artifact(str(p), artifact_path="eval")
        mlflow.log_table({"tuner": list(result["tuners"]),
                          **{k: [s[k] for s in result["tuners"].values()] for k in SUMMARY_FIELDS}},
                         artifact_file="eval/table.json")
        for key, fig in episode_figures({k: r.records for k, r in report.results.items()}, report.workload).items():
            log_figure_png(fig, f"eval_{key}")
        result["mlflow_run_id"] = run.info.run_id
    return result, report


def _price_label(prices: str | PricesConfig | None) -> str:
    if prices is None:
        return "config"
    if isinstance(prices, str):
        return prices
    cap = prices.budget_bytes if prices.budget_bytes is not None else f"{prices.budget_fraction:.0%}"
    return f"{prices.preset} {cap}" if prices.budget is not None else prices.preset
