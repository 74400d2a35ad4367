"""The live env on the local stack: registered id, and a short PPO evaluation episode from one call."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import pytest

import cachetuner.env  # noqa: F401  (registers the ids)
from cachetuner.live.backend import LiveRedisBackend
from cachetuner.live.live_eval import live_eval
from cachetuner.live.stack import LocalStack
from cachetuner.traces import read_trace


@pytest.fixture(scope="module")
def tiny_ppo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny SB3 PPO trained on the default simulated env (same observation/action spaces as live)."""
    import torch
    from stable_baselines3 import PPO

    from cachetuner.env import make_sim_env

    torch.set_num_threads(1)
    model = PPO("MlpPolicy", make_sim_env(), n_steps=16, batch_size=16, n_epochs=1, seed=0, device="cpu")
    model.learn(16)
    path = tmp_path_factory.mktemp("ppo") / "tiny_ppo.zip"
    model.save(path)
    # a policy is model.zip + its training config: the default env, no price features
    (path.parent / "train_config.yaml").write_text("env: {}\nprice_features: false\n")
    return path


def test_registered_live_id(live_stack: LocalStack) -> None:
    env = gym.make("CacheTuner/LiveRedis-v0", stack_dir=str(live_stack.dir), interval_s=2.0)
    try:
        assert isinstance(env.unwrapped.backend, LiveRedisBackend)
        lo, hi = env.unwrapped.bounds
        assert 0 < lo < hi
    finally:
        env.close()


def test_live_eval_episode(live_stack: LocalStack, tiny_ppo: Path) -> None:
    trace = read_trace("bundled:web07", size_model="fixed:500")
    res = live_eval(str(tiny_ppo), trace, intervals=3, interval_s=2.0, rate=2000, stack_dir=str(live_stack.dir))
    assert res["intervals"] == 3
    rows = res["rows"]
    assert sum(not r["stale"] for r in rows) >= 2
    assert any(r["requests"] > 0 for r in rows)
    assert all(r["apply_ok"] in (None, True) for r in rows), rows
    assert res["replay"]["stopped_by"] == "stop"
