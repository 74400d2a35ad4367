"""PPO training on the cache-tuning env, top to bottom (CleanRL-style readability, SB3 doing the work).

``train(cfg)``: build ``n_envs`` vectorised envs, a pinned evaluation env, SB3's checkpoint /
evaluation / early-stopping callbacks plus our MLflow and progress callbacks; learn; save the best
(else the last) model next to the resolved config; log config, metrics, model and plots of one
deterministic evaluation episode to MLflow.
"""

from __future__ import annotations

import functools
import json
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np
import yaml
from rich.console import Console

from cachetuner.agent.config import TrainConfig
from cachetuner.control.learned import CONFIG_SIDECAR, one_thread
from cachetuner.env import CacheTuningEnv, EnvConfig
from cachetuner.hotness_model.settings import HotnessSettings

if TYPE_CHECKING:
    from sb3_contrib import RecurrentPPO
    from stable_baselines3 import PPO

__all__ = ["CONFIG_SIDECAR", "TrainResult", "env_factory", "make_env", "one_thread", "train"]


class PinnedResets(gym.Wrapper):
    """Reset on the workloads in turn, each from its beginning, so evaluations see the same traffic.

    Without options the env would draw a random workload and window, and successive evaluations of
    the same policy would differ by their traffic rather than by the policy.
    """

    def __init__(self, env: gym.Env, n_workloads: int) -> None:
        super().__init__(env)
        self.n_workloads = max(n_workloads, 1)
        self.count = 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict]:
        w = self.count % self.n_workloads
        self.count += 1
        return self.env.reset(seed=seed, options={"workload": w, "start": "begin", **(options or {})})


def make_env(
    env_cfg: EnvConfig, pinned: bool = False, price_features: bool = True, hotness: HotnessSettings | None = None,
    price_load: str | None = None,
) -> gym.Env:
    """Env factory (module level so that SubprocVecEnv can pickle it); sets one torch thread per process.

    Observation: the env's, then the hotness features (when ``hotness.enabled``), then the price
    features (divided by the GETs ``price_load`` names: ``controllers.ppo.price_load``, the interval's by
    default): the order the ``ppo`` controller rebuilds them in."""
    from stable_baselines3.common.monitor import Monitor

    from cachetuner.agent.features import PriceFeatures

    one_thread()
    env: gym.Env = CacheTuningEnv(env_cfg)
    if hotness is not None and hotness.enabled:
        from cachetuner.hotness_model.features import HotnessFeatures
        from cachetuner.hotness_model.predictor import InProcessPredictor

        assert hotness.lstm_path is not None
        env = HotnessFeatures(env, InProcessPredictor(hotness.lstm_path, device="cpu"), **hotness.options())  # type: ignore[arg-type]
    if price_features:
        env = PriceFeatures(env, price_load or "interval")
    if pinned:
        env = PinnedResets(env, len(env_cfg.workloads))
    return Monitor(env)


def env_factory(
    cfg: TrainConfig, env_cfg: EnvConfig, pinned: bool = False, hotness: HotnessSettings | None = None
) -> Callable[[], gym.Env]:
    """:func:`make_env` with a training config's observation settings (price features, hotness, ``ppo.price_load``),
    as a picklable factory for a vectorised env; ``hotness`` overrides the config's (a copy with its model path
    resolved)."""
    return functools.partial(make_env, env_cfg, pinned, cfg.price_features, cfg.hotness if hotness is None else hotness,
                             cfg.controllers.ppo.price_load)


def env_label(env: gym.Env) -> str:
    """Registered-id style name for run names: the action space tells the variants apart."""
    space = getattr(env.unwrapped, "cfg", None)
    kind = space.actions.space if space is not None else ""
    if kind == "mrc-offset":
        return "SimRedisMRC-v0"
    return "SimRedisDiscrete-v0" if isinstance(env.action_space, gym.spaces.Discrete) else "SimRedis-v0"


def flat_params(obj: Any, prefix: str = "") -> dict[str, str]:
    """Dotted-key view of a nested config for ``mlflow.log_params`` (values truncated to MLflow's limit)."""
    out: dict[str, str] = {}
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.update(flat_params(v, f"{prefix}{k}."))
    elif isinstance(obj, list) and any(isinstance(v, dict) for v in obj):
        for i, v in enumerate(obj):
            out.update(flat_params(v, f"{prefix}{i}."))
    else:
        out[prefix.rstrip(".")] = json.dumps(obj)[:6000] if not isinstance(obj, str) else obj[:6000]
    return out


#: The hotness LSTM's copy beside a policy's model.zip (named by its train_config.yaml).
HOTNESS_SIDECAR = "hotness.pt"


def check_hotness(h: HotnessSettings) -> None:
    if h.enabled and not (h.lstm_path and Path(h.lstm_path).is_file()):
        from cachetuner.errors import ConfigError

        raise ConfigError(f"hotness.lstm_path: {h.lstm_path} not found (a model.pt from cachetuner hotness train)")


def resolved_config(cfg: TrainConfig, out_dir: Path) -> dict[str, Any]:
    """The config saved beside the model; with hotness features the LSTM is copied into ``out_dir`` and
    the saved config names that copy (so the artifact is self-contained)."""
    import shutil

    resolved = cfg.model_dump(mode="json")
    if cfg.hotness.enabled:
        assert cfg.hotness.lstm_path is not None
        dst = out_dir / HOTNESS_SIDECAR
        if Path(cfg.hotness.lstm_path).resolve() != dst.resolve():
            shutil.copyfile(cfg.hotness.lstm_path, dst)
        resolved["hotness"]["lstm_path"] = HOTNESS_SIDECAR
    return resolved


@dataclass
class TrainResult:
    run_id: str
    model_path: Path
    run_name: str
    timesteps: int
    stopped_early: bool
    final_eval: dict[str, float]


def build_model(cfg: TrainConfig, vec_env: Any) -> Any:
    import torch

    p = cfg.ppo
    algo: type[PPO] | type[RecurrentPPO]
    if p.policy == "lstm":
        from sb3_contrib import RecurrentPPO as algo

        policy = "MlpLstmPolicy"
    else:
        from stable_baselines3 import PPO as algo

        policy = "MlpPolicy"
    model = algo(
        policy,
        vec_env,
        learning_rate=p.learning_rate,
        n_steps=p.n_steps,
        batch_size=p.batch_size,
        n_epochs=p.n_epochs,
        gamma=p.gamma,
        gae_lambda=p.gae_lambda,
        clip_range=p.clip_range,
        ent_coef=p.ent_coef,
        vf_coef=p.vf_coef,
        max_grad_norm=p.max_grad_norm,
        target_kl=p.target_kl,
        normalize_advantage=p.normalize_advantage,
        policy_kwargs={
            "net_arch": list(p.net_arch),
            "activation_fn": {"tanh": torch.nn.Tanh, "relu": torch.nn.ReLU}[p.activation],
        },
        seed=cfg.seed,
        device="cpu",
        verbose=0,
    )
    if p.init_action is not None:
        from cachetuner.errors import ConfigError

        try:
            bias_toward(model, p.init_action)
        except ConfigError as e:  # say which action space, and where it came from
            where = "given in env.actions" if "env" in cfg.model_fields_set else "the default: the config has no env: section"
            raise ConfigError(f"{e} (env.actions.space {cfg.env.actions.space!r}, {where})") from None
    return model


def bias_toward(model: Any, action: int, logit: float = 3.0) -> None:
    """Make ``action`` the initial policy's preferred one (a residual start: with ``mrc-offset`` the
    policy begins as the mrc controller and learns where to deviate). Discrete action spaces only."""
    import gymnasium as gym
    import torch

    space = model.action_space
    if not isinstance(space, gym.spaces.Discrete) or not 0 <= action < space.n:
        from cachetuner.errors import ConfigError

        raise ConfigError(f"ppo.init_action: {action} is not an action of {space}")
    with torch.no_grad():
        model.policy.action_net.bias.zero_()
        model.policy.action_net.bias[action] = logit


def train(
    cfg: TrainConfig,
    *,
    tracking_uri: str | None = None,
    config_path: str | Path | None = None,
    console: Console | None = None,
    parent_run_id: str | None = None,
    run_tags: dict[str, str] | None = None,
    log_outputs: Sequence[Any] = (),
) -> TrainResult:
    """Train PPO as ``cfg`` says and record the run in MLflow (see module docstring).

    For sweeps (:mod:`cachetuner.sweep`): ``parent_run_id`` makes the run a child of that MLflow run,
    ``run_tags`` are added to its tags, and ``log_outputs`` (SB3 ``KVWriter``) receive every logger
    dump next to MLflow's, e.g. ``eval/mean_reward`` after each evaluation."""
    import mlflow
    from stable_baselines3.common.callbacks import (
        CallbackList,
        CheckpointCallback,
        EvalCallback,
        StopTrainingOnNoModelImprovement,
    )
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.logger import Logger
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    from cachetuner.agent.callbacks import MLflowOutputFormat, RichProgressCallback, RolloutMetricsCallback
    from cachetuner.outputs import claim_dir
    from cachetuner.tracking import run_name as make_run_name
    from cachetuner.tracking import setup_tracking

    one_thread()
    console = console or Console(stderr=True)
    vec_cls = SubprocVecEnv if cfg.vec_env == "subproc" else DummyVecEnv
    check_hotness(cfg.hotness)
    train_env = make_vec_env(
        env_factory(cfg, cfg.env), n_envs=cfg.n_envs, seed=cfg.seed,
        vec_env_cls=vec_cls,
    )
    eval_cfg = cfg.eval_env_config()
    eval_env = DummyVecEnv([env_factory(cfg, eval_cfg, pinned=True)])
    label = env_label(eval_env.envs[0])
    out_dir = claim_dir(cfg.output_dir, make_run_name(label, cfg.experiment, cfg.seed))  # never shared (see claim_dir)
    name = out_dir.name
    resolved = resolved_config(cfg, out_dir)
    (out_dir / CONFIG_SIDECAR).write_text(yaml.safe_dump(resolved, sort_keys=False))

    setup_tracking(tracking_uri, experiment=cfg.experiment)
    try:
        with mlflow.start_run(run_name=name, parent_run_id=parent_run_id) as run:
            mlflow.set_tags({"env_id": f"CacheTuner/{label}", "kind": "train", **(run_tags or {})})
            mlflow.log_params(flat_params(resolved))
            mlflow.log_artifact(str(out_dir / CONFIG_SIDECAR), artifact_path="config")
            if config_path is not None:
                mlflow.log_artifact(str(config_path), artifact_path="config")

            _log_reference_rewards(eval_cfg, cfg)
            model = build_model(cfg, train_env)
            model.set_logger(Logger(folder=None, output_formats=[MLflowOutputFormat(), *log_outputs]))
            callbacks: list[Any] = [RolloutMetricsCallback(), RichProgressCallback(cfg.total_timesteps, console)]
            if cfg.checkpoint_freq:
                callbacks.append(
                    CheckpointCallback(max(cfg.checkpoint_freq // cfg.n_envs, 1), str(out_dir / "checkpoints"), "ppo")
                )
            eval_cb: EvalCallback | None = None
            if cfg.eval.enabled:
                stop = (
                    StopTrainingOnNoModelImprovement(cfg.early_stop.max_no_improvement_evals, cfg.early_stop.min_evals)
                    if cfg.early_stop.enabled
                    else None
                )
                eval_cb = EvalCallback(
                    eval_env,
                    callback_after_eval=stop,
                    n_eval_episodes=max(len(eval_cfg.workloads), 1),
                    eval_freq=max(cfg.eval.eval_freq // cfg.n_envs, 1),
                    best_model_save_path=str(out_dir),
                    deterministic=cfg.eval.deterministic,
                    verbose=0,
                )
                callbacks.append(eval_cb)
            t0 = time.perf_counter()
            model.learn(total_timesteps=cfg.total_timesteps, callback=CallbackList(callbacks))
            wall = time.perf_counter() - t0
            trained_steps = int(model.num_timesteps)
            stopped_early = trained_steps < cfg.total_timesteps

            model_path = out_dir / "model.zip"
            best = out_dir / "best_model.zip"
            if best.is_file():
                model = type(model).load(best, device="cpu")
            model.save(model_path)
            mlflow.log_artifact(str(model_path), artifact_path="model")
            mlflow.set_tag("model_path", str(model_path.resolve()))
            mlflow.log_metrics(
                {
                    "train.wall_seconds": wall,
                    "train.timesteps": trained_steps,
                    "train.saved_model_timesteps": int(model.num_timesteps),
                    "train.stopped_early": stopped_early,
                }
            )
            _measure_support(cfg, out_dir, resolved)
            final_eval = _log_final_episode(model_path, eval_cfg, cfg, label)
            return TrainResult(run.info.run_id, model_path.resolve(), name, trained_steps, stopped_early, final_eval)
    finally:
        train_env.close()
        eval_env.close()


def _measure_support(cfg: TrainConfig, out_dir: Path, resolved: dict[str, Any]) -> None:
    """Write the saved policy's price-feature range into its ``train_config.yaml`` (``controllers.ppo.price_support``)
    and log it (``support.price_low`` / ``support.price_high``), so that every trained policy carries what
    ``defer_outside`` needs. Skipped without price features, with ``support_episodes: 0``, or when the recipe sets
    the range itself."""
    import mlflow

    from cachetuner.agent.support import price_feature_samples, price_support
    from cachetuner.control.learned import load_policy

    if not cfg.price_features or cfg.support_episodes == 0 or cfg.controllers.ppo.price_support is not None:
        return
    art = load_policy(out_dir / "model.zip")
    res = price_support(price_feature_samples(art, episodes=cfg.support_episodes, seed=cfg.seed + 1000))
    if res["price_support"] is None:
        return
    lo, hi = res["price_support"]
    resolved.setdefault("controllers", {}).setdefault("ppo", {})["price_support"] = [lo, hi]
    (out_dir / CONFIG_SIDECAR).write_text(yaml.safe_dump(resolved, sort_keys=False))
    mlflow.log_artifact(str(out_dir / CONFIG_SIDECAR), artifact_path="config")
    mlflow.log_metrics({"support.price_low": lo, "support.price_high": hi, "support.decisions": res["decisions"]})


def _log_reference_rewards(eval_cfg: EnvConfig, cfg: TrainConfig) -> None:
    """``eval.reference.<tuner>``: what static-default and mrc score on the evaluation episodes, on
    the same scale as SB3's ``eval/mean_reward`` (episode reward summed, averaged over the workloads),
    so that a learning curve can be read against them."""
    import mlflow

    from cachetuner.control import build_controllers
    from cachetuner.evaluation import evaluate_controllers

    for name in ("static-default", "mrc"):
        totals = []
        for w in range(len(eval_cfg.workloads)):
            rep = evaluate_controllers(
                eval_cfg, build_controllers([name], cfg.controllers, seed=cfg.seed), seed=cfg.seed, workload=w
            )
            totals.append(sum(r.reward for r in rep.results[name].records))
        mlflow.log_metric(f"eval.reference.{name}", float(np.mean(totals)), step=0)


def _log_final_episode(model_path: Path, eval_cfg: EnvConfig, cfg: TrainConfig, label: str) -> dict[str, float]:
    """One deterministic episode of the saved model (and static-default for reference) on the first
    evaluation workload: summary metrics plus the hit-ratio / memory / policy / cost plots."""
    import mlflow

    from cachetuner.agent.plots import episode_figures
    from cachetuner.control import build_controllers
    from cachetuner.evaluation import evaluate_controllers
    from cachetuner.tracking import log_figure_png

    controllers = build_controllers(["ppo", "mrc", "static-default"], cfg.controllers, seed=cfg.seed, model=model_path)
    report = evaluate_controllers(eval_cfg, controllers, seed=cfg.seed, workload=0)
    metrics = {f"final_eval.{t}.{k}": float(v) for t, r in report.results.items() for k, v in r.summary.items()
               if isinstance(v, int | float) and not isinstance(v, bool)}
    mlflow.log_metrics(metrics)
    for key, fig in episode_figures({k: r.records for k, r in report.results.items()}, title=label).items():
        log_figure_png(fig, f"eval_{key}")
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "final_eval.json"
        p.write_text(json.dumps({"summary": report.to_json(), "records": report.records_json()}))
        mlflow.log_artifact(str(p), artifact_path="eval")
    return report.results["ppo"].summary
