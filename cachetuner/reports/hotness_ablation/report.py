"""Evaluation side of the hotness ablation: every trained arm on the suite's held-out traces, the
summary over training seeds, its figure, table and MLflow runs."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from cachetuner.reports.hotness_ablation.arms import (
    ARMS,
    DEFAULT_SUITE,
    EXPERIMENT,
    STATE,
    Log,
    quiet,
    read_state,
)
from cachetuner.reports.intervals import finite, t_interval


# -- evaluation on held-out traces ----------------------------------------------------------------------------
def evaluate_runs(
    runs: dict[tuple[str, int], Path], suite_path: str | Path = DEFAULT_SUITE, *, eval_seeds: Sequence[int] | None = None,
    traces: Sequence[str] | None = None, intervals: int | None = None, references: Sequence[str] = ("mrc",),
    extra_models: dict[str, str] | None = None, config_from: Path | None = None, log: Log = quiet,
) -> list[dict[str, Any]]:
    """Every run's policy (``ppo``) on each held-out suite trace x price x evaluation seed, with
    ``static-default`` and ``best-static`` run once per cell on the same traffic.

    Rows: ``{arm, seed, trace, prices, eval_seed, cost, savings_vs_default, regret}`` (regret vs best-static).
    ``references`` (controllers, e.g. ``mrc``: the rule PPO's actions are offsets of) and ``extra_models``
    (``{label: model}``, e.g. the shipped ``default`` policy) add rows with ``arm = "ref:<name>"``, ``seed = -1``.
    ``config_from``: the run folder whose config sets the env (default: the first run's)."""
    from cachetuner.agent.config import TrainConfig
    from cachetuner.control import build_controllers
    from cachetuner.control.learned import CONFIG_SIDECAR, LearnedPolicy, load_policy
    from cachetuner.control.settings import ControlSettings
    from cachetuner.errors import ConfigError
    from cachetuner.evaluation.compare import evaluate_controllers
    from cachetuner.reports.suite import SuiteConfig, _training_traces, price_label, trace_env
    from cachetuner.yamlconfig import load_model

    suite = load_model(SuiteConfig, Path(suite_path)).located(Path(suite_path))
    first = config_from or next(iter(runs.values()))
    cfg = TrainConfig.from_yaml(first / CONFIG_SIDECAR)
    policies: dict[tuple[str, int], Any] = {k: load_policy(d / "model.zip") for k, d in runs.items()}
    policies.update({(f"ref:{label}", -1): load_policy(m) for label, m in (extra_models or {}).items()})
    for art in policies.values():
        trained = _training_traces(art.raw_config)
        for t in suite.traces:
            if Path(t.trace).name in trained or t.trace in trained:
                raise ConfigError(f"{art.source}: suite trace {t.trace!r} is one of its training workloads")
    rows: list[dict[str, Any]] = []
    seeds = list(eval_seeds) if eval_seeds is not None else suite.seeds
    for tr in suite.traces:
        if traces is not None and tr.label not in traces:
            continue
        for price in suite.prices:
            for s in seeds:
                env_cfg = trace_env(cfg, tr, price, s, intervals or suite.intervals)
                t0 = time.perf_counter()
                names = ["static-default", "best-static", *[r for r in references if r not in ("static-default", "best-static")]]
                ref = evaluate_controllers(env_cfg, build_controllers(names, cfg.controllers, seed=s), seed=s)
                d_cost = ref.results["static-default"].summary["cost"]
                b_cost = ref.results["best-static"].summary["cost"]
                log(f"{tr.label}/{price_label(price)}/s{s}: references {time.perf_counter() - t0:.0f}s")
                todo: list[tuple[tuple[str, int], Any]] = [((f"ref:{n}", -1), n) for n in references]
                todo += list(policies.items())
                for (arm, seed), art in todo:
                    t1 = time.perf_counter()
                    if isinstance(art, str):
                        summ = ref.results[art].summary
                    else:
                        rep = evaluate_controllers(env_cfg, {"ppo": LearnedPolicy(ControlSettings(), seed=s, model=art)}, seed=s)
                        summ = rep.results["ppo"].summary
                    rows.append({"arm": arm, "seed": seed, "trace": tr.label, "prices": price_label(price), "eval_seed": s,
                                 "cost": summ["cost"], "hit_ratio": summ["hit_ratio"],
                                 "savings_vs_default": 1.0 - summ["cost"] / d_cost if d_cost > 0 else None,
                                 "regret": summ["cost"] / b_cost - 1.0 if b_cost > 0 else None,
                                 "default_cost": d_cost, "best_static_cost": b_cost,
                                 "seconds": time.perf_counter() - t1})
                    log(f"  {arm} s{seed}: savings {rows[-1]['savings_vs_default']:+.3%} regret {rows[-1]['regret']:+.3%} "
                        f"({rows[-1]['seconds']:.0f}s)")
    return rows


def mean_ci(xs: Sequence[float]) -> dict[str, Any]:
    """Mean and 95 % t-interval (``None`` under two values)."""
    a = finite(xs)
    if len(a) == 0:
        return {"mean": None, "ci": None, "n": 0}
    if len(a) < 2:
        return {"mean": float(a.mean()), "ci": None, "n": 1}
    ci = t_interval(a)
    return {"mean": float(a.mean()), "ci": None if ci is None else [ci[0], ci[1]], "n": int(len(a))}


def summarise(rows: list[dict[str, Any]], states: dict[tuple[str, int], dict[str, Any]]) -> dict[str, Any]:
    """Per arm: each training seed's mean over cells, then mean and 95 % interval across seeds; the
    paired difference (with - without, same seed); training wall time and steps per arm."""
    out: dict[str, Any] = {"arms": {}, "paired": {}}
    per_seed: dict[str, dict[int, dict[str, float]]] = {}
    for arm in ARMS:
        seeds = sorted({r["seed"] for r in rows if r["arm"] == arm})
        per_seed[arm] = {}
        for s in seeds:
            rs = [r for r in rows if r["arm"] == arm and r["seed"] == s]
            per_seed[arm][s] = {m: float(np.mean([r[m] for r in rs])) for m in ("savings_vs_default", "regret", "hit_ratio")}
        st = [v for (a, _s), v in states.items() if a == arm]
        out["arms"][arm] = {
            "seeds": seeds,
            **{m: mean_ci([per_seed[arm][s][m] for s in seeds]) for m in ("savings_vs_default", "regret")},
            "hit_ratio": float(np.mean([per_seed[arm][s]["hit_ratio"] for s in seeds])) if seeds else None,
            "per_seed": {str(s): per_seed[arm][s] for s in seeds},
            "train_wall_s": mean_ci([v["wall_s"] for v in st]),
            "train_steps": [int(v["steps"]) for v in st],
            "finished": [bool(v.get("finished")) for v in st],
            "stopped_early": [bool(v.get("stopped_early")) for v in st],
            "obs_dim": st[0].get("obs_dim") if st else None,
            "cells": len([r for r in rows if r["arm"] == arm]),
        }
    both = sorted(set(per_seed.get(ARMS[0], {})) & set(per_seed.get(ARMS[1], {})))
    for m in ("savings_vs_default", "regret"):
        out["paired"][m] = mean_ci([per_seed[ARMS[1]][s][m] - per_seed[ARMS[0]][s][m] for s in both])
    out["references"] = {
        arm[4:]: {m: float(np.mean([r[m] for r in rows if r["arm"] == arm])) for m in ("savings_vs_default", "regret", "hit_ratio")}
        for arm in dict.fromkeys(r["arm"] for r in rows if r["arm"].startswith("ref:"))
    }
    return out


def summary_figure(rows: list[dict[str, Any]]) -> Any:
    """Savings vs static-default per trace, one point per training seed, both arms side by side."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    traces = list(dict.fromkeys(r["trace"] for r in rows))
    fig, ax = plt.subplots(figsize=(max(6, 1.8 * len(traces)), 4))
    for j, arm in enumerate(ARMS):
        for i, t in enumerate(traces):
            seeds = sorted({r["seed"] for r in rows if r["arm"] == arm and r["trace"] == t})
            ys = [100 * float(np.mean([r["savings_vs_default"] for r in rows
                                       if r["arm"] == arm and r["trace"] == t and r["seed"] == s])) for s in seeds]
            xs = np.full(len(ys), i + (j - 0.5) * 0.3) + np.linspace(-0.05, 0.05, len(ys) or 1)[: len(ys)]
            ax.scatter(xs, ys, color=f"C{j}", label=arm if i == 0 else None, s=18)
            if ys:
                ax.hlines(np.mean(ys), i + (j - 0.5) * 0.3 - 0.1, i + (j - 0.5) * 0.3 + 0.1, color=f"C{j}")
    for k, arm in enumerate(dict.fromkeys(r["arm"] for r in rows if r["arm"].startswith("ref:"))):
        ys = [100 * float(np.mean([r["savings_vs_default"] for r in rows if r["arm"] == arm and r["trace"] == t]))
              for t in traces]
        ax.scatter(range(len(traces)), ys, marker="x", color=f"C{k + 2}", label=arm[4:], s=30, zorder=3)
    ax.set_xticks(range(len(traces)), traces)
    ax.axhline(0, color="grey", lw=0.5)
    ax.set_ylabel("savings vs static-default (%)")
    ax.set_title("PPO (general recipe) with vs without hotness features, per training seed")
    ax.legend()
    fig.tight_layout()
    return fig


def log_mlflow(
    runs: dict[tuple[str, int], Path], rows: list[dict[str, Any]], summary: dict[str, Any], *,
    tracking_uri: str | None = None, extra: dict[str, Any] | None = None,
) -> str:
    """One MLflow run per trained policy (config, state, model artifacts, its evaluation) and one
    summary run (table JSON, plot) in experiment ``hotness-ablation``; returns the summary run id."""
    import tempfile

    import mlflow

    from cachetuner.agent.train import flat_params
    from cachetuner.tracking import log_figure_png, setup_tracking

    setup_tracking(tracking_uri, experiment=EXPERIMENT)
    for (arm, seed), d in runs.items():
        st = read_state(d)
        with mlflow.start_run(run_name=f"hotness-ablation-{arm}-s{seed}"):
            import yaml

            mlflow.set_tags({"kind": "train", "arm": arm, **{k: str(v) for k, v in (extra or {}).items()}})
            mlflow.log_params(flat_params(yaml.safe_load((d / "train_config.yaml").read_text())))
            mlflow.log_metrics({"train.wall_seconds": float(st.get("wall_s", 0.0)), "train.timesteps": int(st.get("steps", 0)),
                                "train.finished": float(bool(st.get("finished"))),
                                "train.stopped_early": float(bool(st.get("stopped_early"))),
                                "obs_dim": float(st.get("obs_dim") or 0)})
            rs = [r for r in rows if r["arm"] == arm and r["seed"] == seed]
            if rs:
                mlflow.log_metrics({"eval.savings_vs_default": float(np.mean([r["savings_vs_default"] for r in rs])),
                                    "eval.regret_vs_best_static": float(np.mean([r["regret"] for r in rs]))})
            for f in ("model.zip", "train_config.yaml", "hotness.pt", STATE):
                if (d / f).is_file():
                    mlflow.log_artifact(str(d / f), artifact_path="model")
    with mlflow.start_run(run_name="hotness-ablation-summary") as run:
        mlflow.set_tags({"kind": "ablation-summary", **{k: str(v) for k, v in (extra or {}).items()}})
        for arm, a in summary["arms"].items():
            for m in ("savings_vs_default", "regret"):
                if a[m]["mean"] is not None:
                    mlflow.log_metric(f"{arm}.{m}", a[m]["mean"])
            if a["train_wall_s"]["mean"] is not None:
                mlflow.log_metric(f"{arm}.train_wall_s", a["train_wall_s"]["mean"])
        for m, v in summary["paired"].items():
            if v["mean"] is not None:
                mlflow.log_metric(f"paired_delta.{m}", v["mean"])
        with tempfile.TemporaryDirectory() as tmp:
            p = Path(tmp) / "hotness_ablation.json"
            p.write_text(json.dumps({"summary": summary, "rows": rows, **(extra or {})}, indent=1, default=str))
            mlflow.log_artifact(str(p))
        if rows:
            log_figure_png(summary_figure(rows), "hotness_ablation")
        return str(run.info.run_id)


def format_table(summary: dict[str, Any]) -> str:
    """Markdown table of :func:`summarise`'s result."""

    def pct(v: dict[str, Any]) -> str:
        if v["mean"] is None:
            return "n/a"
        ci = f" [{100 * v['ci'][0]:+.2f}, {100 * v['ci'][1]:+.2f}]" if v["ci"] else ""
        return f"{100 * v['mean']:+.2f} %{ci}"

    lines = ["| arm | obs dim | savings vs static-default (95 % CI over seeds) | regret vs best-static (95 % CI) | "
             "training wall s (mean) | steps reached |", "|---|---|---|---|---|---|"]
    for arm, a in summary["arms"].items():
        w = a["train_wall_s"]["mean"]
        lines.append(f"| {arm} | {a['obs_dim']} | {pct(a['savings_vs_default'])} | {pct(a['regret'])} | "
                     f"{'n/a' if w is None else f'{w:.0f}'} | {', '.join(f'{s:,}' for s in a['train_steps'])} |")
    p = summary["paired"]
    lines.append(f"| with - without (paired by seed) | | {pct(p['savings_vs_default'])} | {pct(p['regret'])} | | |")
    for name, r in summary.get("references", {}).items():
        lines.append(f"| reference: {name} | | {100 * r['savings_vs_default']:+.2f} % | {100 * r['regret']:+.2f} % | | |")
    return "\n".join(lines)


