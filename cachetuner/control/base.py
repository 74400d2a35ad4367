"""The decision layer's contract: one :class:`Controller` protocol, the :class:`DecisionContext` it
decides from, and the registry every controller is built from.

Why one protocol: evaluation, the A/B harness (both modes), ``live-eval`` and the daemon all ask the
same question — "which configuration next?" — so they build a context and call the same controllers.
A controller sees only its context: the latest metrics, the configuration in force, the bounds it
may choose within, the miss-ratio curves, the prices and the sampled request stream. It never reads
an env's or a backend's private state. Hindsight controllers (bounds, not deployable) declare it and
additionally get ``ctx.fork()``: an independent copy of the simulated future.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from cachetuner.backend import RequestSample
from cachetuner.config import RedisConfig
from cachetuner.errors import ConfigError
from cachetuner.metrics import MetricsSnapshot
from cachetuner.mrc.cost import Prices
from cachetuner.mrc.curves import MissRatioCurves
from cachetuner.registry import Registry
from cachetuner.space import ConfigSpace


@dataclass
class DecisionContext:
    """Everything a controller may use to choose the next interval's configuration.

    ``obs`` is the env's observation vector (learned controllers rebuild their own features on top of
    it); ``curves`` the windowed miss-ratio curves (``None`` when the env runs without them);
    ``fork`` is set only for hindsight controllers on a simulated backend.
    """

    snapshot: MetricsSnapshot
    config: RedisConfig
    space: ConfigSpace
    prices: Prices
    step: int = 0
    obs: np.ndarray | None = None
    curves: MissRatioCurves | None = None
    whatif: dict[str, float] = field(default_factory=dict)
    sample: RequestSample | None = None
    fork: Callable[[], Any] | None = None
    info: dict[str, Any] = field(default_factory=dict)
    client_ttl: Any = None  # the ClientTTL multipliers in force (cachetuner.ttl.knobs), None = not known


@runtime_checkable
class Controller(Protocol):
    """Chooses the configuration for the next interval from a :class:`DecisionContext`."""

    #: Registry name, used in reports and plots.
    name: str
    #: True for controllers that look into the future (``ctx.fork``): bounds for evaluation only.
    hindsight: ClassVar[bool]
    # Optional attributes, read with getattr where they matter: ``needs_sample`` (ctx.sample holds the interval's
    # requests), ``warm_curves`` (the evaluation feeds the workload's skipped history to its curves first,
    # cachetuner.evaluation.compare), ``decides_client_ttl`` (ClientTTLDecider).

    def reset(self, ctx: DecisionContext) -> None:
        """Start an episode; ``ctx`` describes its first state."""
        ...

    def decide(self, ctx: DecisionContext) -> RedisConfig:
        """The configuration to run during the next interval (bounds are enforced by the caller too)."""
        ...


@runtime_checkable
class ClientTTLDecider(Protocol):
    """A controller that also chooses the client-side TTL multipliers of the next interval.

    Why a second, optional protocol: TTLs are set by the application on each write, never by
    ``CONFIG SET``, so a :class:`RedisConfig` cannot carry them and most controllers have nothing to say
    about them. Paths that can apply them (the simulated env: ``step_config(config, client_ttl)``) ask
    after :meth:`Controller.decide`; paths that cannot (the daemon) refuse a controller whose
    ``decides_client_ttl`` is true rather than drop that part of its decision.
    """

    decides_client_ttl: bool

    def client_ttl(self, ctx: DecisionContext) -> Any:
        """The :class:`~cachetuner.ttl.knobs.ClientTTL` for the next interval (``None`` = keep), after ``decide(ctx)``."""
        ...


#: ``name -> factory(settings, seed, **params) -> Controller``.
CONTROLLERS: Registry[Callable[..., Controller]] = Registry("controller")


def register_controller(name: str) -> Callable[[Any], Any]:
    """Class decorator: make a controller constructible by ``name`` with :func:`make_controller`."""
    return CONTROLLERS.register(name)


def controller_names(*, deployable: bool | None = None) -> list[str]:
    """Registered names; ``deployable=True`` leaves the hindsight ones out (``False``: only those)."""
    _load_builtin()
    names = CONTROLLERS.names()
    if deployable is None:
        return names
    return [n for n in names if bool(getattr(CONTROLLERS.get(n), "hindsight", False)) != deployable]


def is_hindsight(name: str) -> bool:
    _load_builtin()
    return bool(getattr(CONTROLLERS.get(name), "hindsight", False))


def watches_history(name: str) -> bool:
    """Whether the controller registered as ``name`` declares ``warm_curves``: its curves watch a history first
    (a workload's skipped part in evaluation, ``policy.history`` in the daemon); elsewhere it would silently run
    from a cold start, so callers without a history refuse it."""
    _load_builtin()
    return bool(getattr(CONTROLLERS.get(name), "warm_curves", False))


def make_controller(name: str, settings: Any = None, seed: int = 0, **params: Any) -> Controller:
    """Build the controller registered as ``name`` (unknown names list the valid ones).

    ``settings``: a :class:`~cachetuner.control.settings.ControlSettings` (``None`` = defaults);
    ``params``: controller-specific arguments (``model=`` for ``ppo``, ``config=`` for ``fixed``).
    """
    from cachetuner.control.settings import ControlSettings

    _load_builtin()
    factory = CONTROLLERS.get(name)
    try:
        return factory(settings=settings or ControlSettings(), seed=seed, **params)
    except TypeError as e:
        raise ConfigError(f"controller {name!r}: {e}") from None


#: Evaluation order: the learned policy first, the classical controller, then the references. ``oracle``
#: (receding horizon to the episode end: quadratic in the episode length) and ``optuna`` (TPE refits on
#: every past interval) are left out by default because they do not finish on multi-million-request
#: traces; ask for them with ``--tuners``.
DEFAULT_EVALUATION: tuple[str, ...] = ("ppo", "mrc", "static-default", "best-static", "dp-hindsight", "hill-climb")


def build_controllers(
    names: list[str] | tuple[str, ...], settings: Any = None, *, seed: int = 0, model: Any = None,
    params: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Controller]:
    """``{name: controller}`` for ``names`` (``ppo`` gets ``model``, any other its ``params[name]``, e.g.
    ``config=`` for ``fixed`` / ``recommended``; unknown names list the valid ones)."""
    out: dict[str, Controller] = {}
    for name in names:
        kw = {"model": model} if name == "ppo" else (params or {}).get(name, {})
        out[name] = make_controller(name, settings, seed, **kw)
    return out


def _load_builtin() -> None:
    import cachetuner.control.builtin  # noqa: F401  (registers every built-in controller)


__all__ = [
    "CONTROLLERS",
    "DEFAULT_EVALUATION",
    "build_controllers",
    "Controller",
    "DecisionContext",
    "Prices",
    "controller_names",
    "is_hindsight",
    "make_controller",
    "register_controller",
]
