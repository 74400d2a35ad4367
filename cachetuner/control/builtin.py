"""Imports every built-in controller module so that each registers itself (registration order is the
listing order: deployable controllers first, then the hindsight references)."""

from cachetuner.control import static  # noqa: F401  (isort: skip)
from cachetuner.control import mrc  # noqa: F401  (isort: skip)
from cachetuner.control import learned  # noqa: F401  (isort: skip)
from cachetuner.control import hill_climb, optuna_search, random, sized_once  # noqa: F401  (isort: skip)
from cachetuner.control import hindsight  # noqa: F401  (isort: skip)
