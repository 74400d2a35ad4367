"""SimBackend: the CacheBackend protocol over the simulator, clone, windows and bounds."""

from __future__ import annotations

import numpy as np
from env_testlib import SMALL, small_cfg

from cachetuner.backend import BackendFacts, CacheBackend, SimulatedBackend, backend_facts
from cachetuner.env import SimBackend


def test_protocol_and_window() -> None:
    cfg = small_cfg()
    be = SimBackend(cfg)
    assert isinstance(be, CacheBackend)
    warm = be.reset(seed=0, workload=0, start=3)
    assert warm.requests > 0 and not be.exhausted
    lo, hi = be.bounds
    assert lo == int(cfg.bounds.min_fraction * be.working_set) and hi == int(cfg.bounds.max_fraction * be.working_set)
    assert lo <= be.config.maxmemory <= hi
    be.reset(seed=0, workload=0, start=3, warmup=False)
    be.step()
    ts = be.recent_requests().timestamps
    t_first = be.trace.timestamps[0]
    assert t_first + 3 * cfg.interval_s <= ts[0] and ts[-1] < t_first + 4 * cfg.interval_s
    for _ in range(cfg.warmup_intervals - 1):
        be.step()
    n = 0
    while not be.exhausted:
        snap = be.step()
        sample = be.recent_requests()
        assert len(sample.keys) == snap.requests and sample.rate == 1.0
        n += 1
    assert n == cfg.episode_intervals


def test_clone_is_independent_and_identical() -> None:
    be = SimBackend(small_cfg())
    be.reset(seed=1)
    be.step()
    twin = be.clone()
    a = [be.step() for _ in range(3)]
    b = [twin.step() for _ in range(3)]
    assert [(s.hits, s.evictions, s.used_memory) for s in a] == [(s.hits, s.evictions, s.used_memory) for s in b]
    # changing the clone does not touch the original
    twin2 = be.clone()
    twin2.apply(twin2.config.evolve(maxmemory=be.bounds[0]))
    assert be.config != twin2.config
    ra, rb = be.step(), twin2.step()
    assert rb.hits <= ra.hits and rb.maxmemory == be.bounds[0]


def test_apply_returns_result() -> None:
    be = SimBackend(small_cfg())
    be.reset(seed=0)
    res = be.apply(be.config.evolve(maxmemory_policy="volatile-ttl"))
    assert res.ok and res.applied.maxmemory_policy == "volatile-ttl" == be.config.maxmemory_policy


def test_random_windows_vary_with_seed() -> None:
    be = SimBackend(small_cfg())
    starts = set()
    for seed in range(8):
        be.reset(seed=seed, warmup=False)
        starts.add((be.workload_index, be._pos))
    assert len(starts) > 2
    assert np.isclose(be.rate_reference, 100.0, rtol=0.05)


def test_facts_and_simulated_protocol() -> None:
    """What the env reads from a backend comes from facts(); pinning and fork from SimulatedBackend."""
    from cachetuner.ab.shadow import ShadowBackend, SimulatedTeeBackend, TeeBackend
    from cachetuner.daemon.policy import MirrorBackend

    be = SimBackend(small_cfg())
    be.reset(seed=0, workload=0, start="begin", warmup=False)
    f = be.facts()
    assert isinstance(be, SimulatedBackend)
    assert f.bounds == be.bounds and f.working_set_bytes == be.working_set and f.n_keys == be.trace.n_keys
    assert f.key_bytes is be.trace.key_bytes and f.sim_params is be.params and f.workload_name == be.workload_name
    assert f.rate_reference == be.rate_reference and f.read_only == be.trace.read_only
    tee = TeeBackend(be)  # a tee over a simulated backend stays simulated; its fork leaves the tee behind
    assert isinstance(tee, SimulatedTeeBackend) and tee.facts() == f
    assert type(tee.clone()) is SimBackend
    shadow = ShadowBackend(tee, rate=0.1)
    assert not isinstance(shadow, SimulatedBackend)
    assert backend_facts(shadow).workload_name == f.workload_name and backend_facts(shadow).working_set_bytes is None
    mirror = MirrorBackend(lambda: None, (1, 2), 1.0)
    assert not isinstance(mirror, SimulatedBackend) and backend_facts(mirror) == BackendFacts(bounds=(1, 2))
    assert backend_facts(object()) == BackendFacts()


def test_rate_factor_replays_the_same_requests_faster_per_episode() -> None:
    """``rate_factor``: each episode draws one factor (seeded); an interval then holds that many times the
    requests, the rate reference follows, and the requests are the trace's own, in order."""
    plain = SimBackend(small_cfg(workloads=[{"trace": "synthetic:zipf", "params": SMALL}]))
    fast = SimBackend(small_cfg(workloads=[{"trace": "synthetic:zipf", "params": SMALL}], rate_factor=[0.2, 5.0]))
    plain.reset(seed=0, start="begin", warmup=False)
    base = [plain.step().gets for _ in range(3)]
    speeds = []
    for seed in (0, 1, 2, 0):
        fast.reset(seed=seed, start="begin", warmup=False)
        speeds.append(fast.speed)
        gets = [fast.step().gets for _ in range(3)]
        assert np.isclose(sum(gets), fast.speed * sum(base), rtol=0.15)
        assert np.isclose(fast.rate_reference, fast.speed * plain.rate_reference)
    assert len(set(speeds[:3])) == 3 and speeds[0] == speeds[3] and all(0.2 <= s <= 5.0 for s in speeds)
    fast.reset(seed=0, start="begin", warmup=False)
    fast.step()
    assert np.array_equal(fast.recent_requests().keys, fast.trace.keys[: len(fast.recent_requests().keys)])
    assert plain.speed == 1.0 and plain.n_intervals() != fast.n_intervals()


def test_rate_factor_is_checked() -> None:
    import pytest

    from cachetuner.errors import ConfigError
    from cachetuner.yamlconfig import validate

    with pytest.raises(ConfigError, match="rate_factor"):
        validate(type(small_cfg()), {"rate_factor": [2.0, 1.0]}, "x.yaml")
