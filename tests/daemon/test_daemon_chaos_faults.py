"""The chaos fault registry and the per-fault checks, without a stack (fast): one class per fault,
registered by name in run order; an unknown name is a ConfigError listing the valid ones; a fault's own
checks come from its ``judge``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cachetuner.daemon.chaos import (
    CHAOS_BOUNDS,
    FAULT_NAMES,
    FAULTS,
    Fault,
    FaultWindow,
    WindowEvidence,
    evaluate_window,
    get_fault,
    register,
    run_chaos,
)
from cachetuner.errors import ConfigError

ORDER = (
    "redis_restart", "redis_unreachable", "prometheus_down", "prometheus_nan", "triton_down",
    "config_refused", "latency_injection", "workload_shift", "kill9_restart", "sigterm",
)  # fmt: skip


def test_registry_holds_every_fault_once_in_run_order() -> None:
    assert FAULT_NAMES == ORDER == tuple(FAULTS)
    for name, cls in FAULTS.items():
        assert cls.name == name and isinstance(get_fault(name), Fault)
    assert [n for n, cls in FAULTS.items() if cls.stops_daemon] == ["sigterm"]


def test_unknown_fault_is_a_config_error_listing_the_valid_ones() -> None:
    with pytest.raises(ConfigError, match=r"unknown fault 'nope'; valid: redis_restart, redis_unreachable, .*, sigterm$"):
        get_fault("nope")
    with pytest.raises(ConfigError, match="unknown fault 'nope'"):  # before any process is started
        run_chaos(["redis_restart", "nope"])


@pytest.fixture()
def dummy_fault() -> Iterator[type[Fault]]:
    @register
    class Dummy(Fault):
        name = "dummy"

        def judge(self, w: FaultWindow, ev: WindowEvidence) -> dict[str, bool]:
            return {"saw_event": "boom" in ev.events}

    try:
        yield Dummy
    finally:
        del FAULTS["dummy"]


def test_a_new_fault_is_one_class(dummy_fault: type[Fault]) -> None:
    assert get_fault("dummy").__class__ is dummy_fault
    with pytest.raises(ValueError, match="registered twice"):
        register(dummy_fault)
    w = FaultWindow("dummy", start=0.0, fault_start=1.0, fault_end=3.0, end=6.0, checks={"daemon_alive": True})
    recs = [
        {"t": 2.0, "phase": "event", "event": "boom"},
        {"t": 4.0, "phase": "decision", "action": "hold", "decision_id": "a", "slo": {"judged": True}},
    ]
    r = evaluate_window(w, recs, [], CHAOS_BOUNDS, 1.0, set())
    assert r["checks"] == {"daemon_alive": True, "fresh_decision_after_fault": True, "saw_event": True}
    assert r["survived"]


def _window(name: str) -> FaultWindow:
    return FaultWindow(name, start=0.0, fault_start=1.0, fault_end=5.0, end=8.0)


def test_fault_specific_checks() -> None:
    fresh = {"t": 6.0, "phase": "decision", "action": "hold", "decision_id": "z", "slo": {"judged": True}}
    refused = [{"t": 1.5 + i, "phase": "outcome", "outcome": "failed", "decision_id": str(i)} for i in range(3)]
    w = _window("config_refused")
    r = evaluate_window(w, [*refused, fresh], [], CHAOS_BOUNDS, 1.0, set())
    assert r["checks"] == {"fresh_decision_after_fault": True, "refusal_reported": True, "no_hot_loop": True}
    assert r["notes"] == "3 refused CONFIG SET in 4s"
    rb = {"t": 3.0, "phase": "intent", "action": "rollback", "decision_id": "r", "slo": {}}
    r = evaluate_window(_window("latency_injection"), [rb, fresh], [], CHAOS_BOUNDS, 1.0, set())
    assert r["checks"]["rolled_back"] and r["rollbacks"] == 1 and r["intervals_fault_to_rollback"] == 2
    r = evaluate_window(_window("prometheus_nan"), [fresh], [], CHAOS_BOUNDS, 1.0, set())
    assert r["checks"] == {"fresh_decision_after_fault": True, "held_on_stale": False} and not r["survived"]
    # sigterm ends the daemon on purpose: no fresh decision is expected after it
    r = evaluate_window(_window("sigterm"), [], [], CHAOS_BOUNDS, 1.0, set())
    assert r["checks"] == {} and r["survived"]
