"""Synthetic workloads: seeded, reproducible, and each really has the property it is named for."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cachetuner.traces import SYNTHETIC_WORKLOADS, Op, parse_size_model, read_trace
from cachetuner.traces.assemble import dense_ids
from cachetuner.traces.stats import top_share

SMALL = {"n_requests": 40_000, "n_keys": 5_000}


@pytest.mark.parametrize("name", sorted(SYNTHETIC_WORKLOADS))
def test_reproducible_per_seed(name: str) -> None:
    a = read_trace(f"synthetic:{name}", seed=7, params=SMALL)
    b = read_trace(f"synthetic:{name}", seed=7, params=SMALL)
    c = read_trace(f"synthetic:{name}", seed=8, params=SMALL)
    assert len(a) == 40_000 and a.name == f"synthetic:{name}"
    for attr in ("timestamps", "keys", "sizes", "ops", "ttls", "key_bytes"):
        assert np.array_equal(getattr(a, attr), getattr(b, attr)), attr
    assert not np.array_equal(a.keys, c.keys)
    assert np.all(np.diff(a.timestamps) >= 0) and a.sizes.min() >= 1
    assert np.all(np.diff(np.maximum.accumulate(a.keys)) <= 1)  # first-appearance numbering


def test_zipf_skew_follows_alpha() -> None:
    flat = read_trace("synthetic:zipf", params={**SMALL, "alpha": 0.0})
    steep = read_trace("synthetic:zipf", params={**SMALL, "alpha": 1.2})
    assert top_share(flat) < 0.03 < 0.4 < top_share(steep)
    assert flat.read_only and flat.duration == pytest.approx(40_000 / 1000.0, rel=0.05)


def _top_keys(keys: np.ndarray, k: int) -> set[int]:
    return set(np.argsort(np.bincount(keys))[-k:].tolist())


def test_phase_shift_replaces_hot_set() -> None:
    tr = read_trace("synthetic:phase-shift", params={**SMALL, "n_phases": 2, "alpha": 1.0})
    first, second = tr.keys[:20_000], tr.keys[20_000:]
    hot1, hot2 = _top_keys(first, 50), _top_keys(second, 50)
    assert len(hot1 & hot2) <= 5
    same = read_trace("synthetic:zipf", params={**SMALL, "alpha": 1.0})
    assert len(_top_keys(same.keys[:20_000], 50) & _top_keys(same.keys[20_000:], 50)) >= 35


def test_phase_shift_at_given_times() -> None:
    tr = read_trace("synthetic:phase-shift", params={**SMALL, "shift_times": [10.0, 30.0]})
    cut1, cut2 = tr.index_at(10.0), tr.index_at(30.0)
    parts = [tr.keys[:cut1], tr.keys[cut1:cut2], tr.keys[cut2:]]
    hots = [_top_keys(p, 20) for p in parts]
    assert len(hots[0] & hots[1]) <= 3 and len(hots[1] & hots[2]) <= 3


def test_drift_moves_hot_set_gradually() -> None:
    tr = read_trace("synthetic:zipf-drift", params={**SMALL, "drift_per_1k": 5.0})
    q = [tr.keys[i * 10_000 : (i + 1) * 10_000] for i in range(4)]
    near = len(_top_keys(q[0], 50) & _top_keys(q[1], 50))
    far = len(_top_keys(q[0], 50) & _top_keys(q[3], 50))
    assert far < near


def test_scan_inserts_sequential_cold_keys() -> None:
    tr = read_trace("synthetic:scan", params={**SMALL, "scan_every": 9_000, "scan_length": 1_000})
    scan = tr.keys[9_000:10_000]
    assert np.all(np.diff(scan) == 1)  # never-seen keys, numbered as they appear
    assert scan.min() > tr.keys[:9_000].max()


def test_diurnal_rate_swings() -> None:
    tr = read_trace("synthetic:diurnal", params={**SMALL, "period_s": 20.0, "amplitude": 0.8})
    per_s = np.bincount(tr.timestamps.astype(np.int64))
    peak, trough = per_s[3:8].mean(), per_s[13:18].mean()  # sin>0 in [0,10), <0 in [10,20)
    assert peak > 2.5 * trough


def test_mixed_ttl_per_key_classes() -> None:
    tr = read_trace(
        "synthetic:mixed-ttl", params={**SMALL, "ttls": [0, 60, 600], "ttl_weights": [0.5, 0.25, 0.25]}
    )
    assert set(np.unique(tr.ttls)) == {0.0, 60.0, 600.0}
    per_key = {}
    for k, t in zip(tr.keys[:5000], tr.ttls[:5000], strict=True):
        assert per_key.setdefault(int(k), t) == t


def test_read_write_mix() -> None:
    tr = read_trace(
        "synthetic:read-write", params={**SMALL, "get_ratio": 0.6, "set_ratio": 0.3, "delete_ratio": 0.1}
    )
    share = np.bincount(tr.ops, minlength=3) / len(tr)
    assert not tr.read_only
    assert share[Op.GET] == pytest.approx(0.6, abs=0.02) and share[Op.DELETE] == pytest.approx(0.1, abs=0.01)


def test_shifting_composite_phases() -> None:
    tr = read_trace("synthetic:shifting", params={"n_requests": 80_000, "n_keys": 5_000})
    assert len(tr) == 80_000 and np.all(np.diff(tr.timestamps) > 0)
    quarters = [tr.keys[i * 20_000 : (i + 1) * 20_000] for i in range(4)]
    assert len(_top_keys(quarters[0][-5000:], 30) & _top_keys(quarters[1][:5000], 30)) <= 6
    assert tr.meta["size_model"].startswith("llm")
    custom = read_trace(
        "synthetic:shifting",
        params={"n_requests": 10_000, "n_keys": 1000,
                "phases": [{"workload": "read-write", "fraction": 1}, {"workload": "zipf", "fraction": 1}]},
    )  # fmt: skip
    assert not custom.read_only and np.all(custom.ops[5000:] == Op.GET)


def test_workload_yaml_file_and_overrides(tmp_path: Path) -> None:
    p = tmp_path / "workload.yaml"
    p.write_text("synthetic: zipf\nparams:\n  n_requests: 5000\n  n_keys: 300\n  alpha: 0.9\n")
    a = read_trace(p, seed=1)
    b = read_trace("synthetic:zipf", seed=1, params={"n_requests": 5000, "n_keys": 300, "alpha": 0.9})
    assert np.array_equal(a.keys, b.keys) and a.n_keys <= 300
    c = read_trace(p, seed=1, params={"n_requests": 100}, rate=10.0, limit=50)
    assert len(c) == 50 and c.meta["params"]["rate"] == 10.0 and c.duration > 2.0


def test_default_generation_is_fast_enough_for_millions() -> None:
    tr = read_trace("synthetic:zipf", params={"n_requests": 2_000_000})
    assert len(tr) == 2_000_000


def test_size_models() -> None:
    rng = np.random.default_rng(0)
    assert np.all(parse_size_model("fixed:100").sample(10, rng) == 100)
    logn = parse_size_model("lognormal:4096,0.5").sample(50_000, rng)
    assert np.median(logn) == pytest.approx(4096, rel=0.03) and logn.min() >= 1
    llm = parse_size_model("llm").sample(50_000, rng)
    assert np.mean(llm == 1536) == pytest.approx(0.4, abs=0.01)
    answers = llm[llm != 1536]
    assert np.median(answers) == pytest.approx(8192, rel=0.05)
    assert parse_size_model("llm:0.5,768,20000,0.3").spec == "llm:0.5,768,20000,0.3"
    tr = read_trace("synthetic:zipf", params={**SMALL, "sizes": "lognormal:2000,1"}, seed=4)
    per_key = np.zeros(tr.n_keys, dtype=np.int64)
    per_key[tr.keys] = tr.sizes
    assert np.array_equal(per_key[tr.keys], tr.sizes)  # drawn once per key
    assert len(np.unique(tr.sizes)) > 100
    over = read_trace("synthetic:zipf", params=SMALL, size_model="fixed:10")
    assert np.all(over.sizes == 10)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-(2**62), 2**62), min_size=1, max_size=60), st.booleans())
def test_dense_ids_first_appearance(values: list[int], small_range: bool) -> None:
    raw = np.array([v % 50 if small_range else v for v in values], dtype=np.int64)
    ids, n = dense_ids(raw)
    seen: dict[int, int] = {}
    expected = [seen.setdefault(int(v), len(seen)) for v in raw]
    assert ids.tolist() == expected and n == len(seen)
    assert dense_ids(raw.astype(np.uint64) if raw.min() >= 0 else raw)[0].tolist() == expected
