"""Price features appended to the env's observation for PPO.

Why: the env's observation is scale-free (hit ratios, maxmemory as a position between bounds that
are fractions of the working set), so it does not say what the memory currently held *costs*
relative to the misses it saves, and that ratio (memory price x bytes / (miss price x request
rate)) is what decides whether a +30 % move pays. With it, the what-if hit ratios already in the
observation make the size decision a comparison the policy can learn in minutes.

The features are computed from ``info`` alone (the same ``info`` every tuner gets), so the trained
policy runs unchanged wherever :class:`~cachetuner.baselines.ppo.PPOTuner` is used (evaluation,
the A/B harness, the daemon).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

#: Names of the appended features, in order.
PRICE_FEATURES = ("memory_cost_per_get",)


def price_features(info: dict[str, Any], env: gym.Env) -> np.ndarray:
    """``x / (x + 0.1)`` with ``x`` the interval's memory cost per get in miss-cost units (0 when unknown).

    ``0.1`` maps "memory costs 10 % of a miss per get" to 0.5, the middle of the range where the
    cost-optimal size usually lies."""
    rw = env.unwrapped.cfg.reward  # type: ignore[attr-defined]
    snap = info.get("snapshot")
    value = float((info.get("cost") or {}).get("memory", 0.0))
    gets = max(int(getattr(snap, "gets", 0) or 0), 1)
    x = max(value / (rw.miss_cost * gets), 0.0) if np.isfinite(value) else 0.0
    return np.asarray([x / (x + 0.1)], dtype=np.float32)


class PriceFeatures(gym.Wrapper):
    """Append :data:`PRICE_FEATURES` (computed by :func:`price_features`) to every observation."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        base = env.observation_space
        assert isinstance(base, gym.spaces.Box)
        n = len(PRICE_FEATURES)
        self.observation_space = gym.spaces.Box(
            low=np.concatenate([base.low, np.zeros(n, np.float32)]).astype(np.float32),
            high=np.concatenate([base.high, np.ones(n, np.float32)]).astype(np.float32),
            dtype=np.float32,
        )

    def _extend(self, obs: np.ndarray, info: dict[str, Any]) -> np.ndarray:
        return np.concatenate([np.asarray(obs, np.float32), price_features(info, self.env)])

    def reset(self, **kwargs: Any) -> tuple[np.ndarray, dict]:
        obs, info = self.env.reset(**kwargs)
        return self._extend(obs, info), info

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        return self._extend(obs, info), float(reward), terminated, truncated, info
