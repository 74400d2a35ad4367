"""A trained stable-baselines3 PPO policy behind the ``Tuner`` protocol."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from cachetuner.baselines.base import register_tuner
from cachetuner.baselines.settings import BaselinesConfig
from cachetuner.config import RedisConfig
from cachetuner.errors import ConfigError


@register_tuner("ppo")
class PPOTuner:
    """Deterministic actions of a saved PPO model, decoded by the env into a config.

    The env must have the action and observation spaces the model was trained with (build it from
    the model's ``train_config.yaml``); a mismatch is refused at :meth:`reset`.
    """

    name = "ppo"

    def __init__(
        self, model_path: str | Path | None = None, settings: BaselinesConfig | None = None, seed: int = 0
    ) -> None:
        if model_path is None:
            raise ConfigError("tuner 'ppo' needs a model: pass --model PATH (a model.zip written by cachetuner train)")
        path = Path(model_path)
        if not path.is_file():
            raise ConfigError(f"{path}: model file not found (expected a model.zip written by cachetuner train)")
        from stable_baselines3 import PPO

        from cachetuner.agent.train import one_thread

        one_thread()
        try:
            self.model = PPO.load(path, device="cpu")
        except Exception as e:  # a corrupt or foreign zip: say which file, not a traceback
            raise ConfigError(f"{path}: not a stable-baselines3 PPO model ({type(e).__name__}: {e})") from None
        self.path = path
        self.env: Any = None
        self.extend = False

    def reset(self, env: Any) -> None:
        from cachetuner.agent.features import PRICE_FEATURES

        want = tuple(self.model.observation_space.shape or ())
        have = tuple(env.observation_space.shape or ())
        # Models trained with price features (cachetuner.agent.features) get them appended here from info.
        self.extend = want[0] == have[0] + len(PRICE_FEATURES)
        if env.action_space != self.model.action_space or not (want == have or self.extend):
            raise ConfigError(
                f"{self.path}: model was trained with action space {self.model.action_space} and observation shape "
                f"{want}, env has {env.action_space} and {have}; evaluate with the model's train_config.yaml (--config)"
            )
        self.env = env

    def decide(self, obs: Any, info: dict[str, Any]) -> RedisConfig:
        if self.extend:
            from cachetuner.agent.features import price_features

            obs = np.concatenate([np.asarray(obs, np.float32), price_features(info, self.env)])
        action, _ = self.model.predict(obs, deterministic=True)
        return self.env.unwrapped.decode_action(action)
