"""Live shadow mode end to end: real redis-server + redis_exporter + prometheus, the replayer publishing
its hash-sampled key stream, the control on the real Redis and the treatment estimated from the stream."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from cachetuner.ab.config import ABConfig
from cachetuner.ab.runner import run_ab
from cachetuner.live.replay import ReplayOptions, replay
from cachetuner.live.stack import LocalStack
from cachetuner.traces import read_trace

pytestmark = pytest.mark.integration

SMALL_MEM = 3_000_000


@pytest.fixture()
def stack(tmp_path: Path) -> Iterator[LocalStack]:
    with LocalStack(tmp_path / "stack", maxmemory=SMALL_MEM, maxmemory_policy="allkeys-lru") as s:
        yield s


def _warm_up() -> None:
    """Compile the simulator's kernels and import what ``run_ab`` imports lazily *before* the replayer
    thread starts: in a fresh checkout numba compiles for tens of seconds holding the GIL, and the
    replayer (a thread of this process here, a process of its own in production) starved meanwhile:
    three fresh-clone CI runs read 16-42 sampled keys instead of ~2,000."""
    import mlflow  # noqa: F401

    from cachetuner.config import RedisConfig
    from cachetuner.sim import TieredCacheSim

    tiny = read_trace("synthetic:zipf", size_model="fixed:1024", rate=1500, seed=1,
                      params={"n_requests": 3000, "n_keys": 500, "alpha": 0.9})
    sim = TieredCacheSim.for_trace(tiny, RedisConfig(maxmemory=200_000, maxmemory_policy="allkeys-lru"))
    sim.run(tiny, 0, 1500)
    sim.run_counts(tiny, 1500, 3000)


@pytest.mark.slow
def test_shadow_on_live_redis_estimates_a_bigger_cache(stack: LocalStack) -> None:
    _warm_up()
    # ~8 MB working set (8000 keys x 1 KiB) against a 3 MB Redis; the treatment would have 16 MB.
    trace = read_trace("synthetic:zipf", size_model="fixed:1024", rate=1500, seed=3,
                       params={"n_requests": 90_000, "n_keys": 8000, "alpha": 0.9})
    stop = threading.Event()
    opts = ReplayOptions(rate=1500, duration_s=60, loop=True, sample_rate=0.25, stack_dir=str(stack.dir),
                         miss_latency_ms=50.0)
    errors: list[BaseException] = []
    sending = threading.Event()  # the replayer waits for Prometheus's first scrape before it sends

    def run() -> None:
        try:
            replay(trace, stack.redis_url, opts, stop=stop, progress=lambda n: sending.set())
        except BaseException as e:  # noqa: BLE001 (surface in the test thread)
            errors.append(e)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    try:
        assert sending.wait(60), errors or "replayer never started sending"
        cfg = ABConfig.model_validate({
            "name": "live-shadow",
            "mode": "shadow",
            "horizon_intervals": 6,
            "primary_metric": "hit_ratio",
            "control": {"tuner": "current"},
            "treatment": {"config": {"maxmemory": 16_000_000, "maxmemory_policy": "allkeys-lru"}},
            "env": {"interval_s": 2, "warmup_intervals": 3, "whatif": {"enabled": False},
                    "bounds": {"min_bytes": 1_000_000, "max_bytes": 100_000_000}},
            "shadow": {"control_backend": "live", "sample_rate": 0.25,
                       "backend_options": {"redis_url": stack.redis_url, "prometheus_url": stack.prometheus_url,
                                           "bounds": [1_000_000, 100_000_000]}},
        })
        res = run_ab(cfg)
    finally:
        stop.set()
        t.join(timeout=30)
    assert not errors, errors
    assert res.intervals == 6
    assert res.meta["shadow_sampled_keys"] > 100
    assert res.treatment.estimated
    gets = res.control.series("gets")
    assert (gets > 0).all()
    np.testing.assert_array_equal(res.treatment.series("gets"), gets)  # same traffic by construction
    # control really ran at 3 MB; the estimate runs 16 MB and must see clearly more hits
    assert (res.control.series("maxmemory_mb") < 3.5).all()
    assert (res.treatment.series("maxmemory_mb") > 15).all()
    c, tr = res.control.series("hit_ratio").mean(), res.treatment.series("hit_ratio").mean()
    assert tr > c + 0.05, (c, tr)
    assert res.verdict.verdict == "better"
