"""Guardrails: each guard alone, the chain, and the invariant that nothing out of bounds gets through."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cachetuner.config import REDIS_POLICIES, RedisConfig
from cachetuner.daemon.config import SLO, Bounds, TargetConfig
from cachetuner.daemon.guardrails import (
    BoundsGuard,
    CooldownGuard,
    GuardChain,
    GuardContext,
    MaxChangeGuard,
    OutOfBoundsError,
    SLOGuard,
    assert_in_bounds,
    bounds_violations,
)
from cachetuner.daemon.slo import evaluate_slo
from cachetuner.errors import ConfigError
from cachetuner.metrics import MetricsSnapshot

MIB = 1 << 20
BOUNDS = Bounds(maxmemory_min=16 * MIB, maxmemory_max=128 * MIB, policies=["allkeys-lru", "allkeys-lfu"], timeouts=[0, 300])


def target(**kw: object) -> TargetConfig:
    return TargetConfig(name="t", backend="sim", bounds=BOUNDS, **kw)  # type: ignore[arg-type]


def fresh(**kw: object) -> MetricsSnapshot:
    return MetricsSnapshot(interval_s=1.0, gets=1000, hits=800, **kw)  # type: ignore[arg-type]


def ctx(current: RedisConfig, snap: MetricsSnapshot | None = None, slo: SLO | None = None, **kw: object) -> GuardContext:
    snap = snap if snap is not None else fresh()
    return GuardContext("t", kw.pop("now", 1000.0), current, snap, evaluate_slo(slo or SLO(), snap), kw.pop("last_change_at", None))  # type: ignore[arg-type]


CUR = RedisConfig(maxmemory=64 * MIB, maxmemory_policy="allkeys-lru", timeout=0)


def test_bounds_guard_clamps_memory_and_vetoes_policy() -> None:
    g = BoundsGuard(BOUNDS)
    r = g.check(CUR.evolve(maxmemory=1 << 40), ctx(CUR))
    assert r.action == "adjust" and r.config is not None and r.config.maxmemory == 128 * MIB
    assert g.check(CUR.evolve(maxmemory_policy="noeviction"), ctx(CUR)).action == "veto"
    assert g.check(CUR.evolve(timeout=30), ctx(CUR)).action == "veto"
    strict = BoundsGuard(BOUNDS.model_copy(update={"clamp_maxmemory": False}))
    assert strict.check(CUR.evolve(maxmemory=0), ctx(CUR)).action == "veto"


def test_max_change_limits_step_but_lets_bounds_win() -> None:
    g = MaxChangeGuard(0.25, BOUNDS)
    r = g.check(CUR.evolve(maxmemory=128 * MIB), ctx(CUR))
    assert r.config is not None and r.config.maxmemory == int(64 * MIB * 1.25)
    # current far below the bounds: the step toward the bounds ends on the bound, not outside
    low = CUR.evolve(maxmemory=2 * MIB)
    r = g.check(CUR.evolve(maxmemory=16 * MIB), ctx(low))
    assert r.config is not None and r.config.maxmemory == 16 * MIB


def test_cooldown_vetoes_changes_within_window() -> None:
    g = CooldownGuard(10.0)
    assert g.check(CUR.evolve(maxmemory=70 * MIB), ctx(CUR, now=1005.0, last_change_at=1000.0)).action == "veto"
    assert g.check(CUR.evolve(maxmemory=70 * MIB), ctx(CUR, now=1011.0, last_change_at=1000.0)).action == "allow"


def test_slo_guard_blocks_shrinking_while_breached() -> None:
    slo = SLO(min_hit_ratio=0.9)
    snap = fresh()  # hit ratio 0.8 < 0.9
    g = SLOGuard()
    assert g.check(CUR.evolve(maxmemory=32 * MIB), ctx(CUR, snap, slo)).action == "veto"
    assert g.check(CUR.evolve(maxmemory=96 * MIB), ctx(CUR, snap, slo)).action == "allow"


def test_stale_snapshot_is_vetoed_first_and_named() -> None:
    chain = GuardChain.for_target(target())
    v = chain.evaluate(CUR.evolve(maxmemory=32 * MIB), ctx(CUR, MetricsSnapshot(interval_s=1.0, stale=True)))
    assert not v.ok and v.vetoed_by == "stale"
    assert [t["guard"] for t in v.trail] == ["stale"]


def test_unknown_guard_lists_valid_names() -> None:
    with pytest.raises(ConfigError, match="valid guards: stale, bounds, max_change, cooldown, slo"):
        GuardChain.for_target(target(guards=["bounds", "nope"]))


def test_slo_terms() -> None:
    slo = SLO(p95_latency_ms=10, min_hit_ratio=0.5, max_evictions_per_s=5)
    rep = evaluate_slo(slo, MetricsSnapshot(interval_s=2.0, gets=100, hits=10, evictions=20, latency_p95_ms=50))
    assert rep.judged and len(rep.breaches) == 3
    assert not evaluate_slo(slo, MetricsSnapshot(interval_s=2.0, stale=True)).judged
    assert evaluate_slo(slo, MetricsSnapshot(interval_s=2.0, gets=5, hits=0)).ok  # too few gets to judge hit ratio


def test_slo_per_tenant_targets(tmp_path) -> None:
    """A gold breach is a breach even when the cache-wide p95 is fine; bronze within its own target is not."""
    from cachetuner.config import TenantTarget
    from cachetuner.metrics import TenantMetrics

    slo = SLO(p95_latency_ms=150, tenants={"gold": TenantTarget(p95_ms=80), "bronze": TenantTarget(p95_ms=200)})
    tenants = {"gold": TenantMetrics(gets=100, hits=60, latency_p95_ms=95.0),
               "bronze": TenantMetrics(gets=300, hits=90, latency_p95_ms=190.0)}
    rep = evaluate_slo(slo, MetricsSnapshot(interval_s=2.0, gets=400, hits=150, latency_p95_ms=120, tenants=tenants))
    assert rep.breached and rep.breaches == ["tenant gold p95 95.00 ms > 80 ms"]
    tenants["gold"] = TenantMetrics(gets=5, hits=0, latency_p95_ms=900.0)  # too few of its gets to judge
    assert evaluate_slo(slo, MetricsSnapshot(interval_s=2.0, gets=305, hits=90, latency_p95_ms=120, tenants=tenants)).ok
    from pathlib import Path

    import yaml

    from cachetuner.daemon.config import load_daemon_config

    cfg = yaml.safe_load((Path(__file__).parents[2] / "experiments" / "daemon.yaml").read_text())
    cfg["targets"][0]["slo"]["tenants"] = {"gold": {"p95_ms": -1}}
    bad = tmp_path / "daemon.yaml"
    bad.write_text(yaml.safe_dump(cfg))
    with pytest.raises(ConfigError, match=r"daemon.yaml.*slo\.tenants\.gold\.p95_ms") as e:
        load_daemon_config(bad)
    assert "\n" not in str(e.value)


def test_final_check_raises() -> None:
    with pytest.raises(OutOfBoundsError, match="maxmemory 0 outside"):
        assert_in_bounds(CUR.evolve(maxmemory=0), BOUNDS, "t")
    assert_in_bounds(CUR, BOUNDS, "t")


configs = st.builds(
    RedisConfig,
    maxmemory=st.one_of(st.integers(0, 1 << 42), st.sampled_from([0, 1, 16 * MIB - 1, 128 * MIB + 1])),
    maxmemory_policy=st.sampled_from(REDIS_POLICIES),
    maxmemory_samples=st.integers(1, 64),
    timeout=st.sampled_from([0, 1, 30, 300, 86400]),
)


@settings(max_examples=300, deadline=None)
@given(proposal=configs, current=configs, rel=st.floats(0.01, 5.0), guards=st.permutations(["bounds", "max_change", "cooldown", "slo"]))
def test_chain_output_always_in_bounds(proposal: RedisConfig, current: RedisConfig, rel: float, guards: list[str]) -> None:
    """Whatever the proposal, current state and guard order: what the chain lets through is in bounds
    whenever the bounds guard runs last among the clamping guards, and the final check catches the rest."""
    t = target(max_relative_change=rel, guards=["stale", *guards])
    v = GuardChain.for_target(t).evaluate(proposal, ctx(current))
    if v.ok:
        assert v.config is not None
        if bounds_violations(v.config, BOUNDS):
            with pytest.raises(OutOfBoundsError):
                assert_in_bounds(v.config, BOUNDS, "t")
    default = GuardChain.for_target(target(max_relative_change=rel)).evaluate(proposal, ctx(current))
    if default.ok:
        assert default.config is not None and not bounds_violations(default.config, BOUNDS)
