"""``sized-once``: it measures at the initial config, sizes the cache from the curves once and holds it; so it
finds what a measuring operator would (LFU against scans) and misses what only following finds (a shift)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from cachetuner.control import ControlSettings, build_controllers
from cachetuner.env import EnvConfig, WorkloadSpec
from cachetuner.evaluation import evaluate_controllers

SETTINGS = ControlSettings(sized_once={"observe_intervals": 5})


def _cfg(workload: WorkloadSpec, bounds: dict, memory_price: float) -> EnvConfig:
    return EnvConfig(workloads=[workload], interval_s=10, episode_intervals=None, warmup_intervals=1, bounds=bounds,
                     actions={"policies": ["allkeys-lru", "allkeys-lfu"], "timeouts": [0]},
                     reward={"miss_cost": 0.0002, "memory_cost_per_gb_hour": memory_price, "slo_penalty": 0.0,
                             "switch_cost": 0.0})


def _configs(report, name: str) -> list[tuple[int, str]]:
    return [(r.maxmemory, r.policy) for r in report.results[name].records]


def test_it_measures_then_sets_lfu_against_scans_once_and_holds_it() -> None:
    """Zipf traffic flushed by scans of cold keys (LRU loses the hot set, LFU keeps it; the workload of
    `test_scan_mrc_switches_to_lfu_and_beats_static_default`)."""
    wl = WorkloadSpec(trace="synthetic:scan", rate=200,
                      params={"n_requests": 100000, "n_keys": 2000, "alpha": 0.9, "scan_every": 2000,
                              "scan_length": 2000, "cold_keys": 50000, "sizes": "fixed:4096"})
    cfg = _cfg(wl, {"min_bytes": 2_000_000, "max_bytes": 12_000_000, "initial_bytes": 6_000_000}, 5.0)
    rep = evaluate_controllers(cfg, build_controllers(["sized-once", "static-default"], SETTINGS), seed=0)
    seen = _configs(rep, "sized-once")
    assert seen[:5] == [(6_000_000, "allkeys-lru")] * 5  # it measures at the initial config first
    assert rep.results["sized-once"].summary["config_changes"] == 1
    assert seen[-1][1] == "allkeys-lfu" and len(set(seen)) == 2
    assert rep.results["sized-once"].summary["cost"] < rep.results["static-default"].summary["cost"]


def test_it_keeps_its_one_size_after_the_working_set_shrinks(tmp_path: Path) -> None:
    """3000 keys, then 300 from a quarter on, with memory dear: sized before the shift, it holds the large size;
    `mrc` follows the shift and costs less. That gap is what following the traffic is worth here; and a size
    chosen on a phase that ends costs more than the default left alone."""
    path = tmp_path / "shrink.trace"
    rng = np.random.default_rng(0)
    np.savetxt(path, np.concatenate([rng.integers(0, 3000, 15000), rng.integers(0, 300, 45000)]), fmt="%d")
    wl = WorkloadSpec(trace=str(path), format="lirs", size_model="fixed:4096", rate=200)
    cfg = _cfg(wl, {"min_fraction": 0.02, "max_fraction": 1.0, "initial_fraction": 0.5}, 1000.0)
    rep = evaluate_controllers(cfg, build_controllers(["sized-once", "mrc", "static-default"], SETTINGS), seed=0)
    seen = _configs(rep, "sized-once")
    assert rep.results["sized-once"].summary["config_changes"] == 1
    assert len(set(seen[len(seen) // 4:])) == 1  # decided before the shift, never moved again
    s = {k: r.summary["cost"] for k, r in rep.results.items()}
    assert s["mrc"] < s["static-default"] < s["sized-once"]  # sized for the first phase: dearer than not sizing
