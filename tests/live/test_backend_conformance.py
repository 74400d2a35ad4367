"""Conformance suite over every CacheBackend implementation: the simulator, the A/B shadow estimator and
the live Redis backend (real redis-server + redis_exporter + Prometheus, started by the fixture)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from cachetuner.backend import CacheBackend, RequestSample
from cachetuner.config import RedisConfig
from cachetuner.env import EnvConfig, WorkloadSpec
from cachetuner.metrics import MetricsSnapshot


def _env_cfg() -> EnvConfig:
    return EnvConfig(
        workloads=[WorkloadSpec(trace="synthetic:zipf", rate=500, params={"n_requests": 20000, "n_keys": 2000})],
        interval_s=5, warmup_intervals=0,
        bounds={"min_bytes": 2_000_000, "max_bytes": 40_000_000, "initial_bytes": 8_000_000},
    )


Driven = tuple[CacheBackend, Callable[[], None]]


@pytest.fixture(params=["sim", "shadow", "live"])
def backend(request: pytest.FixtureRequest) -> Iterator[Driven]:
    """The backend, and what must happen before each of its calls: the shadow estimator follows a control
    backend (the A/B runner resets and steps the control first)."""
    before: Callable[[], None] = lambda: None  # noqa: E731
    if request.param == "sim":
        from cachetuner.env.sim_backend import SimBackend

        be: CacheBackend = SimBackend(_env_cfg())
    elif request.param == "shadow":
        from cachetuner.ab.shadow import ShadowBackend, TeeBackend
        from cachetuner.env.sim_backend import SimBackend

        tee = TeeBackend(SimBackend(_env_cfg()))
        be = ShadowBackend(tee, rate=0.2, min_keys=100, modulus=1 << 24, initial_config=RedisConfig(maxmemory=8_000_000))
        state = {"reset": False}

        def before() -> None:
            if not state["reset"]:
                tee.reset(seed=0)
                state["reset"] = True
            else:
                tee.step()
    else:
        from cachetuner.live.backend import LiveRedisBackend

        stack = request.getfixturevalue("live_stack")
        be = LiveRedisBackend(stack.redis_url, stack.prometheus_url, interval_s=1.0)
    yield be, before
    be.close()


def test_backend_contract(backend: Driven) -> None:
    backend, before = backend
    assert isinstance(backend, CacheBackend)
    before()
    snap = backend.reset(seed=0)
    assert isinstance(snap, MetricsSnapshot)
    assert isinstance(backend.config, RedisConfig)
    target = backend.config.evolve(maxmemory=12_000_000, maxmemory_policy="allkeys-lfu")
    res = backend.apply(target)
    assert res.ok, res.error
    assert backend.config.maxmemory == 12_000_000 and backend.config.maxmemory_policy == "allkeys-lfu"
    before()
    snap = backend.step()
    assert isinstance(snap, MetricsSnapshot) and snap.interval_s > 0
    assert snap.gets <= snap.requests or snap.requests == 0
    assert isinstance(backend.recent_requests(), RequestSample)
    assert isinstance(backend.exhausted, bool)
