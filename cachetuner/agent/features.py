"""Price features appended to the env's observation for PPO during training.

Why: the env's observation is scale-free (hit ratios, maxmemory as a position between bounds that
are fractions of the working set), so it does not say what the memory currently held *costs*
relative to the misses it saves, and that ratio decides whether a bigger cache pays. The values
are computed exactly as the ``ppo`` controller computes them at decision time
(:func:`cachetuner.control.learned.price_features`, from the env's public prices), so a trained
policy sees the same features in training, evaluation, the A/B harness and the daemon.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from cachetuner.control.learned import PRICE_FEATURES, price_features, price_load


def _features(env: gym.Env, info: dict[str, Any], load: str = "interval") -> np.ndarray:
    base = env.unwrapped
    snap = info["snapshot"]
    held = snap.maxmemory or info["config"].maxmemory
    prices = base.prices  # type: ignore[attr-defined]
    return price_features(float(prices.memory_cost(held)), prices.miss, price_load(load, snap.gets, info))


class PriceFeatures(gym.Wrapper):
    """Append :data:`PRICE_FEATURES` to every observation; ``load``: the GETs they divide by (``ppo.price_load``)."""

    def __init__(self, env: gym.Env, load: str = "interval") -> None:
        super().__init__(env)
        self.load = load
        base = env.observation_space
        assert isinstance(base, gym.spaces.Box)
        n = len(PRICE_FEATURES)
        self.observation_space = gym.spaces.Box(
            low=np.concatenate([base.low, np.zeros(n, np.float32)]).astype(np.float32),
            high=np.concatenate([base.high, np.ones(n, np.float32)]).astype(np.float32),
            dtype=np.float32,
        )

    def _extend(self, obs: np.ndarray, info: dict[str, Any]) -> np.ndarray:
        return np.concatenate([np.asarray(obs, np.float32), _features(self.env, info, self.load)])

    def reset(self, **kwargs: Any) -> tuple[np.ndarray, dict]:
        obs, info = self.env.reset(**kwargs)
        return self._extend(obs, info), info

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        return self._extend(obs, info), float(reward), terminated, truncated, info


__all__ = ["PRICE_FEATURES", "PriceFeatures", "price_features", "price_load"]
