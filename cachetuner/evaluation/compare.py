"""Several controllers on the same traffic, and the figures that compare them.

Every controller gets a fresh env built from the same :class:`~cachetuner.env.EnvConfig`, reset with
the same seed and ``options={"workload": w, "start": "begin"}``, so all of them see identical requests
from an identical cold start.

The reference is named for what it is: ``best_hindsight`` is the cheapest *hindsight* controller run
(best-static, oracle, dp-hindsight: they saw the future), and every controller gets
``savings_vs_default = 1 - cost / static_default_cost`` and ``regret = cost / best_hindsight_cost - 1``.
A negative regret means a controller beat every hindsight reference that was run (they bound only
their own grids), not that it beat the unknowable optimum.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from cachetuner.control.base import Controller, is_hindsight
from cachetuner.env import CacheTuningEnv, EnvConfig
from cachetuner.errors import ConfigError
from cachetuner.evaluation.episode import IntervalRecord, run_episode, summarise


@dataclass
class ControllerResult:
    """A controller's whole episode and its summary figures."""

    name: str
    summary: dict[str, Any]
    records: list[IntervalRecord] = field(default_factory=list)
    seconds: float = 0.0
    hindsight: bool = False


@dataclass
class EvalReport:
    workload: str
    results: dict[str, ControllerResult]
    env_cfg: EnvConfig | None = None
    best_hindsight: str | None = None
    currency: str = "units"

    def to_json(self) -> dict[str, Any]:
        bh = self.best_hindsight
        return {
            "workload": self.workload,
            "tuners": {k: {**r.summary, "seconds": round(r.seconds, 3), "hindsight": r.hindsight}
                       for k, r in self.results.items()},
            "best_hindsight": None if bh is None else {"tuner": bh, "cost": self.results[bh].summary["cost"]},
            "currency": self.currency,
            "gap_closed": gap_closed({k: r.summary for k, r in self.results.items()}),
        }

    def records_json(self) -> dict[str, list[dict[str, Any]]]:
        return {k: [asdict(x) for x in r.records] for k, r in self.results.items()}


def first_interval_cost(result: ControllerResult) -> float | None:
    """The cost of the episode's first interval, which runs on the controller's first decision: an online
    controller's made on the warm-up intervals alone, a hindsight reference's on the whole trace."""
    return float(result.records[0].cost.get("total", 0.0)) if result.records else None


def add_relative_figures(results: dict[str, ControllerResult]) -> str | None:
    """Set ``savings_vs_default``, ``regret``, ``first_interval_cost`` and ``regret_from_first_decision`` in every
    summary; return the best hindsight name.

    ``regret_from_first_decision`` is the regret with the first interval priced at the best hindsight reference's
    own first interval: an online controller makes its first decision on the warm-up intervals alone (and ``mrc``
    and the shipped policy often keep the initial config there), while a hindsight reference holds, from the first
    request, the config it chose on the whole trace. On short traces at long decision intervals that interval is a
    visible share of the regret (2026-12-07, decisions every 300 s: 0.75 of 2.61 pp on 84 cells); this figure says
    how much, and ``regret`` stays the measured one."""
    default = results.get("static-default")
    hind = {k: r for k, r in results.items() if r.hindsight}
    best = min(hind, key=lambda k: hind[k].summary["cost"]) if hind else None
    best_cost = hind[best].summary["cost"] if best is not None else 0.0
    best_first = first_interval_cost(hind[best]) if best is not None else None
    for r in results.values():
        cost = r.summary["cost"]
        first = first_interval_cost(r)
        r.summary["savings_vs_default"] = (
            1.0 - cost / default.summary["cost"] if default is not None and default.summary["cost"] > 0 else None
        )
        r.summary["regret"] = cost / best_cost - 1.0 if best_cost > 0 else None
        r.summary["first_interval_cost"] = first
        r.summary["regret_from_first_decision"] = (
            (cost - first + best_first) / best_cost - 1.0
            if best_cost > 0 and first is not None and best_first is not None else None
        )
    return best


def gap_closed(summaries: dict[str, dict[str, Any]], learned: str = "ppo") -> float | None:
    """Share of the best-static -> oracle gap the learned policy closed, only where that reads as a
    share: the oracle beats best-static and the result lies in [0, 1]; else None (see ``regret``)."""
    try:
        bs, pp, orc = (summaries[k]["cost"] for k in ("best-static", learned, "oracle"))
    except KeyError:
        return None
    if not bs - orc > 1e-12:
        return None
    g = float((bs - pp) / (bs - orc))
    return g if 0.0 <= g <= 1.0 else None


def evaluate_controllers(
    env_cfg: EnvConfig,
    controllers: dict[str, Controller],
    *,
    seed: int = 0,
    workload: int = 0,
    on_interval: Callable[[str, int], None] | None = None,
) -> EvalReport:
    """Run every controller on ``env_cfg``'s workload ``workload`` from its beginning, each on a fresh env.

    The miss-ratio curves are switched on if the config has them off (a training config may turn them off
    for speed): they feed decisions only, never the cost, and the simulator's random stream does not
    depend on them, so every controller still sees identical traffic and outcomes."""
    if not env_cfg.mrc.enabled:
        env_cfg = env_cfg.model_copy(update={"mrc": env_cfg.mrc.model_copy(update={"enabled": True})})
    results: dict[str, ControllerResult] = {}
    wl_name = ""
    for name, ctl in controllers.items():
        env = CacheTuningEnv(_env_config_for(env_cfg, ctl, workload))
        try:
            t0 = time.perf_counter()
            cb = (lambda n, _name=name: on_interval(_name, n)) if on_interval is not None else None
            recs = run_episode(env, ctl, seed=seed, options={"workload": workload, "start": "begin"}, on_interval=cb)
            hind = bool(getattr(ctl, "hindsight", False)) or (name in _names() and is_hindsight(name))
            results[name] = ControllerResult(name, summarise(recs), recs, time.perf_counter() - t0, hind)
            wl_name = wl_name or str(env.workload)
        finally:
            env.close()
    best = add_relative_figures(results)
    return EvalReport(wl_name, results, env_cfg, best, "USD" if env_cfg.prices is not None else "units")


def _env_config_for(env_cfg: EnvConfig, controller: Controller, workload: int = 0) -> EnvConfig:
    """``env_cfg``, with ``mrc.warm_from_skipped`` for a controller that declares ``warm_curves`` (it has watched the
    skipped history of ``workload``, the one evaluated): only its decisions differ, the traffic and the cache start
    the same for every controller."""
    if not getattr(controller, "warm_curves", False):
        return env_cfg
    if not env_cfg.workloads[workload].skip:
        raise ConfigError(f"controller {controller.name!r} needs history to watch: a workload with `skip:` (a suite's "
                          "`history:`); without it, run 'mrc'")
    return env_cfg.model_copy(update={"mrc": env_cfg.mrc.model_copy(update={"warm_from_skipped": True})})


def _names() -> list[str]:
    from cachetuner.control.base import controller_names

    return controller_names()
