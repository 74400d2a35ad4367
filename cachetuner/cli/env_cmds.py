"""``cachetuner bench env`` and ``cachetuner env sweep|info``: the tuning environment from the command line."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer

from cachetuner.cli.app import app, bench_app, console, emit_json, out

env_app = typer.Typer(help="The Gymnasium tuning environment (simulated Redis).", no_args_is_help=True)
app.add_typer(env_app, name="env")

ConfigOpt = Annotated[
    Path | None,
    typer.Option("--config", help="YAML with an EnvConfig (or an experiment YAML, see --section)."),
]
SectionOpt = Annotated[str | None, typer.Option("--section", help="Section of the YAML holding the EnvConfig, e.g. env.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout.")]


def _load_cfg(config: Path | None, section: str | None) -> Any:
    from cachetuner.env import EnvConfig

    if config is None:
        return EnvConfig()
    return EnvConfig.from_yaml(config, key=section)


def _run_random(cfg: Any, steps: int, seed: int) -> dict[str, Any]:
    """Random actions for ``steps`` steps (resets at episode ends); warm-up/JIT excluded from timing."""
    from cachetuner.env import CacheTuningEnv

    env = CacheTuningEnv(cfg)
    env.action_space.seed(seed)
    env.reset(seed=seed)
    env.step(env.action_space.sample())  # compile everything before timing
    env.reset(seed=seed)
    n_req = 0
    resets = 0
    t_reset = 0.0
    t0 = time.perf_counter()
    for _ in range(steps):
        _obs, _r, term, trunc, info = env.step(env.action_space.sample())
        n_req += info["snapshot"].requests
        if term or trunc:
            r0 = time.perf_counter()
            env.reset()
            t_reset += time.perf_counter() - r0
            resets += 1
    dt = time.perf_counter() - t0 - t_reset
    res = {
        "steps": steps,
        "seconds": round(dt, 3),
        "steps_per_s": round(steps / dt, 1),
        "sim_requests_per_s": round(n_req / dt),
        "requests_per_step": round(n_req / steps),
        "resets": resets,
        "reset_seconds_mean": round(t_reset / resets, 4) if resets else None,
    }
    if env.whatif is not None:
        res.update(whatif_rate=env.whatif.rate, whatif_mini_caches=len(env.whatif.labels))
    env.close()
    return res


@bench_app.command("env")
def bench_env(
    config: ConfigOpt = None,
    section: SectionOpt = None,
    steps: Annotated[int, typer.Option("--steps", min=1, help="Env steps per variant.")] = 200,
    seed: Annotated[int, typer.Option("--seed")] = 0,
    json_out: JsonOpt = False,
) -> None:
    """Env steps/s and simulated requests/s with random actions, what-if features on vs off."""
    cfg = _load_cfg(config, section)
    results = {}
    for name, enabled in (("whatif_on", True), ("whatif_off", False)):
        c = cfg.model_copy(update={"whatif": cfg.whatif.model_copy(update={"enabled": enabled})})
        console.log(f"bench env: {name}, {steps} steps")
        results[name] = _run_random(c, steps, seed)
    on, off = results["whatif_on"], results["whatif_off"]
    report = {
        "workloads": [w.label for w in cfg.workloads],
        "interval_s": cfg.interval_s,
        "action_space": cfg.actions.space,
        **results,
        "whatif_cost_ratio": round(off["steps_per_s"] / on["steps_per_s"], 3),
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
    }
    if json_out:
        emit_json(report)
    else:
        for k in ("whatif_on", "whatif_off"):
            r = results[k]
            out.print(f"{k}: {r['steps_per_s']} steps/s, {r['sim_requests_per_s']:,} simulated requests/s")
        out.print(f"what-if slowdown: x{report['whatif_cost_ratio']}")


@env_app.command("sweep")
def env_sweep(
    config: ConfigOpt = None,
    section: SectionOpt = None,
    fractions: Annotated[
        str, typer.Option("--fractions", help="Comma-separated maxmemory fractions of the working set.")
    ] = "0.02,0.05,0.1,0.2,0.35,0.5,0.75,1.0",
    policy: Annotated[str, typer.Option("--policy", help="maxmemory-policy held fixed.")] = "allkeys-lru",
    json_out: JsonOpt = False,
) -> None:
    """Static sizes on each workload (pinned window from its beginning): cost per get at each size.

    Shows where the cost-optimal size lies with the configured prices; an optimum at either end of the
    range means the trade-off is trivial for that workload.
    """
    from cachetuner.env import CacheTuningEnv, SimBackend
    from cachetuner.errors import ConfigError

    cfg = _load_cfg(config, section)
    try:
        fr = [float(x) for x in fractions.split(",") if x.strip()]
    except ValueError:
        raise ConfigError(f"--fractions {fractions!r}: expected comma-separated numbers") from None
    wide = cfg.bounds.model_copy(update={"min_fraction": min(fr), "max_fraction": max(fr) + 1e-9,
                                          "min_bytes": None, "max_bytes": None})  # fmt: skip
    cfg = cfg.model_copy(update={"bounds": wide})
    env = CacheTuningEnv(cfg)
    backend = env.backend
    assert isinstance(backend, SimBackend)
    rows = []
    for w in range(len(cfg.workloads)):
        per = []
        for f in fr:
            env.reset(seed=0, options={"workload": w, "start": "begin"})
            target = env.backend.config.evolve(maxmemory=int(f * backend.working_set), maxmemory_policy=policy)
            tot: dict[str, float] = {"memory": 0.0, "miss": 0.0, "slo": 0.0, "switch": 0.0, "total": 0.0}
            gets = hits = 0
            rewards = []
            done = False
            while not done:
                _o, r, _te, done, info = env.step_config(target)
                rewards.append(r)
                for k in tot:
                    tot[k] += info["cost"][k]
                gets += info["snapshot"].gets
                hits += info["snapshot"].hits
            per.append({"fraction": f, "maxmemory": target.maxmemory, "hit_ratio": round(hits / max(gets, 1), 4),
                        "cost_per_get": round(tot["total"] / max(gets, 1) / cfg.reward.miss_cost, 4),
                        "memory_per_get": round(tot["memory"] / max(gets, 1) / cfg.reward.miss_cost, 4),
                        "mean_reward": round(float(np.mean(rewards)), 4)})  # fmt: skip
            console.log(f"{env.workload_name} x{f}: {per[-1]}")
        best = min(per, key=lambda p: p["cost_per_get"])
        rows.append({"workload": env.workload_name, "working_set": backend.working_set, "sizes": per,
                     "best_fraction": best["fraction"],
                     "interior": best["fraction"] not in (min(fr), max(fr))})  # fmt: skip
    env.close()
    report: dict[str, Any] = {"policy": policy, "reward": cfg.reward.model_dump(), "workloads": rows}
    if json_out:
        emit_json(report)
    else:
        for row in rows:
            out.print(f"{row['workload']}: best fraction {row['best_fraction']} (interior: {row['interior']})")


@env_app.command("info")
def env_info(config: ConfigOpt = None, section: SectionOpt = None, json_out: JsonOpt = False) -> None:
    """Observation features, action space and bounds of the configured env."""
    from cachetuner.env import CacheTuningEnv

    cfg = _load_cfg(config, section)
    env = CacheTuningEnv(cfg)
    env.reset(seed=0)
    report = {
        "observation": env.observation_names,
        "action_space": str(env.action_space),
        "actions": env._codec.describe(),
        "bounds": list(env.bounds),
        "working_set": getattr(env.backend, "working_set", None),
        "workloads": [w.label for w in cfg.workloads],
    }
    env.close()
    if json_out:
        emit_json(report)
    else:
        for k, v in report.items():
            out.print(f"{k}: {v}")
