"""Every reader parses its public sample; counts checked against shared/traces/INDEX.md."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cachetuner.errors import TraceError
from cachetuner.traces import (
    FORMATS,
    KEY_PREFIX,
    Op,
    TraceReader,
    bundled_trace_format,
    bundled_trace_path,
    detect_format,
    key_name,
    read_trace,
)
from cachetuner.traces.stats import top_share


def _check_invariants(tr) -> None:
    n = len(tr)
    assert n > 0
    assert tr.timestamps.dtype == np.float64 and np.all(np.diff(tr.timestamps) >= 0)
    assert tr.keys.dtype == np.int64 and tr.keys.min() == 0 and tr.keys.max() == tr.n_keys - 1
    # dense ids in order of first appearance: the running max grows by at most one per request
    assert np.all(np.diff(np.maximum.accumulate(tr.keys)) <= 1)
    assert tr.sizes.dtype == np.int64 and tr.sizes.min() >= 1
    assert tr.ops.dtype == np.uint8 and set(np.unique(tr.ops)) <= {Op.GET, Op.SET, Op.DELETE}
    assert tr.ttls.dtype == np.float64 and tr.ttls.min() >= 0
    assert len(tr.key_bytes) == tr.n_keys and tr.key_bytes.min() >= 1
    assert tr.read_only == bool(np.all(tr.ops == Op.GET))


@pytest.mark.parametrize(
    ("rel", "fmt", "requests", "keys", "top1"),
    [
        ("cloudphysics/cloudPhysicsIO.csv", "auto", 113_872, 48_974, 0.154),
        ("cloudphysics/cloudPhysicsIO.oracleGeneral.bin", "auto", 113_872, 48_974, 0.154),
        ("cache2k/web07.trace", "raw-be-i4", 76_118, 20_484, 0.37),
        ("cache2k/web12.trace", "raw-be-i4", 95_607, 13_756, 0.32),
        ("adaptsize/request.trace", "auto", 66_987, 36_815, 0.239),
        ("twitter/twitter_sample.csv", "auto", 100, 85, None),
    ],
)
def test_sample_counts_match_index(
    shared_traces: Path, rel: str, fmt: str, requests: int, keys: int, top1
) -> None:
    tr = read_trace(shared_traces / rel, fmt)
    _check_invariants(tr)
    assert (len(tr), tr.n_keys) == (requests, keys)
    if top1 is not None:
        assert top_share(tr) == pytest.approx(top1, abs=0.006)


def test_cloudphysics_csv_ops_times_and_sizes(shared_traces: Path) -> None:
    tr = read_trace(shared_traces / "cloudphysics/cloudPhysicsIO.csv")
    assert tr.meta["format"] == "libcachesim-csv" and not tr.read_only
    # 46,974 READ10 (28) and 66,898 WRITE10 (2a) in the file
    assert np.count_nonzero(tr.ops == Op.GET) == 46_974
    assert np.count_nonzero(tr.ops == Op.SET) == 66_898
    assert tr.duration == 7200.0  # the stated 2 hours: time is in seconds
    assert tr.sizes.min() == 512 and tr.sizes.max() == 69_632
    oracle = read_trace(shared_traces / "cloudphysics/cloudPhysicsIO.oracleGeneral.bin")
    assert oracle.read_only and np.array_equal(oracle.keys, tr.keys)
    assert np.array_equal(oracle.timestamps, tr.timestamps)


def test_numeric_key_bytes_follow_replayer_names(shared_traces: Path) -> None:
    tr = read_trace(shared_traces / "lirs/cpp.trace")
    for k in (0, 9, 10, 99, 100, tr.n_keys - 1):
        assert tr.key_bytes[k] == len(key_name(k)) == len(KEY_PREFIX) + len(str(k))


def test_lirs_skips_star_lines(shared_traces: Path) -> None:
    path = shared_traces / "lirs/cs.trace"
    tokens = path.read_text().split()
    tr = read_trace(path)
    assert tokens.count("*") == 2
    assert len(tr) == len(tokens) - 2 == 6781
    assert tr.n_keys == len(set(tokens) - {"*"}) == 1409
    assert tr.meta["timing"] == "uniform at rate" and tr.duration == pytest.approx((len(tr) - 1) / 1000.0)
    assert tr.meta["size_model"] == "fixed:4096" and np.all(tr.sizes == 4096)


def test_arc_expands_blocks(shared_traces: Path) -> None:
    path = shared_traces / "arc/P3.lis"
    tr = read_trace(path, limit=50_000)
    rows = np.loadtxt(path, dtype=np.int64, max_rows=5000)
    expected = np.concatenate([np.arange(s, s + n) for s, n, _, _ in rows])
    assert len(expected) > 50_000
    expected = expected[:50_000]
    _, first = np.unique(expected, return_index=True)
    assert len(tr) == 50_000 and tr.n_keys == len(first)
    # same request stream up to renaming: equal keys in the file <=> equal dense ids
    order = np.sort(first)
    rank = {int(expected[i]): r for r, i in enumerate(order)}
    assert np.array_equal(tr.keys, np.array([rank[int(b)] for b in expected]))
    assert np.all(tr.sizes == 512)
    lines = read_trace(path, params={"expand": False})
    assert (len(lines), lines.n_keys) == (238_578, 56_686)  # INDEX.md counts lines / start blocks
    assert lines.sizes[0] == 8 * 512


def test_meta_kv_expands_op_count(shared_traces: Path) -> None:
    path = shared_traces / "meta_kvcache/kv_traces_1.csv"
    rows = np.genfromtxt(path, delimiter=",", names=True, dtype=None, encoding="latin-1")
    tr = read_trace(path)
    assert tr.meta["format"] == "meta-kv" and tr.meta["rows"] == 99
    assert len(tr) == int(rows["op_count"].sum()) == 691
    assert tr.n_keys == len(np.unique(rows["key"])) == 52
    n_set = int(rows["op_count"][np.isin(rows["op"], ["SET", "SET_LEASE"])].sum())
    n_del = int(rows["op_count"][rows["op"] == "DELETE"].sum())
    assert np.count_nonzero(tr.ops == Op.SET) == n_set and np.count_nonzero(tr.ops == Op.DELETE) == n_del
    assert set(np.unique(tr.ttls[tr.ops == Op.SET])) <= set(rows["ttl"][rows["ttl"] > 0]) | {0.0}
    assert tr.ttls.max() == rows["ttl"].max()
    assert tr.key_bytes[0] == 48  # key_size of the first key
    # the collapsed row "a54f...,GET,3" becomes 3 requests for key 1 at one timestamp
    assert list(tr.keys[1:4]) == [1, 1, 1] and tr.timestamps[1] == tr.timestamps[3]


def test_twitter_ops_sizes_and_ttl(shared_traces: Path) -> None:
    tr = read_trace(shared_traces / "twitter/twitter_sample.csv")
    assert tr.meta["format"] == "twitter" and not tr.read_only
    # ops in the sample: get 91, gets 2 -> GET; add 5, cas 2 -> SET
    assert np.count_nonzero(tr.ops == Op.GET) == 93 and np.count_nonzero(tr.ops == Op.SET) == 7
    assert tr.sizes[0] == 17 + 249  # key_size + value_size
    assert tr.key_bytes[0] == 17
    assert tr.ttls.max() > 0


def test_zst_orm_night_with_limit(shared_traces: Path) -> None:
    tr = read_trace(shared_traces / "cache2k/orm-night.trace.zst", "raw-be-i4", limit=300_000)
    _check_invariants(tr)
    assert len(tr) == 300_000 and tr.read_only
    assert tr.meta["path"].endswith(".zst")


def test_zst_equals_plain(shared_traces: Path, tmp_path: Path) -> None:
    import zstandard

    src = shared_traces / "lirs/cs.trace"
    zpath = tmp_path / "cs.trace.zst"
    zpath.write_bytes(zstandard.ZstdCompressor().compress(src.read_bytes()))
    a, b = read_trace(src), read_trace(zpath)
    assert b.meta["format"] == "lirs"
    assert np.array_equal(a.keys, b.keys) and np.array_equal(a.timestamps, b.timestamps)


def test_limit_truncates_every_reader(shared_traces: Path) -> None:
    tr = read_trace(shared_traces / "cloudphysics/cloudPhysicsIO.csv", limit=1000)
    full = read_trace(shared_traces / "cloudphysics/cloudPhysicsIO.csv")
    assert (
        len(tr) == 1000
        and np.array_equal(tr.keys, full.keys[:1000])
        and tr.n_keys == full.keys[:1000].max() + 1
    )
    assert len(read_trace(shared_traces / "meta_kvcache/kv_traces_2.csv", limit=50)) == 50


def test_rate_and_size_model_options(shared_traces: Path) -> None:
    path = shared_traces / "cache2k/web07.trace"
    tr = read_trace(path, "raw-be-i4", rate=50.0, size_model="lognormal:1000,1.0", seed=3)
    assert tr.duration == pytest.approx((len(tr) - 1) / 50.0)
    again = read_trace(path, "raw-be-i4", rate=50.0, size_model="lognormal:1000,1.0", seed=3)
    assert np.array_equal(tr.sizes, again.sizes)
    # one size per key
    per_key = np.zeros(tr.n_keys, dtype=np.int64)
    per_key[tr.keys] = tr.sizes
    assert np.array_equal(per_key[tr.keys], tr.sizes)
    retimed = read_trace(shared_traces / "cloudphysics/cloudPhysicsIO.csv", rate=10.0, size_model="fixed:100")
    assert retimed.meta["timing"] == "re-timed uniformly at --rate" and np.all(retimed.sizes == 100)


def test_auto_detection(shared_traces: Path) -> None:
    expect = {
        "cloudphysics/cloudPhysicsIO.csv": "libcachesim-csv",
        "cloudphysics/cloudPhysicsIO.oracleGeneral.bin": "oracle",
        "arc/P6.lis": "arc",
        "lirs/sprite.trace": "lirs",
        "adaptsize/request.trace": "adaptsize",
        "meta_kvcache/kv_traces_2.csv": "meta-kv",
        "twitter/twitter_sample.csv": "twitter",
    }
    for rel, name in expect.items():
        assert detect_format(shared_traces / rel).name == name, rel


def test_detect_format_reads_the_public_collections_names(shared_traces: Path, tmp_path: Path) -> None:
    """libCacheSim's public trace collections name files ``cluster52.oracleGeneral.sample10.zst`` (a sampled copy)
    or ``w01.oracleGeneral.bin.zst``: the format's extension as dotted parts inside the name, not at its end. The
    shared oracleGeneral file is linked under such names (not copied) and read whole."""
    src = shared_traces / "cloudphysics" / "cloudPhysicsIO.oracleGeneral.bin"
    for alias in ("w01.oracleGeneral.sample10", "cluster52.oracleGeneral.sample100", "hm_0.OracleGeneral.bin"):
        link = tmp_path / alias
        link.symlink_to(src)
        assert detect_format(link).name == "oracle", alias
        assert len(read_trace(link)) == 113_872
    plain = tmp_path / "w01.sample10"  # no format in the name: a binary without a magic number is still refused
    plain.symlink_to(src)
    with pytest.raises(TraceError, match="binary without a magic number"):
        detect_format(plain)


def test_registry_conforms_to_protocol() -> None:
    assert {"oracle", "libcachesim-csv", "twitter", "meta-kv", "arc", "lirs", "adaptsize",
            "raw-be-i4", "raw-be-u4", "raw-be-i8"} <= set(FORMATS)  # fmt: skip
    for name, reader in FORMATS.items():
        assert isinstance(reader, TraceReader) and reader.name == name
        assert reader.sniff(b"") is False


def test_raw_widths(tmp_path: Path) -> None:
    keys = np.array([5, -1, 5, 7, 2**31 - 1, -1], dtype=">i8")
    (tmp_path / "k.i8").write_bytes(keys.tobytes())
    tr = read_trace(tmp_path / "k.i8", "raw-be-i8")
    assert list(tr.keys) == [0, 1, 0, 2, 3, 1]
    u4 = np.array([4_000_000_000, 1, 4_000_000_000], dtype=">u4")
    (tmp_path / "k.u4").write_bytes(u4.tobytes())
    assert list(read_trace(tmp_path / "k.u4", "raw-be-u4").keys) == [0, 1, 0]
    assert list(read_trace(tmp_path / "k.u4", "raw-be-i4").keys) == [0, 1, 0]  # same bytes, signed view


def test_bundled_trace_is_web07_prefix(shared_traces: Path) -> None:
    path = bundled_trace_path("web07")
    assert path.stat().st_size < 300_000
    assert (path.parent / "LICENSE.txt").is_file() and "CC BY 4.0" in (path.parent / "README.md").read_text()
    tr = read_trace(path, bundled_trace_format("web07"))
    full = read_trace(shared_traces / "cache2k/web07.trace", "raw-be-i4")
    assert len(tr) == 50_000 and np.array_equal(tr.keys, full.keys[:50_000])
    assert read_trace("bundled:web07").n_keys == tr.n_keys == 16_572


def test_progress_callback_reaches_file_size(shared_traces: Path) -> None:
    path = shared_traces / "cache2k/orm-night.trace.zst"
    seen: list[tuple[int, int]] = []
    read_trace(path, "raw-be-i4", progress=lambda done, total: seen.append((done, total)))
    assert seen and seen[-1] == (path.stat().st_size, path.stat().st_size)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
