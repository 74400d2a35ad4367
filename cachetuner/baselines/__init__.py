"""Static, hindsight and online tuners behind one :class:`Tuner` protocol, registered by name.

``static-default`` (what most users run), ``best-static`` (best fixed config in hindsight),
``oracle`` (per-interval greedy hindsight), ``hill-climb`` (Cliffhanger-style, online),
``optuna`` (online TPE), ``ppo`` (a trained policy).
"""

from __future__ import annotations

from pathlib import Path

from cachetuner.baselines.base import Tuner, make_tuner, register_tuner, tuner_names
from cachetuner.baselines.hill_climb import HillClimb
from cachetuner.baselines.optuna_tuner import OptunaTuner
from cachetuner.baselines.oracle import Oracle
from cachetuner.baselines.ppo import PPOTuner
from cachetuner.baselines.settings import BaselinesConfig
from cachetuner.baselines.static import BestStatic, StaticDefault

#: Evaluation order: the learned policy first, then the bounds it is judged against.
DEFAULT_TUNERS = ("ppo", "static-default", "best-static", "oracle", "hill-climb", "optuna")


def build_tuners(
    names: list[str] | tuple[str, ...],
    settings: BaselinesConfig | None = None,
    *,
    seed: int = 0,
    model_path: str | Path | None = None,
) -> dict[str, Tuner]:
    """``{name: tuner}`` for ``names`` (unknown names list the valid ones)."""
    out: dict[str, Tuner] = {}
    for name in names:
        kwargs: dict[str, object] = {"settings": settings, "seed": seed}
        if name == "ppo":
            kwargs["model_path"] = model_path
        out[name] = make_tuner(name, **kwargs)
    return out


__all__ = [
    "DEFAULT_TUNERS",
    "BaselinesConfig",
    "BestStatic",
    "HillClimb",
    "Oracle",
    "OptunaTuner",
    "PPOTuner",
    "StaticDefault",
    "Tuner",
    "build_tuners",
    "make_tuner",
    "register_tuner",
    "tuner_names",
]
