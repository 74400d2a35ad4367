"""``cachetuner bench env`` and ``cachetuner env sweep|info``: the tuning environment from the command line.

Option parsing and printing only: the benchmark is :func:`cachetuner.env.bench.bench_env`, the sweep
:func:`cachetuner.env.sweep.cost_sweep` (imported when a command runs, to keep start-up fast).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any, get_args

import typer

from cachetuner.cli.app import app, bench_app, console, emit_json, out
from cachetuner.cli.trace_options import JsonOpt
from cachetuner.errors import ConfigError, UnknownNameError

env_app = typer.Typer(help="The Gymnasium tuning environment (simulated Redis).", no_args_is_help=True)
app.add_typer(env_app, name="env")

ConfigOpt = Annotated[
    Path | None,
    typer.Option("--config", help="YAML with an EnvConfig (or an experiment YAML, see --section)."),
]
SectionOpt = Annotated[str | None, typer.Option("--section", help="Section of the YAML holding the EnvConfig, e.g. env.")]


def _load_cfg(config: Path | None, section: str | None) -> Any:
    from cachetuner.env import EnvConfig

    if config is None:
        if section is not None:
            from cachetuner.errors import ConfigError

            raise ConfigError("--section: only with --config (the section of that YAML to read)")
        return EnvConfig()
    return EnvConfig.from_yaml(config, key=section)


#: Largest ``--fractions`` value: maxmemory as a multiple of the working set (1 already holds every value).
MAX_FRACTION = 100.0


def _parse_fractions(fractions: str) -> list[float]:
    """``--fractions``: finite shares of the working set in (0, MAX_FRACTION], at least two different ones
    (the sweep's memory bounds span them)."""
    try:
        fr = [float(x) for x in fractions.split(",") if x.strip()]
    except ValueError:
        raise ConfigError(f"--fractions {fractions!r}: expected comma-separated numbers") from None
    if not fr:
        raise ConfigError(f"--fractions {fractions!r}: expected comma-separated numbers")
    for f in fr:
        if not (math.isfinite(f) and 0 < f <= MAX_FRACTION):
            raise ConfigError(f"--fractions: a maxmemory fraction of the working set must be a finite number in "
                              f"(0, {MAX_FRACTION:g}], got {f!r}")  # fmt: skip
    if len(set(fr)) < 2:
        raise ConfigError(f"--fractions {fractions!r}: give at least two different fractions to compare, e.g. 0.05,0.2")
    return fr


def _check_policy(policy: str) -> str:
    """``--policy``: a maxmemory-policy name; an unknown one is one line listing the valid ones."""
    from cachetuner.config import Policy

    valid = get_args(Policy)
    if policy not in valid:
        raise UnknownNameError(f"--policy {policy!r}: unknown maxmemory-policy; valid: {', '.join(valid)}")
    return policy


@bench_app.command("env")
def bench_env(
    config: ConfigOpt = None,
    section: SectionOpt = None,
    steps: Annotated[int, typer.Option("--steps", min=1, help="Env steps per variant.")] = 200,
    seed: Annotated[int, typer.Option("--seed", min=0)] = 0,
    json_out: JsonOpt = False,
) -> None:
    """Env steps/s and simulated requests/s with random actions.

    What-if features on vs off, and with the miss-ratio curves on top."""
    from cachetuner.env.bench import bench_env as run_bench

    cfg = _load_cfg(config, section)
    console.log(f"bench env: what-if on and off, and with miss-ratio curves, {steps} interleaved steps each")
    report = run_bench(cfg, steps, seed)
    if json_out:
        emit_json(report)
        return
    for k in ("whatif_on", "whatif_off", "whatif_and_mrc_on"):
        r = report[k]
        out.print(f"{k}: {r['steps_per_s']} steps/s, {r['sim_requests_per_s']:,} simulated requests/s")
    out.print(f"what-if slowdown: x{report['whatif_cost_ratio']}; miss-ratio curves on top: x{report['mrc_cost_ratio']}")


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
    from cachetuner.env.sweep import cost_sweep

    fr = _parse_fractions(fractions)
    _check_policy(policy)
    report = cost_sweep(_load_cfg(config, section), fr, policy, progress=console.log)
    if json_out:
        emit_json(report)
    else:
        for row in report["workloads"]:
            out.print(f"{row['workload']}: best fraction {row['best_fraction']} (interior: {row['interior']})")


@env_app.command("info")
def env_info(config: ConfigOpt = None, section: SectionOpt = None, json_out: JsonOpt = False) -> None:
    """Observation features, action space and bounds of the configured env."""
    from cachetuner.backend import backend_facts
    from cachetuner.env import CacheTuningEnv

    cfg = _load_cfg(config, section)
    env = CacheTuningEnv(cfg)
    env.reset(seed=0)
    report = {
        "observation": env.observation_names,
        "action_space": str(env.action_space),
        "actions": env._codec.describe(),
        "bounds": list(env.bounds),
        "working_set": backend_facts(env.backend).working_set_bytes,
        "workloads": [w.label for w in cfg.workloads],
    }
    env.close()
    if json_out:
        emit_json(report)
    else:
        for k, v in report.items():
            out.print(f"{k}: {v}")
