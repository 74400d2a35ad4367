"""Training side of the hotness ablation: the two arms' configs, the shared hotness LSTM, one arm's
resumable training (no MLflow: it runs on borrowed machines too), and re-saving models a numpy-2
machine wrote."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
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


def quiet(_: str) -> None:
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
    from cachetuner.agent.config import TrainConfig
    from cachetuner.errors import ConfigError
    from cachetuner.hotness_model.settings import HotnessSettings

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
    keys_per_anchor: int = 64, max_train_rows: int = 40000, log: Log = quiet,
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


def read_state(out_dir: Path) -> dict[str, Any]:
    p = out_dir / STATE
    return json.loads(p.read_text()) if p.is_file() else {}


def train_arm(
    cfg: Any,
    out_dir: str | Path,
    *,
    deadline: float | None = None,
    checkpoint_s: float = 60.0,
    start_method: str | None = "fork",
    log: Log = quiet,
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
    from stable_baselines3.common.logger import Logger
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    from cachetuner.agent.train import (
        CONFIG_SIDECAR,
        build_model,
        check_hotness,
        env_factory,
        one_thread,
        resolved_config,
    )

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    one_thread()
    check_hotness(cfg.hotness)
    state = read_state(out)
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
    train_env = make_vec_env(env_factory(cfg, cfg.env),
                             n_envs=cfg.n_envs, seed=cfg.seed + 1000 * piece,
                             vec_env_cls=vec_cls, vec_env_kwargs=vec_kwargs)
    eval_cfg = cfg.eval_env_config()
    eval_env = DummyVecEnv([env_factory(cfg, eval_cfg, pinned=True)])
    t_start = time.time()
    wall0 = float(state.get("wall_s", 0.0))
    try:
        resumed = bool(state) and (out / "last.zip").is_file()
        model = PPO.load(out / "last.zip", env=train_env, device="cpu") if resumed else build_model(cfg, train_env)
        # no SB3 logger of its own: SB3 would make an empty /tmp/SB3-<time> folder for every arm (progress is Clock's)
        model.set_logger(Logger(folder=None, output_formats=[]))
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



def resave_numpy2_models(root: str | Path, log: Log = quiet) -> list[Path]:
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
            from cachetuner.agent.config import TrainConfig
            from cachetuner.agent.train import CONFIG_SIDECAR, env_factory
            from cachetuner.hotness_model.settings import HotnessSettings

            cfg = TrainConfig.from_yaml(d / CONFIG_SIDECAR)
            h = cfg.hotness
            if h.enabled:
                h = HotnessSettings(**{**h.model_dump(), "lstm_path": str(d / str(h.lstm_path))})
            env = env_factory(cfg, cfg.env, hotness=h)()
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
