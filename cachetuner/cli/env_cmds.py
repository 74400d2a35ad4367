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


def _run_interleaved(cfgs: dict[str, Any], steps: int, seed: int) -> dict[str, dict[str, Any]]:
    """Random actions on one env per variant, stepped alternately with the same action sequence so that
    a busy machine slows every variant alike; JIT compilation and resets are excluded from the timing.
    ``cpu_*`` figures use this thread's CPU time (robust to other processes), the rest wall time."""
    from cachetuner.env import CacheTuningEnv

    envs = {name: CacheTuningEnv(c) for name, c in cfgs.items()}
    first = next(iter(envs.values()))
    first.action_space.seed(seed)
    actions = [first.action_space.sample() for _ in range(steps + 1)]
    stats = {name: {"wall": 0.0, "cpu": 0.0, "requests": 0, "resets": 0, "reset_s": 0.0} for name in envs}
    for env in envs.values():
        env.reset(seed=seed)
        env.step(actions[0])  # compile everything before timing
        env.reset(seed=seed)
    for a in actions[1:]:
        for name, env in envs.items():
            st = stats[name]
            w0, c0 = time.perf_counter(), time.thread_time()
            _obs, _r, term, trunc, info = env.step(a)
            st["wall"] += time.perf_counter() - w0
            st["cpu"] += time.thread_time() - c0
            st["requests"] += info["snapshot"].requests
            if term or trunc:
                r0 = time.perf_counter()
                env.reset()
                st["reset_s"] += time.perf_counter() - r0
                st["resets"] += 1
    out_: dict[str, dict[str, Any]] = {}
    for name, env in envs.items():
        st = stats[name]
        res: dict[str, Any] = {
            "steps": steps,
            "seconds": round(st["wall"], 3),
            "steps_per_s": round(steps / st["wall"], 1),
            "sim_requests_per_s": round(st["requests"] / st["wall"]),
            "cpu_steps_per_s": round(steps / st["cpu"], 1),
            "requests_per_step": round(st["requests"] / steps),
            "resets": st["resets"],
            "reset_seconds_mean": round(st["reset_s"] / st["resets"], 4) if st["resets"] else None,
        }
        if env.whatif is not None:
            res.update(whatif_rate=round(env.whatif.rate, 5), whatif_mini_caches=len(env.whatif.labels),
                       whatif_sampled_keys=env.whatif.sampled_keys)  # fmt: skip
        out_[name] = res
        env.close()
    return out_


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
    variants = {
        name: cfg.model_copy(update={"whatif": cfg.whatif.model_copy(update={"enabled": enabled})})
        for name, enabled in (("whatif_on", True), ("whatif_off", False))
    }
    console.log(f"bench env: what-if on and off, {steps} interleaved steps each")
    results = _run_interleaved(variants, steps, seed)
    on, off = results["whatif_on"], results["whatif_off"]
    report = {
        "workloads": [w.label for w in cfg.workloads],
        "interval_s": cfg.interval_s,
        "action_space": cfg.actions.space,
        **results,
        "whatif_cost_ratio": round(off["steps_per_s"] / on["steps_per_s"], 3),
        "whatif_cpu_cost_ratio": round(off["cpu_steps_per_s"] / on["cpu_steps_per_s"], 3),
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
