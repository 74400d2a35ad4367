"""PPO with vs without hotness features, same workload, same budget, same seed.

Both arms use the agent's PPO settings (:func:`cachetuner.agent.train.build_model`) and its env
stack (``CacheTuningEnv`` + price features); the hotness arm adds :class:`HotnessFeatures` with an
in-process LSTM trained first on the same workload's trace (bucket = the env interval). Each
trained policy is then scored deterministically on the same pinned evaluation episodes. Both runs
and the summary go to MLflow (experiment ``hotness-ablation``).

This is a small-budget comparison meant to show whether the features help at equal cost, not a
converged result: it says so in its output (``timesteps``).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

from cachetuner.hotness_model.baselines import BaselineConfig
from cachetuner.hotness_model.config import TrainConfig as LSTMTrainConfig
from cachetuner.hotness_model.dataset import DatasetConfig, build_dataset
from cachetuner.hotness_model.features import HotnessFeatures
from cachetuner.hotness_model.model import LSTMConfig
from cachetuner.hotness_model.predictor import InProcessPredictor
from cachetuner.hotness_model.train import evaluate_models, train_lstm

DEFAULT_WORKLOAD = {
    "trace": "synthetic:phase-shift",
    "params": {"n_requests": 240000, "n_keys": 20000, "rate": 400.0, "n_phases": 6, "alpha": 1.0},
}


#: Memory price override for the ablation (None = the env's RewardConfig default). When memory is
#: cheap relative to misses, "grow to the upper bound" is optimal and policy and timeout stop
#: mattering (no evictions), which makes any feature comparison void.
DEFAULT_MEMORY_COST: float | None = None


def ablation_env_config(
    workload: dict[str, Any] | None = None,
    *,
    interval_s: float = 10.0,
    episode: int = 24,
    memory_cost_per_gb_hour: float | None = DEFAULT_MEMORY_COST,
) -> Any:
    from cachetuner.env import EnvConfig, RewardConfig, WorkloadSpec

    return EnvConfig(
        workloads=[WorkloadSpec(**(workload or DEFAULT_WORKLOAD))],
        interval_s=interval_s,
        episode_intervals=episode,
        warmup_intervals=2,
        reward=RewardConfig() if memory_cost_per_gb_hour is None
        else RewardConfig(memory_cost_per_gb_hour=memory_cost_per_gb_hour),
    )


def _make_env(env_cfg: Any, predictor: InProcessPredictor | None, max_keys: int) -> gym.Env:
    from stable_baselines3.common.monitor import Monitor

    from cachetuner.agent.features import PriceFeatures
    from cachetuner.env import CacheTuningEnv

    env: gym.Env = CacheTuningEnv(env_cfg)
    if predictor is not None:
        env = HotnessFeatures(env, predictor, max_keys=max_keys)
    return Monitor(PriceFeatures(env))


def _evaluate(model: Any, env: gym.Env, episodes: int, seed: int) -> dict[str, float]:
    rewards, hits, costs = [], [], []
    for ep in range(episodes):
        obs, info = env.reset(seed=seed + ep, options={"workload": 0, "start": "begin"})
        done, total, hr, cost = False, 0.0, [], 0.0
        while not done:
            action, _ = model.predict(obs, deterministic=True)
            obs, r, term, trunc, info = env.step(action)
            total += float(r)
            hr.append(info["snapshot"].hit_ratio)
            cost += float(info["cost"]["total"])
            done = bool(term or trunc)
        rewards.append(total)
        hits.append(float(np.mean(hr)))
        costs.append(cost)
    return {"episode_reward": float(np.mean(rewards)), "hit_ratio": float(np.mean(hits)), "cost_total": float(np.mean(costs))}


def run_ablation(
    *,
    timesteps: int = 3000,
    seed: int = 0,
    workload: dict[str, Any] | None = None,
    max_keys: int = 1024,
    eval_episodes: int = 2,
    memory_cost_per_gb_hour: float | None = DEFAULT_MEMORY_COST,
    tracking_uri: str | None = None,
    log: Callable[[str], None] = lambda s: None,
) -> dict[str, Any]:
    import mlflow
    import torch
    from stable_baselines3.common.vec_env import DummyVecEnv

    from cachetuner.agent.config import TrainConfig as PPOTrainConfig
    from cachetuner.agent.train import build_model
    from cachetuner.traces import read_trace
    from cachetuner.tracking import run_name, setup_tracking

    torch.set_num_threads(1)
    env_cfg = ablation_env_config(workload, memory_cost_per_gb_hour=memory_cost_per_gb_hour)
    wl = env_cfg.workloads[0]
    trace = read_trace(wl.trace, wl.format, seed=wl.seed, params=dict(wl.params))
    dcfg = DatasetConfig(bucket_s=env_cfg.interval_s, seq_len=32, horizon_buckets=1, keys_per_anchor=256,
                         eval_keys_per_anchor=2000)
    ds = build_dataset(trace, dcfg)
    log(f"hotness LSTM on {trace.name}: {len(ds.train):,} training windows")
    lstm = train_lstm(ds.train, ds.val, LSTMConfig(seq_len=32, hidden=32, layers=1),
                      LSTMTrainConfig(epochs=4, max_train_rows=15000, lr=3e-3, max_seconds=90, seed=seed))
    lstm_metrics, _ = evaluate_models(ds, lstm.model, BaselineConfig())
    predictor = InProcessPredictor(lstm.model, device="cpu")

    setup_tracking(tracking_uri, "hotness-ablation")
    ppo_cfg = PPOTrainConfig(experiment="hotness-ablation", seed=seed, total_timesteps=timesteps, n_envs=1, env=env_cfg)
    results: dict[str, Any] = {}
    for arm, pred in (("without_hotness", None), ("with_hotness", predictor)):
        log(f"PPO {arm}: {timesteps} steps")
        vec = DummyVecEnv([functools.partial(_make_env, env_cfg, pred, max_keys)])
        with mlflow.start_run(run_name=run_name("SimRedis-v0", f"hotness-ablation-{arm}", seed)):
            mlflow.log_params({"arm": arm, "timesteps": timesteps, "seed": seed, "workload": wl.trace,
                               "memory_cost_per_gb_hour": env_cfg.reward.memory_cost_per_gb_hour, "obs_dim": int(np.prod(vec.observation_space.shape or (0,))), "max_keys": max_keys})
            t0 = time.perf_counter()
            model = build_model(ppo_cfg, vec)
            model.learn(total_timesteps=timesteps)
            wall = time.perf_counter() - t0
            ev = _evaluate(model, _make_env(env_cfg, pred, max_keys), eval_episodes, seed=1000 + seed)
            mlflow.log_metrics({f"eval.{k}": v for k, v in ev.items()} | {"train.wall_seconds": wall})
            results[arm] = {**ev, "train_seconds": wall}
        vec.close()
    return {
        "workload": {"trace": wl.trace, "params": wl.params},
        "timesteps": timesteps,
        "seed": seed,
        "memory_cost_per_gb_hour": env_cfg.reward.memory_cost_per_gb_hour,
        "eval_episodes": eval_episodes,
        "hotness_lstm_vs_baselines": {k: {m: v[m] for m in ("spearman", "top10_precision")} for k, v in lstm_metrics.items()},
        **results,
        "reward_delta": results["with_hotness"]["episode_reward"] - results["without_hotness"]["episode_reward"],
    }
