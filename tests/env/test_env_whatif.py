"""What-if estimates (SHARDS mini caches) against full simulations at the same sizes and policies.

Documented tolerance (docs/env.md): on a Zipf(1.0) workload, the whole-run estimate is within
3 percentage points of the full simulation for allkeys-lru and allkeys-lfu at sizes x0.5 .. x2,
at 2 % and 5 % spatial sampling (with SHARDS-adj).
"""

from __future__ import annotations

import numpy as np
import pytest

from cachetuner.backend import RequestSample
from cachetuner.config import RedisConfig
from cachetuner.env import CacheTuningEnv, EnvConfig, WhatIfEstimator, hash_sample_mask, splitmix64
from cachetuner.env.config import WhatIfConfig
from cachetuner.sim import simulate

TOLERANCE_PP = 3.0
ZIPF = {"n_keys": 30_000, "n_requests": 600_000, "rate": 1000.0, "sizes": "llm"}


def test_splitmix64_is_the_reference_mix() -> None:
    # SplitMix64 (Steele, Lea, Flood 2014): first output for state 0 is 0xE220A8397B1DCDAF.
    assert int(splitmix64(np.array([0]))[0]) == 0xE220A8397B1DCDAF
    keys = np.arange(200_000)
    np.testing.assert_array_equal(splitmix64(keys), splitmix64(keys.copy()))
    share = hash_sample_mask(keys, 0.01).mean()
    assert 0.009 < share < 0.011
    # nested: a key kept at 1 % is kept at 5 % (live pre-sampling composes with the estimator's)
    assert np.all(hash_sample_mask(keys, 0.05)[hash_sample_mask(keys, 0.01)])


@pytest.mark.parametrize("rate", [0.02, 0.05])
def test_whatif_close_to_full_simulation(rate: float) -> None:
    cfg = EnvConfig.model_validate({
        "workloads": [{"trace": "synthetic:zipf", "params": ZIPF}],
        "episode_intervals": None,
        "warmup_intervals": 0,
        "bounds": {"initial_fraction": 0.2},
        "whatif": {"rate": rate, "min_keys": 0, "sizes": [0.5, 1.25, 2.0]},
    })
    env = CacheTuningEnv(cfg)
    env.reset(seed=0, options={"workload": 0, "start": "begin"})
    backend = env.backend
    base = backend.config
    done = False
    actual_hits = actual_gets = 0
    while not done:
        *_, done, info = env.step_config(base)
        actual_hits += info["snapshot"].hits
        actual_gets += info["snapshot"].gets
    assert env.whatif is not None
    est = env.whatif.cumulative()
    errors = {"current@1.00": 100 * (est["current@1.00"] - actual_hits / actual_gets)}
    for policy in ("allkeys-lru", "allkeys-lfu"):
        for f in (0.5, 2.0):
            config = base.evolve(maxmemory=int(base.maxmemory * f), maxmemory_policy=policy)
            full = simulate(backend.trace, config, backend.params, seed=0, interval_s=60).totals
            errors[f"{policy}@{f:.2f}"] = 100 * (est[f"{policy}@{f:.2f}"] - full["hits"] / full["gets"])
    assert max(abs(e) for e in errors.values()) < TOLERANCE_PP, errors


def test_estimator_follows_config_and_rebuilds_when_capacity_exceeded() -> None:
    cfg = WhatIfConfig(rate=1.0, min_keys=0, sizes=[0.5, 2.0], policies=["allkeys-lru"])
    est = WhatIfEstimator(cfg, RedisConfig(maxmemory=2_000_000), n_keys_hint=None)
    rng = np.random.default_rng(0)
    n = 30_000
    keys = rng.integers(0, 40_000, n) * 7919 + 10**12  # sparse, large live-style ids
    sample = RequestSample(keys=keys, sizes=np.full(n, 100), timestamps=np.linspace(0, 60, n),
                           ops=np.zeros(n, np.uint8), ttls=np.zeros(n), rate=1.0)  # fmt: skip
    out = est.update(sample)
    assert set(out) == {"allkeys-lru@0.50", "allkeys-lru@2.00", "current@1.00"}
    assert est.sampled_keys == len(np.unique(keys)) > 1 << 14  # grew past the default capacity
    assert out["allkeys-lru@0.50"] <= out["current@1.00"] <= out["allkeys-lru@2.00"]
    est.set_config(RedisConfig(maxmemory=100_000_000, maxmemory_policy="allkeys-lfu"))
    out2 = est.update(sample)
    assert out2["allkeys-lru@2.00"] >= out["allkeys-lru@2.00"]
    clone = est.clone()
    assert clone.update(sample) == est.update(sample)


def test_presampled_stream_uses_total_gets() -> None:
    """Live path: a 5 % sample plus the interval's GET count gives SHARDS-adj estimates in [0, 1]."""
    cfg = WhatIfConfig(rate=0.05, min_keys=0, sizes=[2.0], policies=["allkeys-lru"])
    est = WhatIfEstimator(cfg, RedisConfig(maxmemory=5_000_000))
    rng = np.random.default_rng(1)
    keys = rng.zipf(1.2, 100_000) % 50_000
    keep = hash_sample_mask(keys, 0.05)
    k = keys[keep]
    sample = RequestSample(keys=k, sizes=np.full(len(k), 1000), timestamps=np.sort(rng.random(len(k)) * 60),
                           ops=np.zeros(len(k), np.uint8), ttls=np.zeros(len(k)), rate=0.05)  # fmt: skip
    out = est.update(sample, total_gets=len(keys))
    assert all(0.0 <= v <= 1.0 for v in out.values())
    assert est.rate == 0.05


def test_dense_key_table_matches_hash_path() -> None:
    """The simulator path (key table over a known key space) samples exactly the keys the hash does."""
    rng = np.random.default_rng(2)
    n_keys, n = 20_000, 60_000
    keys = (rng.zipf(1.1, n) - 1) % n_keys
    cfg = WhatIfConfig(rate=0.05, min_keys=0, sizes=[0.5, 2.0])
    with_table = WhatIfEstimator(cfg, RedisConfig(maxmemory=3_000_000), n_keys_hint=n_keys)
    by_hash = WhatIfEstimator(cfg, RedisConfig(maxmemory=3_000_000), n_keys_hint=None)
    for part in np.array_split(np.arange(n), 4):
        sample = RequestSample(keys=keys[part], sizes=np.full(len(part), 2000), timestamps=part / 100.0,
                               ops=np.zeros(len(part), np.uint8), ttls=np.zeros(len(part)), rate=1.0)  # fmt: skip
        a, b = with_table.update(sample), by_hash.update(sample)
        assert a == pytest.approx(b, abs=0.01)
    assert with_table.sampled_keys == int(hash_sample_mask(np.arange(n_keys), 0.05).sum())
