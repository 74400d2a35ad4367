"""Sim-to-real fidelity on a shared real trace, and the memory calibration, against a real redis-server."""

from __future__ import annotations

from pathlib import Path

import pytest

from cachetuner.live.calibrate import calibrate
from cachetuner.live.fidelity import FidelityOptions, run_fidelity
from cachetuner.live.stack import LocalStack
from cachetuner.traces import read_trace


def test_fidelity_on_web07_within_one_point(shared_traces: Path, redis_only: LocalStack) -> None:
    trace = read_trace(shared_traces / "cache2k" / "web07.trace", "raw-be-i4", size_model="fixed:1000", limit=20_000)
    opts = FidelityOptions(policies=("allkeys-lru", "allkeys-lfu", "volatile-ttl"), sizes=(0.1, 0.4), rate=20_000)
    res = run_fidelity(trace, opts, redis_only.redis_url)
    assert len(res["cells"]) == 6 + 4 and len(res["scenarios"]) == 2  # + two non-default LFU cells per size
    assert res["max_abs_diff_pp"] <= 1.0, [(c["policy"], c["diff_pp"]) for c in res["cells"] + res["scenarios"]]
    for c in res["cells"] + res["scenarios"]:
        assert c["server_hits_match"], c  # Redis's own keyspace counters agree with the replayer's
        assert 0.0 < c["redis_hit_ratio"] < 1.0
    lru = next(c for c in res["cells"] if c["policy"] == "allkeys-lru" and c["size_fraction"] == 0.1)
    assert lru["redis_evictions"] > 0 and lru["sim_evictions"] > 0
    ttl = next(c for c in res["cells"] if c["policy"] == "volatile-ttl")
    assert ttl["redis_rejected_writes"] > 0 and ttl["sim_rejected_writes"] > 0  # no TTLs: OOM like noeviction
    assert abs(res["memory_model_err_pct"]) < 2.0


def test_calibration_matches_the_sim_formula(redis_only: LocalStack) -> None:
    cal = calibrate(redis_only.redis_url, sizes=(44, 45, 1000, 4096), n_keys=3000)
    assert cal.redis_version.startswith("7.") and cal.allocator.startswith("jemalloc")
    assert 500_000 < cal.base_used_memory < 5_000_000
    assert cal.chosen == "formula"
    by_size = {row["value_bytes"]: row for row in cal.rows if not row["ttl"]}
    # jemalloc size classes: 45 bytes no longer fits an embstr, the step shows in both model and Redis.
    assert by_size[45]["measured_per_key"] > by_size[44]["measured_per_key"]
    assert by_size[45]["formula_per_key"] > by_size[44]["formula_per_key"]
    assert abs(by_size[1000]["formula_err_pct"]) < 2.0 and abs(by_size[4096]["formula_err_pct"]) < 1.0
    params = cal.sim_params()
    assert params.memory.base_used_memory == cal.base_used_memory and params.clients.n_clients == 1


@pytest.mark.slow
def test_lfu_fidelity_on_write_heavy_cloudphysics(shared_traces: Path, redis_only: LocalStack) -> None:
    """allkeys-lfu on a write-heavy real trace (CloudPhysics: ~4 SETs per GET, 512 B-68 KiB values) at
    Redis's default and a non-default lfu-log-factor / lfu-decay-time, plus a policy switch to LFU and a
    shrink: every cell within 1 pp of the real Redis (issue 14). A single ~4 s replay of a cell varies
    by about +-0.6 pp from one Redis run to the next (its hash seed and sampling stream), so each cell
    is the mean of three replays, each against four simulator seeds on its send times; if a cell's mean lands
    outside the bound, every cell gets three more and the mean of all six is judged. The second
    non-default pair, (100, 0), is in the README's table (``cachetuner fidelity``): here it would add
    ~27 s to the suite for the same code path."""
    trace = read_trace(shared_traces / "cloudphysics" / "cloudPhysicsIO.csv", limit=20_000)
    assert int((trace.ops == 1).sum()) > 3 * int((trace.ops == 0).sum())  # write-heavy
    opts = FidelityOptions(
        policies=("allkeys-lfu",), sizes=(0.2, 0.5), rate=5_000, unbounded=False, sim_seeds=4, redis_repeats=3,
        lfu_variants=((1, 1),),
    )
    res = run_fidelity(trace, opts, redis_only.redis_url)
    assert len(res["cells"]) == 4 and len(res["scenarios"]) == 2
    assert {(c["lfu_log_factor"], c["lfu_decay_time"]) for c in res["cells"]} == {(10, 1), (1, 1)}
    def cell(c: dict) -> tuple:
        return c.get("scenario", c["policy"]), c["lfu_log_factor"], c.get("size_fraction")

    diffs = {cell(c): [c["diff_pp"]] for c in res["cells"] + res["scenarios"]}
    if res["max_abs_diff_pp"] > 1.0:
        # A second stage, judged on the mean of all six replays per cell, the first three included: one CI run in
        # many read one cell's mean of three at 1.048 pp, and its rerun passed; single replays measured on this
        # machine, idle or with both cores busy, read -0.81 to +0.81 pp (60 single replays of the six cells, 2026-12-06).
        again = run_fidelity(trace, opts, redis_only.redis_url)
        for c in again["cells"] + again["scenarios"]:
            diffs[cell(c)].append(c["diff_pp"])
    worst = max(abs(sum(d) / len(d)) for d in diffs.values())
    assert worst <= 1.0, diffs
    for c in res["cells"]:
        assert c["server_hits_match"], c
        assert c["redis_evictions"] > 0 and abs(c["sim_evictions"] - c["redis_evictions"]) < 0.03 * c["redis_evictions"], c
