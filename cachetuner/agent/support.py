"""Where a trained policy has been: the range of its price feature on its own training distribution.

Why: the price feature (the interval's memory cost per GET in miss units, squashed into [0, 1)) is the one input
that carries the economics, and a policy trained at one range of prices and loads meets others in evaluation
(``cheap-backend`` prices, 10 or 1,000 req/s). Outside the range it saw, its action is an extrapolation;
``controllers.ppo.defer_outside`` hands those decisions to the anchor rule. The range is measured, not derived:
the policy's own deterministic decisions over seeded training episodes (random windows of the training workloads
at their randomised prices, as ``train`` draws them), the feature computed as in training (over the interval's
GETs). Approximation: training sampled its actions, so it visited somewhat more states than these rollouts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from cachetuner.control.learned import LearnedPolicy, PolicyArtifact
from cachetuner.control.settings import ControlSettings
from cachetuner.env import CacheTuningEnv
from cachetuner.evaluation.episode import context_from_env

#: The quantiles that bound the support: a few stray intervals of training do not widen it.
SUPPORT_QUANTILES = (0.005, 0.995)


def price_feature_samples(
    artifact: PolicyArtifact, *, episodes: int = 40, seed: int = 1000, on_episode: Callable[[int], None] | None = None
) -> np.ndarray:
    """The price feature at every decision of ``episodes`` training episodes (seeds ``seed``, ``seed + 1``, ...)."""
    if not artifact.price_features:
        return np.zeros(0)
    settings = ControlSettings.model_validate({"ppo": {"price_load": "interval", "defer_cold": False,
                                                       "defer_young": False, "defer_outside": False}})
    out: list[float] = []
    env = CacheTuningEnv(artifact.train_env_config)  # one env: its workloads are read once, each seeded reset redraws
    try:
        for ep in range(episodes):
            obs, info = env.reset(seed=seed + ep)
            ctl = LearnedPolicy(settings, seed=seed + ep, model=artifact)
            ctl.reset(context_from_env(env, obs, info))
            done = False
            while not done:
                ctx = context_from_env(env, obs, info)
                out.append(float(ctl.observation(ctx)[-1]))
                obs, _, terminated, truncated, info = env.step_config(ctl.decide(ctx))
                done = bool(terminated or truncated)
            if on_episode is not None:
                on_episode(ep + 1)
    finally:
        env.close()
    return np.asarray(out)


def price_support(samples: np.ndarray) -> dict[str, Any]:
    """``{"price_support": [low, high], "decisions": n, "min", "max"}`` from :func:`price_feature_samples`."""
    if len(samples) == 0:
        return {"price_support": None, "decisions": 0, "min": None, "max": None}
    lo, hi = (float(np.quantile(samples, q)) for q in SUPPORT_QUANTILES)
    return {"price_support": [round(lo, 4), round(hi, 4)], "decisions": int(len(samples)),
            "min": float(samples.min()), "max": float(samples.max())}
