"""The ``lcs``, ``twitter-bin`` and generic ``csv`` readers.

Binary files are written here with numpy dtypes spelled out field by field (independently of the
reader's own layout tables) and, where libCacheSim can read them, cross-checked request by request
against the ``libcachesim`` package itself: lcs v1 (from the CloudPhysics oracleGeneral sample), v2,
v3 and v6, and twrBin. libcachesim aborts the process on a bad lcs header, so only valid files are
given to it; our error cases are checked on our reader alone.
"""

from __future__ import annotations

import json
from pathlib import Path

import libcachesim
import numpy as np
import pytest
import zstandard
from traces_testlib import one_line_error
from typer.testing import CliRunner

import cachetuner.cli.trace_cmds  # noqa: F401  (registers the commands)
from cachetuner.cli.app import app
from cachetuner.traces import FORMATS, Op, detect_format, read_trace
from cachetuner.traces.readers.ops import LIBCACHESIM_OPS

MAGIC = 0x123456789ABCDEF0
G, S, D = Op.GET, Op.SET, Op.DELETE
#: libCacheSim req_op_e codes 1..14 and what each must become
EXPECTED_OPS = [G, G, S, S, S, S, S, S, D, S, S, G, S, S]

V1 = np.dtype([("t", "<u4"), ("id", "<u8"), ("sz", "<u4"), ("nxt", "<i8")])
V2 = np.dtype([("t", "<u4"), ("id", "<u8"), ("sz", "<u4"), ("op_tenant", "<u4"), ("nxt", "<i8")])
V3 = np.dtype(
    [("t", "<u4"), ("id", "<u8"), ("sz", "<i8"), ("op_tenant", "<u4"), ("ttl", "<u4"), ("nxt", "<i8")]
)
VERSION_DTYPES = {
    1: V1,
    2: V2,
    3: V3,
    6: np.dtype(V3.descr + [("features", "<u4", (4,))]),
    8: np.dtype(V3.descr + [("features", "<u4", (16,))]),
}
TWR = np.dtype([("t", "<u4"), ("id", "<u8"), ("kv", "<u4"), ("op_ttl", "<u4")])

runner = CliRunner()


_err = one_line_error


def _header(version: int, *, end_magic: int = MAGIC) -> bytes:
    h = np.zeros(1024, dtype="<u8")
    h[0], h[1], h[1023] = MAGIC, version, end_magic
    h[2:7] = [1, 123, 45, 6789, 1011]  # stat: version, n_req, n_obj, n_req_byte, n_obj_byte (never read)
    return h.tobytes()


def _records(version: int, ids, sizes, *, times=None, ops=None, ttls=None) -> np.ndarray:
    """Records of lcs ``version`` with non-zero tenant, next_access_vtime and features (all ignored)."""
    n = len(ids)
    rec = np.zeros(n, dtype=VERSION_DTYPES[version])
    rec["t"] = np.arange(100, 100 + n) if times is None else times
    rec["id"], rec["sz"], rec["nxt"] = ids, sizes, 77
    if version >= 2:
        codes = np.asarray(ops if ops is not None else np.ones(n), dtype=np.uint32)
        rec["op_tenant"] = codes | (np.arange(n, dtype=np.uint32) % 5000 + 1) << 8  # op:8, tenant:24
    if version >= 3:
        rec["ttl"] = 0 if ttls is None else ttls
    if version > 3:
        rec["features"] = 0xDEADBEEF
    return rec


def _write_lcs(
    path: Path, version: int, rec: np.ndarray, *, end_magic: int = MAGIC, tail: bytes = b""
) -> Path:
    path.write_bytes(_header(version, end_magic=end_magic) + rec.tobytes() + tail)
    return path


def _twr(ids, key_sizes, value_sizes, ops, ttls) -> np.ndarray:
    rec = np.zeros(len(ids), dtype=TWR)
    rec["t"] = np.arange(len(ids)) // 3 + 1_000
    rec["id"] = ids
    rec["kv"] = (np.asarray(key_sizes, dtype=np.uint32) << 22) | np.asarray(value_sizes, dtype=np.uint32)
    rec["op_ttl"] = (np.asarray(ops, dtype=np.uint32) << 24) | np.asarray(ttls, dtype=np.uint32)
    return rec


def _first_appearance(raw: np.ndarray) -> np.ndarray:
    """Dense ids in order of first appearance, by a plain dict (independent of the readers)."""
    seen: dict[int, int] = {}
    return np.array([seen.setdefault(int(x), len(seen)) for x in raw], dtype=np.int64)


def _libcachesim(path: Path, trace_type) -> dict[str, np.ndarray]:
    """Every request as libCacheSim reads it (size-0 requests kept, like ours)."""
    init = libcachesim.ReaderInitParam()
    init.ignore_size_zero_req = False
    reader = libcachesim.TraceReader(str(path), trace_type, init)
    reqs = [(r.clock_time, r.obj_id, r.obj_size, int(r.op), r.ttl) for r in reader]
    # no reader.close(): libcachesim 0.3.5 frees the reader again when the object is collected (abort)
    cols = np.array(reqs, dtype=np.uint64).T
    return dict(zip(("t", "id", "sz", "op", "ttl"), cols, strict=True))


def _cloudphysics(shared_traces: Path, n: int = 20_000) -> np.ndarray:
    return np.fromfile(shared_traces / "cloudphysics/cloudPhysicsIO.oracleGeneral.bin", dtype=V1, count=n)


# ---------------------------------------------------------------- lcs


@pytest.mark.parametrize("version", [1, 2, 3, 6, 8])
def test_lcs_fields_per_version(tmp_path: Path, version: int) -> None:
    ids = [900, 5, 900, 2**63 + 7, 5]
    rec = _records(version, ids, [10, 20, 0, 40, 50], ops=[1, 3, 9, 13, 12], ttls=[0, 60, 0, 3600, 5])
    tr = read_trace(_write_lcs(tmp_path / f"v{version}.lcs", version, rec))
    assert tr.meta["format"] == "lcs" and tr.meta["lcs_version"] == version
    assert list(tr.keys) == [0, 1, 0, 2, 1] and tr.n_keys == 3
    assert list(tr.sizes) == [10, 20, 10, 40, 50]  # size 0 = unknown: the key's known size
    assert list(tr.timestamps) == [100.0, 101.0, 102.0, 103.0, 104.0]
    if version == 1:  # oracleGeneral layout: no ops
        assert tr.read_only and list(tr.ops) == [G] * 5
    else:
        assert not tr.read_only and list(tr.ops) == [G, S, D, S, G]
    assert list(tr.ttls) == ([0.0, 60.0, 0.0, 3600.0, 5.0] if version >= 3 else [0.0] * 5)


def test_lcs_maps_every_libcachesim_op(tmp_path: Path) -> None:
    codes = np.arange(1, 15)
    tr = read_trace(_write_lcs(tmp_path / "ops.lcs", 3, _records(3, codes, codes, ops=codes)))
    assert list(tr.ops) == EXPECTED_OPS
    # our code table names the same ops as libCacheSim's req_op_e
    for code, (name, _) in LIBCACHESIM_OPS.items():
        assert libcachesim.ReqOp(code).name == f"OP_{name.upper()}"
    assert {libcachesim.ReqOp(c).name for c in (0, 255)} == {"OP_NOP", "OP_INVALID"}


def test_lcs_v1_matches_libcachesim_and_oracle(shared_traces: Path, tmp_path: Path) -> None:
    src = _cloudphysics(shared_traces)
    path = _write_lcs(tmp_path / "cloudphysics.lcs", 1, src)
    ours = read_trace(path)
    ref = _libcachesim(path, libcachesim.TraceType.LCS_TRACE)
    assert len(ours) == len(ref["id"]) == 20_000
    assert np.array_equal(ours.keys, _first_appearance(ref["id"]))
    assert np.array_equal(ours.sizes, ref["sz"].astype(np.int64))
    assert np.array_equal(ours.timestamps, ref["t"].astype(np.float64))
    # the same records as oracleGeneral (no header) give the same Trace
    oracle_path = tmp_path / "cloudphysics.oracleGeneral.bin"
    src.tofile(oracle_path)
    oracle = read_trace(oracle_path)
    assert oracle.meta["format"] == "oracle" and ours.read_only and oracle.read_only
    for attr in ("keys", "sizes", "timestamps", "ops", "ttls", "key_bytes"):
        assert np.array_equal(getattr(ours, attr), getattr(oracle, attr)), attr
    assert ours.n_keys == oracle.n_keys


@pytest.mark.parametrize("version", [2, 3, 6])
def test_lcs_with_ops_matches_libcachesim(shared_traces: Path, tmp_path: Path, version: int) -> None:
    src = _cloudphysics(shared_traces, 5_000)
    n = len(src)
    codes = np.arange(n) % 14 + 1
    ttls = (np.arange(n) % 7) * 30
    rec = _records(version, src["id"], src["sz"], times=src["t"], ops=codes, ttls=ttls)
    path = _write_lcs(tmp_path / f"ops.v{version}.lcs", version, rec)
    ours = read_trace(path)
    ref = _libcachesim(path, libcachesim.TraceType.LCS_TRACE)
    assert len(ours) == len(ref["id"]) == n
    assert np.array_equal(ours.keys, _first_appearance(ref["id"]))
    assert np.array_equal(ours.sizes, ref["sz"].astype(np.int64))
    assert np.array_equal(ref["op"], codes)
    assert np.array_equal(ours.ops, np.array(EXPECTED_OPS)[ref["op"].astype(np.int64) - 1])
    assert np.array_equal(ours.ttls, ref["ttl"].astype(np.float64) if version >= 3 else np.zeros(n))


def test_lcs_zst_auto_detected(tmp_path: Path) -> None:
    rec = _records(3, [4, 5, 4, 6], [100, 200, 100, 300], ops=[3, 1, 1, 9], ttls=[10, 0, 0, 0])
    plain = read_trace(_write_lcs(tmp_path / "t.lcs", 3, rec))
    data = zstandard.ZstdCompressor().compress((tmp_path / "t.lcs").read_bytes())
    for name in ("t.lcs.zst", "t.bin.zst"):  # by extension, then by the magic behind the zstd frame
        (tmp_path / name).write_bytes(data)
        tr = read_trace(tmp_path / name)
        assert tr.meta["format"] == "lcs" and tr.meta["path"].endswith(".zst")
        for attr in ("keys", "sizes", "timestamps", "ops", "ttls"):
            assert np.array_equal(getattr(tr, attr), getattr(plain, attr)), (name, attr)


def test_lcs_detection_by_extension_and_magic(tmp_path: Path) -> None:
    rec = _records(2, [1, 2], [8, 8], ops=[1, 3])
    assert detect_format(_write_lcs(tmp_path / "trace.lcs", 2, rec)).name == "lcs"
    assert detect_format(_write_lcs(tmp_path / "x.bin", 2, rec)).name == "lcs"
    # .lcs names the format even when the content is wrong: reading then says what is wrong
    bad = tmp_path / "bad.lcs"
    bad.write_bytes(b"\x01" * 9000)
    assert detect_format(bad).name == "lcs"
    msg = _err(read_trace, bad)
    assert str(bad) in msg and "not an lcs trace" in msg and "0x123456789abcdef0" in msg


def test_lcs_limit_across_small_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import cachetuner.traces.streams as streams

    monkeypatch.setattr(streams, "BINARY_CHUNK_BYTES", 100)  # header skipped in pieces, 2 records a chunk
    ids = np.array([3, 1, 3, 2, 9, 1, 4])
    path = _write_lcs(tmp_path / "l.lcs", 3, _records(3, ids, ids * 10, ops=[1, 3, 1, 9, 1, 1, 1]))
    assert list(read_trace(path).keys) == [0, 1, 0, 2, 3, 1, 4]
    tr = read_trace(path, limit=4)
    assert list(tr.keys) == [0, 1, 0, 2] and list(tr.sizes) == [30, 10, 30, 20]
    assert list(tr.ops) == [G, S, G, D]


@pytest.mark.parametrize(
    ("version", "end_magic", "expected"),
    [
        (9, MAGIC, "unsupported lcs version 9 (supported: 1-8)"),
        (0, MAGIC, "unsupported lcs version 0 (supported: 1-8)"),
        (2, 0xFEED, "corrupt lcs header: end magic at byte offset 8184 is 0x000000000000feed, "
                    "expected 0x123456789abcdef0"),
    ],
)  # fmt: skip
def test_lcs_bad_header(tmp_path: Path, version: int, end_magic: int, expected: str) -> None:
    path = _write_lcs(tmp_path / "h.lcs", version, _records(2, [1], [1]), end_magic=end_magic)
    assert _err(read_trace, path) == f"{path}: {expected}"


def test_lcs_short_header_and_truncated_record(tmp_path: Path) -> None:
    short = tmp_path / "short.lcs"
    short.write_bytes(_header(1)[:5000])
    msg = _err(read_trace, short)
    assert msg == f"{short}: not an lcs trace: 5000 bytes, shorter than the 8192-byte header"
    path = _write_lcs(tmp_path / "cut.lcs", 2, _records(2, [1, 2, 3], [1, 1, 1]), tail=b"\x00" * 5)
    offset = 8192 + 3 * 28
    msg = _err(read_trace, path)
    assert msg == f"{path}: truncated record at byte offset {offset}: 5 trailing bytes, records are 28 bytes"


def test_lcs_unknown_op_code(tmp_path: Path) -> None:
    path = _write_lcs(tmp_path / "op.lcs", 3, _records(3, [1, 2, 3, 4], [1, 1, 1, 1], ops=[1, 3, 0, 200]))
    offset = 8192 + 2 * 36
    msg = _err(read_trace, path)
    assert msg.startswith(
        f"{path}: record 3 (byte offset {offset}): unknown op code 0 (valid: 1 get, 2 gets,"
    )
    assert "9 delete" in msg and "14 update" in msg
    assert len(read_trace(path, limit=2)) == 2  # records past the limit are not read


# ---------------------------------------------------------------- twitter-bin


def _twr_sample(n: int = 3_000) -> np.ndarray:
    rng = np.random.default_rng(7)
    return _twr(
        ids=rng.integers(1, 400, n).astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15),  # wraps: 64-bit ids
        key_sizes=rng.integers(1, 1024, n),
        value_sizes=np.where(rng.random(n) < 0.1, 0, rng.integers(1, 2**22, n)),
        ops=rng.integers(1, 15, n),
        ttls=np.where(rng.random(n) < 0.5, 0, rng.integers(1, 2**24, n)),
    )


def test_twitter_bin_fields(tmp_path: Path) -> None:
    rec = _twr(ids=[2**64 - 1, 8, 2**64 - 1, 8], key_sizes=[17, 9, 17, 1023], value_sizes=[249, 0, 300, 2**22 - 1],
               ops=[1, 3, 9, 5], ttls=[0, 3600, 0, 2**24 - 1])  # fmt: skip
    path = tmp_path / "sample.twr"
    rec.tofile(path)
    tr = read_trace(path, "twitter-bin")
    assert tr.meta["format"] == "twitter-bin" and not tr.read_only
    assert list(tr.keys) == [0, 1, 0, 1]
    # key + value bytes; value 0 (a miss) is filled with the key's largest known size
    assert list(tr.sizes) == [17 + 249, 1023 + 2**22 - 1, 17 + 300, 1023 + 2**22 - 1]
    assert list(tr.ops) == [G, S, D, S]
    assert list(tr.ttls) == [0.0, 3600.0, 0.0, float(2**24 - 1)]
    assert list(tr.timestamps) == [1000.0] * 3 + [1001.0]
    assert list(tr.key_bytes) == [17, 1023]  # per key: the largest key size logged for it


def test_twitter_bin_matches_libcachesim(tmp_path: Path) -> None:
    rec = _twr_sample()
    path = tmp_path / "twr.bin"
    rec.tofile(path)
    ours = read_trace(path, "twitter-bin")
    ref = _libcachesim(path, libcachesim.TraceType.TWR_TRACE)
    assert len(ours) == len(ref["id"]) == len(rec)
    assert np.array_equal(ours.keys, _first_appearance(ref["id"]))
    known = (rec["kv"] & 0x3FFFFF) > 0
    assert 0 < known.sum() < len(rec)
    assert np.array_equal(ours.sizes[known], ref["sz"][known].astype(np.int64))
    assert np.array_equal(ours.ops, np.array(EXPECTED_OPS)[ref["op"].astype(np.int64) - 1])
    assert np.array_equal(ours.ttls, ref["ttl"].astype(np.float64))
    assert np.array_equal(ours.timestamps, ref["t"].astype(np.float64))


def test_twitter_bin_needs_format_limit_and_errors(tmp_path: Path) -> None:
    path = tmp_path / "twr.bin"
    _twr_sample().tofile(path)
    msg = _err(read_trace, path)  # no magic number: auto-detection refuses and asks for --format
    assert "cannot tell the trace format" in msg and "--format" in msg
    no_magic = msg.split("binary without a magic number: ")[1].split(")")[0]
    assert "twitter-bin" in no_magic and "oracle" in no_magic and "lcs" not in no_magic.split(", ")
    tr = read_trace(path, "twitter-bin", limit=100)
    assert len(tr) == 100
    bad = _twr(ids=[1, 2, 3], key_sizes=[1, 1, 1], value_sizes=[1, 1, 1], ops=[1, 15, 0], ttls=[0, 0, 0])
    bad.tofile(path)
    assert _err(read_trace, path, "twitter-bin").startswith(
        f"{path}: record 2 (byte offset 20): unknown op code 15 (valid: 1 get,"
    )
    path.write_bytes(bad.tobytes()[:-3])
    assert _err(read_trace, path, "twitter-bin") == (
        f"{path}: truncated record at byte offset 40: 17 trailing bytes, records are 20 bytes"
    )


# ---------------------------------------------------------------- csv


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_csv_header_names_string_keys_and_ops(tmp_path: Path) -> None:
    p = _write(
        tmp_path,
        "kv.csv",
        "ts,user,Key,bytes,Op,ttl,klen\n"
        "1.5,u1,alpha,100,GET,0,5\n"
        "2.0,u2,beta,0,set,60,4\n"
        "2.5,u1,alpha,120,Del,0,5\n"
        "3.0,u3,gamma,7,incr,0,5\n",
    )
    params = {"header": True, "key": "key", "time": "TS", "size": 4, "op": "op", "ttl": "ttl"}
    tr = read_trace(p, "csv", params={**params, "key_size": "klen"})
    assert tr.meta["format"] == "csv" and tr.meta["key_type"] == "string"
    assert list(tr.keys) == [0, 1, 0, 2]
    assert list(tr.timestamps) == [1.5, 2.0, 2.5, 3.0]
    assert list(tr.sizes) == [100, 4096, 120, 7]  # beta's size 0 is unknown: the default model fills it
    assert list(tr.ops) == [G, S, D, S] and not tr.read_only
    assert list(tr.ttls) == [0.0, 60.0, 0.0, 0.0]
    assert list(tr.key_bytes) == [5, 4, 5]
    # without key_size, string keys are charged their own length
    tr = read_trace(p, "csv", params={"header": True, "key": 3})
    assert list(tr.key_bytes) == [5, 4, 5] and tr.read_only


def test_csv_integer_keys_without_times(tmp_path: Path) -> None:
    p = _write(tmp_path, "ints.txt", "x  42\t 8\ny -7 9\n\nz 42 8\n")
    tr = read_trace(p, "csv", params={"key": 2, "size": 3, "delimiter": None}, rate=10)
    assert tr.meta["key_type"] == "integer" and tr.meta["timing"] == "uniform at rate"
    assert list(tr.keys) == [0, 1, 0] and list(tr.sizes) == [8, 9, 8]
    assert list(tr.timestamps) == [0.0, 0.1, 0.2] and tr.read_only
    assert list(tr.key_bytes) == [4, 4]  # replayer names ct:0, ct:1
    assert len(read_trace(p, "csv", params={"key": 2, "delimiter": None}, limit=2)) == 2


def test_csv_time_unit_scales_the_time_column_to_seconds(tmp_path: Path) -> None:
    """Block traces log time in other units (MSR Cambridge: Windows FILETIME, 100 ns ticks): read as seconds, an
    hour of them would be 36 billion seconds of intervals."""
    p = _write(tmp_path, "msr.csv", "128166385295514663,hm,0,Read,9056014336,4096,2833\n"
                                    "128166385305514663,hm,0,Read,11855351808,4096,2617\n"
                                    "128166385395514663,hm,0,Read,9056014336,4096,2320\n")
    cols = {"key": 5, "time": 1, "size": 6}
    ticks = read_trace(p, "csv", params={**cols, "time_unit": "100ns"})
    assert ticks.meta["timing"] == "from trace" and list(np.round(np.diff(ticks.timestamps), 6)) == [1.0, 9.0]
    assert list(ticks.keys) == [0, 1, 0] and list(ticks.sizes) == [4096] * 3
    ms = read_trace(_write(tmp_path, "ms.csv", "1000,1\n1500,2\n4000,1\n"), "csv", params={"key": 2, "time": 1, "time_unit": "ms"})
    assert list(ms.timestamps - ms.timestamps[0]) == [0.0, 0.5, 3.0]


def test_csv_falls_back_to_string_keys_in_a_later_chunk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import cachetuner.traces.streams as streams

    monkeypatch.setattr(streams, "TEXT_CHUNK_LINES", 2)
    keys = ["1", "2", "01", "1", "2", "x", "01"]
    p = _write(tmp_path, "mixed.csv", "".join(f"{k},{'pad' * 15}\n" for k in keys))
    assert len(list(streams.iter_lines(p))) > 2
    tr = read_trace(p, "csv", params={"key": 1})
    # "1" and "01" are different keys once the column is text
    assert tr.meta["key_type"] == "string" and list(tr.keys) == [0, 1, 2, 0, 1, 3, 2]


def test_csv_is_never_auto_detected(tmp_path: Path) -> None:
    assert not any(FORMATS["csv"].sniff(h) for h in (b"key,size\n1,2\n", b"1,2,3\n4,5,6\n", b"a\tb\n"))
    p = _write(tmp_path, "plain.csv", "k1,100,get\nk2,200,set\n")
    msg = _err(read_trace, p)
    assert "cannot tell the trace format" in msg and "--format" in msg


@pytest.mark.parametrize(
    ("text", "params", "expected"),
    [
        ("1,2,3\n4,5\n", {"key": 1, "size": 3}, ":2: no column 3 (field 'size'): the row has 2 fields: '4,5'"),
        ("a,b\n1,2\n", {"key": "k", "header": True},
         ":1: param 'key': column 'k' not in the header (columns: a, b)"),
        ("k,s\n1,2\n3,big\n", {"key": "k", "size": "s", "header": True},
         ":3: field 'size' is not an integer: 'big'"),
        ("1,2\n1,-2\n", {"key": 1, "size": 2}, ":2: size must be >= 0, got -2"),
        ("1,get\n2,fetch\n", {"key": 1, "op": 2}, ":2: unknown op 'fetch' (valid: add, append, cas, decr, del,"),
        ("a\n,\n", {"key": 1}, ":2: field 'key' is empty"),
        ("1\n", {"key": 1, "sise": 3},
         ": param 'sise': unknown parameter (valid params: key, time, size, op, ttl, key_size, delimiter, header, "
         "time_unit)"),
        ("1\n", {"size": 1}, ": param 'key': Field required (valid params: key, time,"),
        ("1\n", {"key": 0}, ": param 'key': column indexes start at 1, got 0 (valid params:"),
        ("1\n", {"key": "name"}, ": param 'key': column name 'name' needs header: true (or give a 1-based column index)"),
        ("1\n", {"key": 1, "delimiter": "::"}, ": param 'delimiter': must be one character"),
        ("1,5\n", {"key": 1, "time": 2, "time_unit": "min"}, ": param 'time_unit': Input should be 's', 'ms', 'us', 'ns' or "),
    ],
)  # fmt: skip
def test_csv_errors(tmp_path: Path, text: str, params: dict, expected: str) -> None:
    p = _write(tmp_path, "bad.csv", text)
    assert _err(read_trace, p, "csv", params=params).startswith(f"{p}{expected}")


# ---------------------------------------------------------------- CLI


def test_cli_info_lcs_and_csv_params(tmp_path: Path) -> None:
    rec = _records(3, [10, 11, 10, 12], [100, 200, 100, 300], ops=[3, 1, 1, 9], ttls=[60, 0, 0, 0])
    path = _write_lcs(tmp_path / "cli.lcs", 3, rec)
    res = runner.invoke(app, ["trace", "info", "--trace", str(path), "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["format"] == "lcs" and data["requests"] == 4 and data["unique_keys"] == 3
    assert data["read_only"] is False and data["working_set_bytes"] == 600

    csv = _write(tmp_path, "t.csv", "time;key;size\n0;a;10\n1;b;20\n2;a;10\n")
    params = tmp_path / "p.yaml"
    params.write_text("header: true\ndelimiter: ';'\nkey: key\ntime: time\nsize: 3\n")
    res = runner.invoke(
        app, ["trace", "info", "--trace", str(csv), "--format", "csv", "--params", str(params), "--json"]
    )
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["format"] == "csv" and data["requests"] == 3 and data["unique_keys"] == 2
    assert data["duration_s"] == 2.0 and data["working_set_bytes"] == 30
