"""The process's trace cache (``sim_backend.load_workload``): identical workloads share one Trace, and the cache
gives memory back (by count and by bytes) so a suite's earlier traces do not crowd out the next read."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import cachetuner.env.sim_backend as sb
from cachetuner.env.config import WorkloadSpec
from cachetuner.sim.params import SimParams


@pytest.fixture
def empty_cache() -> Iterator[None]:
    saved, saved_ws = dict(sb._TRACE_CACHE), dict(sb._WS_CACHE)
    sb._TRACE_CACHE.clear()
    sb._WS_CACHE.clear()
    yield
    sb._TRACE_CACHE.clear()
    sb._TRACE_CACHE.update(saved)
    sb._WS_CACHE.clear()
    sb._WS_CACHE.update(saved_ws)


def _cached(trace: object) -> bool:
    return any(t is trace for t in sb._TRACE_CACHE.values())


def _spec(seed: int) -> WorkloadSpec:
    return WorkloadSpec(trace="synthetic:zipf", rate=200, seed=seed, params={"n_requests": 20_000, "n_keys": 2_000})


def test_identical_workloads_share_one_trace(empty_cache: None) -> None:
    a = sb.load_workload(_spec(0))
    assert sb.load_workload(_spec(0)) is a and sb.load_workload(_spec(1)) is not a
    assert a.nbytes == sum(x.nbytes for x in (a.timestamps, a.keys, a.sizes, a.ops, a.ttls, a.key_bytes)) > 20_000 * 33


def test_the_cache_keeps_what_memory_allows_and_always_the_newest(empty_cache: None,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sb, "memory_available", lambda: 64 << 30)  # plenty: the count bound (16) alone
    traces = [sb.load_workload(_spec(s)) for s in range(18)]
    assert len(sb._TRACE_CACHE) == sb._TRACE_CACHE_SIZE and _cached(traces[-1])
    one = traces[-1].nbytes
    # a machine where a quarter of (available + held) is about three traces: the oldest go first
    sb._TRACE_CACHE.clear()
    monkeypatch.setattr(sb, "memory_available", lambda: 12 * one - sum(t.nbytes for t in sb._TRACE_CACHE.values()))
    for s in range(6):
        sb.load_workload(_spec(s))
    assert len(sb._TRACE_CACHE) == 3
    assert [t.meta.get("seed") for t in sb._TRACE_CACHE.values()] == [3, 4, 5]
    # no room at all: the trace being loaded is still kept (it is in use), nothing else
    monkeypatch.setattr(sb, "memory_available", lambda: 0)
    newest = sb.load_workload(_spec(7))
    assert len(sb._TRACE_CACHE) == 1 and _cached(newest)


def test_a_dropped_trace_takes_its_working_set_with_it(empty_cache: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """The working-set memo holds its trace; left behind, it would keep a dropped trace alive."""
    monkeypatch.setattr(sb, "memory_available", lambda: 64 << 30)
    first = sb.load_workload(_spec(0))
    sb.working_set_bytes(first, SimParams())
    assert any(t is first for t, _ in sb._WS_CACHE.values())
    monkeypatch.setattr(sb, "memory_available", lambda: 0)
    sb.load_workload(_spec(1))
    assert not _cached(first) and not any(t is first for t, _ in sb._WS_CACHE.values())
