"""The baseline guard (``mrc-guarded``, ``ppo-guarded``): its estimate of static-default's cost on the traffic
the tuner served, and the fallback it takes when the wrapped controller has cost more."""

from __future__ import annotations

import numpy as np
import pytest

from cachetuner.control import ControlSettings, make_controller
from cachetuner.control.guard import BaselineGuard, KeyDiffs
from cachetuner.env import EnvConfig, WorkloadSpec
from cachetuner.errors import ConfigError
from cachetuner.evaluation.compare import evaluate_controllers
from cachetuner.evaluation.episode import context_from_env
from cachetuner.yamlconfig import validate

#: a cache a quarter of the default size on a skewed workload: clearly dearer than static-default
SMALL = {"maxmemory": 1_000_000, "maxmemory_policy": "allkeys-lru"}


def _env_cfg() -> EnvConfig:
    return EnvConfig(
        workloads=[WorkloadSpec(trace="synthetic:zipf", rate=200, params={"n_requests": 60000, "n_keys": 3000, "alpha": 0.9})],
        interval_s=10, episode_intervals=None, warmup_intervals=1,
        bounds={"min_bytes": 500_000, "max_bytes": 12_000_000, "initial_bytes": 4_000_000},
        actions={"policies": ["allkeys-lru", "allkeys-lfu"], "timeouts": [0]},
        reward={"miss_cost": 0.0002, "memory_cost_per_gb_hour": 5.0, "slo_penalty": 0.0, "switch_cost": 0.0002},
    )


def _guarded(inner: str, settings: ControlSettings, **params) -> BaselineGuard:
    return BaselineGuard(make_controller(inner, settings, 0, **params), settings, 0)


def test_around_static_default_the_guard_sees_no_difference_and_never_acts() -> None:
    settings = ControlSettings(guard={"min_intervals": 1, "alpha": 0.0, "z": 0.0})
    g = _guarded("static-default", settings)
    rep = evaluate_controllers(_env_cfg(), {"g": g, "static-default": make_controller("static-default")}, seed=0)
    assert g.ledger.intervals == rep.results["g"].summary["intervals"]
    assert g.ledger.excess == 0.0 and g.ledger.noise == 0.0  # identical minis, identical memory, no switch
    assert g.ledger.trips == 0
    assert rep.results["g"].summary["cost"] == pytest.approx(rep.results["static-default"].summary["cost"], rel=1e-12)


def test_the_ledger_estimates_static_defaults_cost_on_the_served_traffic() -> None:
    """At R = 1 the minis see every request: the estimated baseline cost and the excess match a real
    static-default run of the same episode (up to the minis' approximations: no fixed memory, uniform
    eviction sampling)."""
    settings = ControlSettings(guard={"alpha": 100.0, "rate": 1.0})  # never falls back: pure measurement
    g = _guarded("fixed", settings, config=SMALL)
    rep = evaluate_controllers(_env_cfg(), {"g": g, "static-default": make_controller("static-default")}, seed=0)
    path, base = rep.results["g"].summary["cost"], rep.results["static-default"].summary["cost"]
    assert path > 1.05 * base  # the small cache is clearly dearer
    assert g.ledger.noise == 0.0  # every key is in a sample of rate 1
    assert g.ledger.baseline == pytest.approx(base, rel=0.03)
    assert g.ledger.excess == pytest.approx(path - base, rel=0.15)
    assert g.ledger.trips == 0


def test_a_controller_that_costs_more_is_replaced_by_static_default() -> None:
    settings = ControlSettings(guard={"min_intervals": 5})
    g = _guarded("fixed", settings, config=SMALL)
    cfg = _env_cfg()
    rep = evaluate_controllers(cfg, {"g": g, "fixed": make_controller("fixed", settings, config=SMALL),
                                     "static-default": make_controller("static-default")}, seed=0)
    assert g.ledger.trips == 1 and g.ledger.events[0]["event"] == "fallback"
    assert g.ledger.events[0]["intervals"] >= 5  # no verdict before min_intervals
    held = [r for r in rep.results["g"].records if r.maxmemory == 4_000_000]
    assert len(held) == g.ledger.intervals_held > 0  # what ran after the fallback is static-default's size
    cost = {k: r.summary["cost"] for k, r in rep.results.items()}
    assert cost["static-default"] < cost["g"] < cost["fixed"]


def test_the_wrapped_controller_keeps_deciding_while_the_guard_holds() -> None:
    settings = ControlSettings(guard={"min_intervals": 3})
    seen: list[int] = []
    inner = make_controller("fixed", settings, config=SMALL)
    decide = inner.decide
    inner.decide = lambda ctx: (seen.append(ctx.step), decide(ctx))[1]  # type: ignore[method-assign]
    g = BaselineGuard(inner, settings, 0)
    rep = evaluate_controllers(_env_cfg(), {"g": g}, seed=0)
    assert g.ledger.intervals_held > 0
    assert len(seen) == rep.results["g"].summary["intervals"]


def test_the_per_key_variance_counts_key_sums_not_requests() -> None:
    kd = KeyDiffs()
    kd.add(np.array([7, 7, 9, 11]), np.array([1, 1, -1, 0]))
    kd.add(np.array([9, 5000]), np.array([-1, 1]))
    assert kd.sum_sq() == 2**2 + (-2) ** 2 + 1**2  # keys 7, 9 and 5000; key 11 never differed


def test_registered_names_wrap_mrc_and_the_policy() -> None:
    from cachetuner.control import controller_names, takes_model

    assert {"mrc-guarded", "ppo-guarded"} <= set(controller_names(deployable=True))
    assert takes_model("ppo-guarded") and not takes_model("mrc-guarded")
    g = make_controller("mrc-guarded")
    assert isinstance(g, BaselineGuard) and g.name == "mrc-guarded" and g.inner.name == "mrc"


def test_without_the_request_stream_the_guard_says_what_it_needs() -> None:
    from cachetuner.env import CacheTuningEnv

    env = CacheTuningEnv(_env_cfg())
    obs, info = env.reset(seed=0, options={"workload": 0, "start": "begin"})
    g = make_controller("mrc-guarded")
    g.reset(context_from_env(env, obs, info))
    with pytest.raises(ConfigError, match="mrc-guarded.*sampled request stream"):
        g.decide(context_from_env(env, obs, info, sample=False))


@pytest.mark.parametrize(("field", "value"), [("alpha", -0.1), ("release", 1.5), ("rate", 0.0), ("min_intervals", 0)])
def test_bad_guard_settings_name_the_field(field: str, value: float) -> None:
    with pytest.raises(ConfigError, match=f"guard.{field}"):
        validate(ControlSettings, {"guard": {field: value}}, "controllers")
