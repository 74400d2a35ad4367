"""Hotness ablation: the shipped PPO recipe with vs without hotness features, several seeds, held-out traces.

Both arms train the recipe the shipped general policy was trained with (``experiments/general.yaml``:
mrc-offset actions, mrc cost-curve and price features, randomised memory prices, its 11 training
workloads, its timesteps, its periodic evaluation with early stopping and best-model selection);
the ``with_hotness`` arm adds :class:`~cachetuner.hotness_model.features.HotnessFeatures` through the
agent config's ``hotness:`` section, fed by one LSTM trained first on the recipe's *training*
workloads (never on the evaluation traces) and shared by every seed. Each trained policy is then
scored by the ``ppo`` controller on the held-out traces of an evaluation suite
(``experiments/suite.yaml``) against ``static-default`` and ``best-static`` (hindsight) on identical
traffic; per arm, savings vs static-default and regret vs best-static are averaged over traces and
evaluation seeds for each training seed, and the 95 % t-interval is taken across training seeds.

Training (:func:`train_arm`) imports neither MLflow nor anything that needs it, saves ``last.zip``
and ``state.json`` every ``checkpoint_s`` seconds, stops by itself at a wall-clock ``deadline`` and
resumes from its own checkpoint, so it can run on a borrowed machine in pieces
(``scripts/hotness_ablation_device.py`` runs every arm x seed in parallel there). MLflow logging
(:func:`log_mlflow`, experiment ``hotness-ablation``) happens where the evaluation runs.
"""

from __future__ import annotations

import functools
import json
import math
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

ARMS = ("without_hotness", "with_hotness")
DEFAULT_RECIPE = "experiments/general.yaml"
DEFAULT_SUITE = "experiments/suite.yaml"
EXPERIMENT = "hotness-ablation"
#: LSTM architecture of the features (short history: an episode is 80 intervals and history restarts at reset).
LSTM_SEQ_LEN = 16
LSTM_HIDDEN = 32

Log = Callable[[str], None]


def _quiet(_: str) -> None:
    return None


# -- configs -------------------------------------------------------------------------------------------------
def arm_config(
    recipe: str | Path,
    arm: str,
    seed: int,
    *,
    lstm_path: str | Path | None = None,
    timesteps: int | None = None,
    n_envs: int | None = None,
    vec_env: str | None = None,
    trace_prefix: tuple[str, str] | None = None,
    max_keys: int = 1024,
) -> Any:
    """The recipe's :class:`~cachetuner.agent.config.TrainConfig` for one arm and seed.

    ``trace_prefix=(old, new)`` rewrites workload paths starting with ``old`` (the device run reads
    copies of ``../shared/traces`` from a carried folder)."""
    from cachetuner.agent.config import HotnessSettings, TrainConfig
    from cachetuner.errors import ConfigError

    if arm not in ARMS:
        raise ConfigError(f"arm {arm!r}: one of {', '.join(ARMS)}")
    cfg = TrainConfig.from_yaml(recipe)
    upd: dict[str, Any] = {"seed": seed, "experiment": EXPERIMENT}
    if timesteps is not None:
        upd["total_timesteps"] = timesteps
    if n_envs is not None:
        upd["n_envs"] = n_envs
    if vec_env is not None:
        upd["vec_env"] = vec_env
    if arm == "with_hotness":
        if lstm_path is None:
            raise ConfigError("arm with_hotness needs the hotness LSTM (lstm_path)")
        upd["hotness"] = HotnessSettings(enabled=True, lstm_path=str(lstm_path), max_keys=max_keys)
    cfg = cfg.model_copy(update=upd)
    if trace_prefix is not None:
        old, new = trace_prefix

        def moved(env: Any) -> Any:
            wls = [w.model_copy(update={"trace": new + w.trace[len(old):]}) if w.trace.startswith(old) else w
                   for w in env.workloads]
            return env.model_copy(update={"workloads": wls})

        cfg = cfg.model_copy(update={"env": moved(cfg.env)})
        if cfg.eval.env is not None:
            cfg = cfg.model_copy(update={"eval": cfg.eval.model_copy(update={"env": moved(cfg.eval.env)})})
    return cfg


# -- the hotness LSTM --------------------------------------------------------------------------------------------
def train_hotness_lstm(
    cfg: Any, out_dir: str | Path, *, seed: int = 0, max_seconds: float = 120.0, epochs: int = 6,
    keys_per_anchor: int = 64, max_train_rows: int = 40000, log: Log = _quiet,
) -> Path:
    """Train the features' LSTM on a mix of ``cfg``'s *training* workloads (one bucket = one env
    interval, target = next interval's count); write ``out_dir/model.pt`` (TorchScript) and
    ``hotness.json`` (workloads, windows, validation loss, ranking metrics per workload)."""
    from cachetuner.env.sim_backend import load_workload
    from cachetuner.hotness_model.baselines import BaselineConfig
    from cachetuner.hotness_model.config import TrainConfig as LSTMTrainConfig
    from cachetuner.hotness_model.dataset import DatasetConfig, Windows, build_dataset
    from cachetuner.hotness_model.model import LSTMConfig
    from cachetuner.hotness_model.train import evaluate_models, save_model, train_lstm

    dcfg = DatasetConfig(bucket_s=cfg.env.interval_s, seq_len=LSTM_SEQ_LEN, horizon_buckets=1, min_history=4,
                         keys_per_anchor=keys_per_anchor, eval_keys_per_anchor=500, seed=seed)
    parts: dict[str, list[Windows]] = {"train": [], "val": []}
    sets = []
    t0 = time.perf_counter()
    for spec in cfg.env.workloads:
        ds = build_dataset(load_workload(spec), dcfg)
        parts["train"].append(ds.train)
        parts["val"].append(ds.val)
        sets.append((spec.name or spec.trace, ds))
        log(f"hotness LSTM data: {spec.name or spec.trace}: {len(ds.train):,} training windows")

    def cat(ws: list[Windows]) -> Windows:
        return Windows(*(np.concatenate([getattr(w, f) for w in ws]) for f in ("x", "y", "anchor", "key", "sizes")))

    res = train_lstm(cat(parts["train"]), cat(parts["val"]), LSTMConfig(seq_len=LSTM_SEQ_LEN, hidden=LSTM_HIDDEN, layers=1),
                     LSTMTrainConfig(epochs=epochs, max_train_rows=max_train_rows, lr=3e-3, max_seconds=max_seconds, seed=seed))
    metrics = {}
    for name, ds in sets:
        m, _ = evaluate_models(ds, res.model, BaselineConfig())
        metrics[name] = {k: {q: float(v[q]) for q in ("spearman", "top10_precision") if q in v} for k, v in m.items()}
    meta = {"workloads": [s.name or s.trace for s in cfg.env.workloads], "seq_len": LSTM_SEQ_LEN, "hidden": LSTM_HIDDEN,
            "bucket_s": cfg.env.interval_s, "horizon_buckets": 1, "history": res.history,
            "seconds": time.perf_counter() - t0, "test_metrics": metrics}
    path = save_model(res.model, out_dir, meta)
    log(f"hotness LSTM: {path} ({meta['seconds']:.0f}s, val loss {res.history[-1]['val_loss']:.4f})")
    return path


# -- training one arm (no MLflow; resumable) ------------------------------------------------------------------
STATE = "state.json"


def _read_state(out_dir: Path) -> dict[str, Any]:
    p = out_dir / STATE
    return json.loads(p.read_text()) if p.is_file() else {}


def train_arm(
    cfg: Any,
    out_dir: str | Path,
    *,
    deadline: float | None = None,
    checkpoint_s: float = 60.0,
    start_method: str | None = "fork",
    log: Log = _quiet,
) -> dict[str, Any]:
    """Train ``cfg`` as :func:`cachetuner.agent.train.train` does (same model, periodic evaluation, early
    stopping, best model kept) without MLflow; resume from ``out_dir`` if it holds a checkpoint.

    ``deadline`` (``time.time()``) stops training by itself; ``last.zip`` + ``state.json`` are written
    every ``checkpoint_s`` seconds and at the end, and ``model.zip`` (the best evaluated model, else the
    last) + ``train_config.yaml`` (+ ``hotness.pt``) form a policy artifact the ``ppo`` controller loads.
    Returns the state: ``steps``, ``finished``, ``stopped_early``, ``wall_s`` (summed over resumptions)."""
    import yaml
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import (
        BaseCallback,
        CallbackList,
        EvalCallback,
        StopTrainingOnNoModelImprovement,
    )
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    from cachetuner.agent.train import (
        CONFIG_SIDECAR,
        build_model,
        check_hotness,
        make_env,
        one_thread,
        resolved_config,
    )

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    one_thread()
    check_hotness(cfg.hotness)
    state = _read_state(out)
    piece = int(state.get("pieces", 0))  # earlier pieces of this training (resumptions)
    if state.get("finished"):
        log(f"{out.name}: already finished ({state['steps']} steps)")
        return state
    (out / CONFIG_SIDECAR).write_text(yaml.safe_dump(resolved_config(cfg, out), sort_keys=False))
    vec_cls: Any
    if cfg.vec_env == "subproc":
        vec_cls, vec_kwargs = SubprocVecEnv, ({"start_method": start_method} if start_method else {})
    else:
        vec_cls, vec_kwargs = DummyVecEnv, {}
    train_env = make_vec_env(functools.partial(make_env, cfg.env, False, cfg.price_features, cfg.hotness),
                             n_envs=cfg.n_envs, seed=cfg.seed + 1000 * piece,
                             vec_env_cls=vec_cls, vec_env_kwargs=vec_kwargs)
    eval_cfg = cfg.eval_env_config()
    eval_env = DummyVecEnv([functools.partial(make_env, eval_cfg, True, cfg.price_features, cfg.hotness)])
    t_start = time.time()
    wall0 = float(state.get("wall_s", 0.0))
    try:
        resumed = bool(state) and (out / "last.zip").is_file()
        model = PPO.load(out / "last.zip", env=train_env, device="cpu") if resumed else build_model(cfg, train_env)
        done = int(model.num_timesteps) if resumed else 0
        remaining = cfg.total_timesteps - done
        stop = (StopTrainingOnNoModelImprovement(cfg.early_stop.max_no_improvement_evals, cfg.early_stop.min_evals)
                if cfg.eval.enabled and cfg.early_stop.enabled else None)
        eval_cb = EvalCallback(eval_env, callback_after_eval=stop, n_eval_episodes=max(len(eval_cfg.workloads), 1),
                               eval_freq=max(cfg.eval.eval_freq // cfg.n_envs, 1), best_model_save_path=str(out),
                               deterministic=cfg.eval.deterministic, verbose=0) if cfg.eval.enabled else None
        if eval_cb is not None and resumed:
            eval_cb.best_mean_reward = float(state.get("best_mean_reward", -np.inf))
            if stop is not None:
                stop.last_best_mean_reward = eval_cb.best_mean_reward
                stop.no_improvement_evals = int(state.get("no_improvement_evals", 0))
                stop.n_calls = int(state.get("evals", 0))
        flags = {"deadline": False}

        def snapshot(finished: bool) -> dict[str, Any]:
            model.save(out / "last.zip")
            st = {
                "steps": int(model.num_timesteps), "total_timesteps": cfg.total_timesteps,
                "wall_s": wall0 + time.time() - t_start, "finished": finished,
                "stopped_early": finished and int(model.num_timesteps) < cfg.total_timesteps,
                "hit_deadline": flags["deadline"], "pieces": piece + 1,
                "best_mean_reward": float(eval_cb.best_mean_reward) if eval_cb is not None else None,
                "evals": int(stop.n_calls) if stop is not None else None,
                "no_improvement_evals": int(stop.no_improvement_evals) if stop is not None else None,
                "obs_dim": int(np.prod(train_env.observation_space.shape or (0,))),
            }
            (out / STATE).write_text(json.dumps(st, indent=1))
            return st

        class Clock(BaseCallback):
            def __init__(self) -> None:
                super().__init__()
                self.last = time.time()

            def _on_step(self) -> bool:
                now = time.time()
                if now - self.last >= checkpoint_s:
                    self.last = now
                    st = snapshot(False)
                    log(f"{out.name}: {st['steps']:,} steps, {st['wall_s']:.0f}s")
                if deadline is not None and now >= deadline:
                    flags["deadline"] = True
                    return False
                return True

        cbs: list[Any] = [Clock()] + ([eval_cb] if eval_cb is not None else [])
        if remaining > 0:
            model.learn(total_timesteps=remaining, callback=CallbackList(cbs), reset_num_timesteps=not resumed)
        finished = not flags["deadline"]
        st = snapshot(finished)
        best = out / "best_model.zip"
        shutil.copyfile(best if best.is_file() else out / "last.zip", out / "model.zip")
        st["model"] = "best_model" if best.is_file() else "last"
        (out / STATE).write_text(json.dumps(st, indent=1))
        log(f"{out.name}: {'finished' if finished else 'stopped at the deadline'} at {st['steps']:,} steps, {st['wall_s']:.0f}s")
        return st
    finally:
        train_env.close()
        eval_env.close()


def run_dir(root: str | Path, arm: str, seed: int) -> Path:
    return Path(root) / f"{arm}_s{seed}"


# -- evaluation on held-out traces ----------------------------------------------------------------------------
def evaluate_runs(
    runs: dict[tuple[str, int], Path], suite_path: str | Path = DEFAULT_SUITE, *, eval_seeds: Sequence[int] | None = None,
    traces: Sequence[str] | None = None, intervals: int | None = None, references: Sequence[str] = ("mrc",),
    extra_models: dict[str, str] | None = None, config_from: Path | None = None, log: Log = _quiet,
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
    from cachetuner.reports.evaluate import evaluation_env
    from cachetuner.reports.suite import SuiteConfig, _training_traces
    from cachetuner.yamlconfig import load_model

    suite = load_model(SuiteConfig, suite_path)
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
                env_cfg, _ = evaluation_env(cfg, trace=tr.trace, fmt=tr.format, size_model=tr.size_model, rate=tr.rate,
                                            seed=s, limit=tr.limit, intervals=intervals or suite.intervals, prices=price)
                t0 = time.perf_counter()
                names = ["static-default", "best-static", *[r for r in references if r not in ("static-default", "best-static")]]
                ref = evaluate_controllers(env_cfg, build_controllers(names, cfg.controllers, seed=s), seed=s)
                d_cost = ref.results["static-default"].summary["cost"]
                b_cost = ref.results["best-static"].summary["cost"]
                log(f"{tr.label}/{price}/s{s}: references {time.perf_counter() - t0:.0f}s")
                todo: list[tuple[tuple[str, int], Any]] = [((f"ref:{n}", -1), n) for n in references]
                todo += list(policies.items())
                for (arm, seed), art in todo:
                    t1 = time.perf_counter()
                    if isinstance(art, str):
                        summ = ref.results[art].summary
                    else:
                        rep = evaluate_controllers(env_cfg, {"ppo": LearnedPolicy(ControlSettings(), seed=s, model=art)}, seed=s)
                        summ = rep.results["ppo"].summary
                    rows.append({"arm": arm, "seed": seed, "trace": tr.label, "prices": price, "eval_seed": s,
                                 "cost": summ["cost"], "hit_ratio": summ["hit_ratio"],
                                 "savings_vs_default": 1.0 - summ["cost"] / d_cost if d_cost > 0 else None,
                                 "regret": summ["cost"] / b_cost - 1.0 if b_cost > 0 else None,
                                 "default_cost": d_cost, "best_static_cost": b_cost,
                                 "seconds": time.perf_counter() - t1})
                    log(f"  {arm} s{seed}: savings {rows[-1]['savings_vs_default']:+.3%} regret {rows[-1]['regret']:+.3%} "
                        f"({rows[-1]['seconds']:.0f}s)")
    return rows


def _t95(n: int) -> float:
    table = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}
    return table.get(n, 1.96 if n > 30 else 2.2)


def mean_ci(xs: Sequence[float]) -> dict[str, Any]:
    """Mean and 95 % t-interval (``None`` under two values)."""
    a = np.asarray([x for x in xs if x is not None and math.isfinite(x)], float)
    if len(a) == 0:
        return {"mean": None, "ci": None, "n": 0}
    if len(a) < 2:
        return {"mean": float(a.mean()), "ci": None, "n": 1}
    half = _t95(len(a) - 1) * a.std(ddof=1) / math.sqrt(len(a))
    return {"mean": float(a.mean()), "ci": [float(a.mean() - half), float(a.mean() + half)], "n": int(len(a))}


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
        st = _read_state(d)
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


# -- the whole ablation, locally -----------------------------------------------------------------------------
def run_ablation(
    *,
    recipe: str | Path = DEFAULT_RECIPE,
    seeds: Sequence[int] = (0, 1, 2, 3),
    timesteps: int | None = None,
    out_dir: str | Path = "runs/hotness-ablation",
    suite: str | Path = DEFAULT_SUITE,
    eval_seeds: Sequence[int] | None = (0,),
    traces: Sequence[str] | None = None,
    intervals: int | None = None,
    lstm_path: str | Path | None = None,
    train: bool = True,
    n_envs: int | None = None,
    vec_env: str | None = None,
    tracking_uri: str | None = None,
    shipped: bool = True,
    log: Log = _quiet,
) -> dict[str, Any]:
    """Train (or, with ``train=False``, reuse) both arms x ``seeds`` under ``out_dir``, evaluate them on
    the suite's held-out traces (with the mrc controller and, ``shipped``, the shipped general policy as
    references), log to MLflow; ``{"summary", "rows", "table", ...}``.

    Arms are trained in turn here (slow: the recipe is ~14 core-minutes per arm and seed on this kind
    of machine); a run already finished under ``out_dir`` is reused, an unfinished one resumed."""
    root = Path(out_dir)
    root.mkdir(parents=True, exist_ok=True)
    if lstm_path is None and train:
        lstm_path = root / "lstm" / "model.pt"
        if not Path(lstm_path).is_file():
            train_hotness_lstm(arm_config(recipe, "without_hotness", 0), root / "lstm", log=log)
    runs: dict[tuple[str, int], Path] = {}
    for seed in seeds:
        for arm in ARMS:
            d = run_dir(root, arm, seed)
            runs[(arm, seed)] = d
            if train:
                cfg = arm_config(recipe, arm, seed, lstm_path=lstm_path, timesteps=timesteps, n_envs=n_envs, vec_env=vec_env)
                train_arm(cfg, d, log=log)
    states = {k: _read_state(d) for k, d in runs.items()}
    rows = evaluate_runs(runs, suite, eval_seeds=eval_seeds, traces=traces, intervals=intervals, references=("mrc",),
                         extra_models={"shipped-general": "default"} if shipped else None, log=log)
    summary = summarise(rows, states)
    extra = {"recipe": str(recipe), "suite": str(suite), "eval_seeds": list(eval_seeds or []),
             "regret_reference": "best-static"}
    run_id = log_mlflow(runs, rows, summary, tracking_uri=tracking_uri, extra=extra)
    return {"summary": summary, "rows": rows, "table": format_table(summary), "states": {f"{a}_s{s}": v for (a, s), v in states.items()},
            "mlflow_run_id": run_id, **extra}


def resave_numpy2_models(root: str | Path, log: Log = _quiet) -> list[Path]:
    """Re-save ``model.zip`` / ``best_model.zip`` / ``last.zip`` under ``root`` written with numpy 2 (a
    device machine) so that numpy 1 loads them: SB3 pickles the spaces with numpy 2's ``numpy._core``
    module paths, which numpy 1 lacks. The weights are untouched (a torch state dict); the originals
    are kept as ``*.np2.zip``. Does nothing under numpy 2."""
    import sys

    if int(np.__version__.split(".")[0]) >= 2:
        return []
    import numpy.core
    import numpy.core.multiarray
    import numpy.core.numeric
    from stable_baselines3 import PPO

    aliases = {"numpy._core": numpy.core, "numpy._core.numeric": numpy.core.numeric,
               "numpy._core.multiarray": numpy.core.multiarray}
    added = [k for k in aliases if k not in sys.modules]
    sys.modules.update({k: aliases[k] for k in added})
    done: list[Path] = []
    cache: dict[Path, dict[str, Any]] = {}

    def _spaces(d: Path) -> dict[str, Any]:
        # the pickled spaces carry numpy 2 random generators: rebuild them from the run's config
        if d not in cache:
            from cachetuner.agent.config import HotnessSettings, TrainConfig
            from cachetuner.agent.train import CONFIG_SIDECAR, make_env

            cfg = TrainConfig.from_yaml(d / CONFIG_SIDECAR)
            h = cfg.hotness
            if h.enabled:
                h = HotnessSettings(**{**h.model_dump(), "lstm_path": str(d / str(h.lstm_path))})
            env = make_env(cfg.env, False, cfg.price_features, h)
            cache[d] = {"observation_space": env.observation_space, "action_space": env.action_space}
            env.close()
        return cache[d]

    try:
        for p in sorted(Path(root).rglob("*.zip")):
            if p.name.endswith(".np2.zip") or p.with_suffix(".np2.zip").exists():
                continue
            spaces = _spaces(p.parent)
            model = PPO.load(p, device="cpu", custom_objects=spaces)
            shutil.copyfile(p, p.with_suffix(".np2.zip"))
            model.save(p)
            done.append(p)
            log(f"re-saved {p} for numpy {np.__version__}")
    finally:
        for k in added:
            sys.modules.pop(k, None)
    return done
