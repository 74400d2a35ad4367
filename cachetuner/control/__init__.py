"""The decision layer: every controller (baselines, the trained policy, the daemon's and the A/B's
deciders) behind one :class:`Controller` protocol, deciding from a :class:`DecisionContext`.

Adding a controller is one module with a class decorated ``@register_controller("name")`` (and a line
in :mod:`cachetuner.control.builtin`); the conformance suite in ``tests/control`` picks it up.
"""

from cachetuner.control.base import (
    CONTROLLERS,
    DEFAULT_EVALUATION,
    Controller,
    DecisionContext,
    build_controllers,
    controller_names,
    is_hindsight,
    make_controller,
    register_controller,
    watches_history,
)
from cachetuner.control.settings import ControlSettings
from cachetuner.mrc.cost import Prices
from cachetuner.space import ConfigSpace

__all__ = [
    "CONTROLLERS",
    "DEFAULT_EVALUATION",
    "build_controllers",
    "ConfigSpace",
    "ControlSettings",
    "Controller",
    "DecisionContext",
    "Prices",
    "controller_names",
    "is_hindsight",
    "watches_history",
    "make_controller",
    "register_controller",
]
