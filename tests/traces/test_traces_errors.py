"""Malformed input fails with ONE line naming the file and the line / byte offset / param at fault."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import zstandard
from traces_testlib import one_line_error

from cachetuner.errors import CacheTunerError, ConfigError, TraceError
from cachetuner.traces import FORMATS, parse_size_model, read_trace

_err = one_line_error


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_unknown_format_lists_valid_names(tmp_path: Path) -> None:
    p = _write(tmp_path, "x.trace", "1\n")
    msg = _err(read_trace, p, "nope")
    assert "'nope'" in msg and all(name in msg for name in FORMATS)


def test_missing_file(tmp_path: Path) -> None:
    msg = _err(read_trace, tmp_path / "absent.trace", "lirs")
    assert "absent.trace" in msg and "not found" in msg


@pytest.mark.parametrize(
    "fmt", ["auto", "lirs", "oracle", "raw-be-i4", "libcachesim-csv", "twitter", "meta-kv"]
)
def test_empty_file(tmp_path: Path, fmt: str) -> None:
    p = _write(tmp_path, "empty.trace", "")
    msg = _err(read_trace, p, fmt)
    assert "empty.trace" in msg and "empty" in msg


def test_header_only_csv_has_no_requests(tmp_path: Path) -> None:
    p = _write(tmp_path, "h.csv", "version,time,op,size,lbn\n")
    msg = _err(read_trace, p)
    assert "h.csv" in msg and "no requests" in msg


def test_lirs_bad_line_number(tmp_path: Path) -> None:
    p = _write(tmp_path, "bad.trace", "1\n2\n*\n\n3\nx7\n4\n")
    msg = _err(read_trace, p, "lirs")
    assert msg.startswith(f"{p}:6:") and "'x7'" in msg and "integer" in msg


def test_bad_line_in_later_chunk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import cachetuner.traces.streams as streams

    monkeypatch.setattr(streams, "TEXT_CHUNK_LINES", 2)  # several chunks for a short file
    lines = [f"{i} 1 0 {i}" for i in range(200)]
    p = _write(tmp_path, "good.lis", "\n".join(lines) + "\n")
    assert len(list(streams.iter_lines(p))) > 10
    assert len(read_trace(p)) == 200
    lines[150] = "150 1 0"
    p = _write(tmp_path, "bad.lis", "\n".join(lines) + "\n")
    msg = _err(read_trace, p)
    assert msg.startswith(f"{p}:151:") and "expected 4 fields" in msg


def test_arc_zero_blocks(tmp_path: Path) -> None:
    p = _write(tmp_path, "z.lis", "10 8 0 0\n11 0 0 1\n")
    assert _err(read_trace, p).startswith(f"{p}:2: n_blocks must be >= 1")


def test_adaptsize_bad_size(tmp_path: Path) -> None:
    p = _write(tmp_path, "a.trace", "1 5 100\n2 6 -3\n")
    assert _err(read_trace, p, "adaptsize").startswith(f"{p}:2: size must be >= 1")


def test_csv_bad_header_and_unknown_op(tmp_path: Path) -> None:
    p = _write(tmp_path, "h.csv", "version,time,size,op,lbn\n1,2,28,512,3\n")
    assert _err(read_trace, p, "libcachesim-csv").startswith(f"{p}:1: expected header")
    p = _write(tmp_path, "op.csv", "version,time,op,size,lbn\n1,2,28,512,3\n1,2,35,512,4\n")
    msg = _err(read_trace, p)
    assert msg.startswith(f"{p}:3: unknown op '35'") and "2a" in msg


def test_csv_non_numeric_field(tmp_path: Path) -> None:
    p = _write(tmp_path, "n.csv", "version,time,op,size,lbn\n1,2,28,512,3\n1,2,28,big,4\n")
    msg = _err(read_trace, p)
    assert msg.startswith(f"{p}:3: field 'size' is not an integer")


def test_twitter_unknown_op_and_field_count(tmp_path: Path) -> None:
    p = _write(tmp_path, "t.csv", "0,k1,2,10,1,get,0\n1,k2,2,10,1,frob,0\n")
    assert _err(read_trace, p, "twitter").startswith(f"{p}:2: unknown op 'frob'")
    p = _write(tmp_path, "t2.csv", "0,k1,2,10,1,get,0\n1,k2,2,10,get,0\n")
    assert _err(read_trace, p, "twitter").startswith(f"{p}:2: expected 7 fields")


def test_meta_kv_errors(tmp_path: Path) -> None:
    head = "op_time,key,key_size,op,op_count,size,cache_hits,ttl,usecase,sub_usecase\n"
    p = _write(tmp_path, "m.csv", head + "1,aa,2,GET,1,5,0,0,1,1\n1,bb,2,GET,0,5,0,0,1,1\n")
    assert _err(read_trace, p, "meta-kv").startswith(f"{p}:3: op_count must be >= 1")
    p = _write(tmp_path, "m2.csv", "op_time,key,op,op_count,size\n1,aa,GET,1,5\n")
    msg = _err(read_trace, p, "meta-kv")
    assert msg.startswith(f"{p}:1: header lacks column(s) key_size")


def test_truncated_oracle_record(tmp_path: Path) -> None:
    rec = np.zeros(3, dtype=[("t", "<u4"), ("id", "<u8"), ("sz", "<u4"), ("nxt", "<i8")])
    p = tmp_path / "t.oracleGeneral.bin"
    p.write_bytes(rec.tobytes()[:-5])
    msg = _err(read_trace, p)
    assert msg == f"{p}: truncated record at byte offset 48: 19 trailing bytes, records are 24 bytes"


def test_truncated_record_after_first_chunk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import cachetuner.traces.streams as streams

    monkeypatch.setattr(streams, "BINARY_CHUNK_BYTES", 4096)
    n = 4096 // 8 * 3 + 10
    data = np.arange(n, dtype=">i8").tobytes() + b"\x01\x02\x03"
    p = tmp_path / "big.i8.zst"
    p.write_bytes(zstandard.ZstdCompressor(level=1).compress(data))
    msg = _err(read_trace, p, "raw-be-i8")
    assert f"byte offset {n * 8}:" in msg and "3 trailing bytes" in msg


def test_corrupt_zstd(tmp_path: Path) -> None:
    good = zstandard.ZstdCompressor().compress(b"1\n2\n3\n" * 1000)
    p = tmp_path / "c.trace.zst"
    p.write_bytes(good[:-8])
    msg = _err(read_trace, p, "lirs")
    assert str(p) in msg and "zstd" in msg


def test_ambiguous_binary_asks_for_format(tmp_path: Path) -> None:
    p = tmp_path / "keys.trace"
    p.write_bytes(np.arange(100, dtype=">i4").tobytes())
    msg = _err(read_trace, p)
    assert "--format" in msg and "raw-be-i4" in msg and "oracle" in msg


def test_bad_reader_param(tmp_path: Path) -> None:
    p = _write(tmp_path, "x.lis", "1 2 0 0\n")
    msg = _err(read_trace, p, params={"expnad": False})
    assert "param 'expnad'" in msg and "expand" in msg
    assert "param 'x'" in _err(read_trace, p, "lirs", params={"x": 1})


def test_bad_size_model_specs() -> None:
    assert "valid: fixed, lognormal, llm" in _err(parse_size_model, "gamma:1")
    assert "expected fixed:BYTES" in _err(parse_size_model, "fixed")
    assert "expected 2 arguments" in _err(parse_size_model, "lognormal:100")
    assert "numbers" in _err(parse_size_model, "fixed:abc")
    assert "positive" in _err(parse_size_model, "fixed:0")


def test_bad_limit_and_rate(tmp_path: Path) -> None:
    p = _write(tmp_path, "x.trace", "1\n")
    assert "limit" in _err(read_trace, p, "lirs", limit=0)
    assert "rate" in _err(read_trace, p, "lirs", rate=-1.0)


def test_synthetic_errors(tmp_path: Path) -> None:
    msg = _err(read_trace, "synthetic:nope")
    assert msg.startswith("unknown synthetic workload 'nope'; valid: ")
    assert {"zipf", "shifting"} <= set(msg.split("valid: ")[1].split(", "))
    msg = _err(read_trace, "synthetic:zipf", params={"alpah": 1.0})
    assert msg.startswith("synthetic:zipf: param 'alpah': unknown parameter")
    msg = _err(read_trace, "synthetic:zipf", params={"n_keys": -5})
    assert "param 'n_keys'" in msg
    msg = _err(read_trace, "synthetic:zipf", params={"sizes": "fixed:-1"})
    assert "param 'sizes'" in msg
    msg = _err(read_trace, "synthetic:read-write", params={"get_ratio": 0.5})
    assert "must be 1" in msg
    msg = _err(
        read_trace,
        "synthetic:shifting",
        params={"phases": [{"workload": "zipf", "fraction": 1, "params": {"bogus": 1}}]},
    )
    assert "phases[0]" in msg and "bogus" in msg


def test_workload_file_errors(tmp_path: Path) -> None:
    p = _write(tmp_path, "w.yaml", "synthetic: zipf\nparams: {alpha: 0.8, typo: 1}\n")
    msg = _err(read_trace, p)
    assert str(p) in msg and "param 'typo'" in msg
    p = _write(tmp_path, "w2.yaml", "synthetic: zipf\nparms: {}\n")
    assert f"{p}: field 'parms': unknown field" in _err(read_trace, p)
    p = _write(tmp_path, "w3.yaml", "synthetic: [\n")
    with pytest.raises(ConfigError) as info:
        read_trace(p)
    assert (
        isinstance(info.value, CacheTunerError) and str(p) in str(info.value) and "\n" not in str(info.value)
    )


def test_unknown_names_are_one_error_type(tmp_path: Path) -> None:
    """Every trace-side registry answers an unknown name with UnknownNameError, still a TraceError."""
    from cachetuner.errors import UnknownNameError

    p = _write(tmp_path, "x.trace", "1\n")
    cases = [
        (lambda: read_trace(p, "nope"), "unknown trace format 'nope'; valid: "),
        (lambda: read_trace("synthetic:nope"), "unknown synthetic workload 'nope'; valid: "),
        (lambda: read_trace("bundled:nope"), "unknown bundled trace 'nope'; valid: web07, web12"),
        (lambda: parse_size_model("gamma:1"), "size model 'gamma:1': unknown size model 'gamma'; valid: "),
    ]
    for fn, text in cases:
        with pytest.raises(UnknownNameError) as info:
            fn()
        assert isinstance(info.value, TraceError) and isinstance(info.value, ConfigError)
        assert str(info.value).startswith(text) and "\n" not in str(info.value)


def test_unknown_phase_workload_and_workload_file_name(tmp_path: Path) -> None:
    msg = _err(read_trace, "synthetic:shifting", params={"phases": [{"workload": "zipff", "fraction": 1}]})
    assert "phases[0].workload: unknown synthetic workload 'zipff'; valid: " in msg
    p = _write(tmp_path, "w.yaml", "synthetic: zipff\n")
    assert _err(read_trace, p).startswith(f"{p}: field 'synthetic': unknown synthetic workload 'zipff'; valid: ")


def test_a_trace_too_large_for_memory_stops_with_a_limit_hint(monkeypatch: pytest.MonkeyPatch, shared_traces) -> None:
    """A public trace of billions of requests read whole would be killed by the kernel's OOM killer; the reader stops
    first with one line that names --limit. Here the machine is made to look small (64 MB available: ~800k
    requests at the guard's 64 B each after its 80 % share); the real files and readers do the rest."""
    import cachetuner.traces.streams as streams

    monkeypatch.setattr(streams, "memory_available", lambda: 64_000_000)
    orm = shared_traces / "cache2k" / "orm-night.trace.zst"
    msg = _err(read_trace, orm, "raw-be-i4")
    assert "stopped after" in msg and "pass --limit (at most ~800,000 requests)" in msg
    assert len(read_trace(orm, "raw-be-i4", limit=500_000)) == 500_000  # a limit that fits: read as asked
    monkeypatch.setattr(streams, "memory_available", lambda: 32_000_000)  # text files count lines: 666k here
    msg = _err(read_trace, shared_traces / "arc" / "P2.lis.zst", "arc", params={"expand": False})
    assert "pass --limit (at most ~400,000 requests)" in msg
    monkeypatch.setattr(streams, "memory_available", lambda: None)  # unknown (not Linux): no guard
    assert len(read_trace(orm, "raw-be-i4", limit=1_000_000)) == 1_000_000


@pytest.mark.parametrize("codec,suffix", [("gzip", ".gz"), ("xz", ".xz"), ("bzip2", ".bz2")])
def test_gzip_xz_bzip2_are_decompressed_by_magic_number(tmp_path: Path, codec: str, suffix: str) -> None:
    """The Caffeine simulator's public traces ship as .gz and .xz: read undecompressed, their bytes would parse as
    garbage keys (a silent wrong trace), so the codec is recognised by its magic number, whatever the name."""
    import bz2
    import gzip
    import lzma

    compress = {"gzip": gzip.compress, "xz": lzma.compress, "bzip2": bz2.compress}[codec]

    def put(name: str, data: bytes) -> Path:
        p = tmp_path / name
        p.write_bytes(data)
        return p

    keys = np.array([5, 7, 5, 9, 7, 5] * 500, dtype=">i4")
    plain = read_trace(put("keys.raw", keys.tobytes()), "raw-be-i4")
    for name in (f"keys{suffix}", "keys.bin"):
        tr = read_trace(put(name, compress(keys.tobytes())), "raw-be-i4")
        assert len(tr) == keys.size and np.array_equal(tr.keys, plain.keys), (codec, name)
        assert tr.meta["compression"] == codec and "compression" not in plain.meta
    # the format is still picked by the extension under the compression suffix (ARC's .lis)
    arc = read_trace(put(f"p.lis{suffix}", compress(b"10 1 0 1\n20 2 0 2\n10 1 0 3\n")))
    assert arc.meta["format"] == "arc" and len(arc) == 4
    # cut short: one line naming the file and the codec, never a traceback or a shorter trace
    cut = put("cut.trace", compress(b"1\n2\n3\n" * 20000)[:-40])
    msg = _err(read_trace, cut, "lirs")
    assert str(cut) in msg and codec in msg


def test_a_raw_key_file_that_starts_like_gzip_or_bzip2_is_read_as_keys(tmp_path: Path) -> None:
    """Only the full magic counts: a raw key file is arbitrary bytes, and a first key of 0x1f8b.... or one spelling
    'BZh9' is a key, not a compressed stream."""
    from cachetuner.traces.streams import compression

    for first in (0x1F8B0000, 0x1F8B08E0, int.from_bytes(b"BZh9", "big")):  # method 0; reserved flags; no block magic
        keys = np.array([first, 3, 4, first], dtype=">u4")
        p = tmp_path / f"k{first}.bin"
        p.write_bytes(keys.tobytes())
        assert compression(p.read_bytes()[:10]) is None
        tr = read_trace(p, "raw-be-u4")
        assert len(tr) == 4 and tr.keys[0] == tr.keys[3] != tr.keys[1]


def _tar(members: dict[str, bytes], codec: str = "") -> bytes:
    """A tar archive (``codec``: '', 'gz', 'xz', 'bz2') of ``members``, in that order."""
    import io
    import tarfile

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=f"w:{codec}") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _zip(members: dict[str, bytes]) -> bytes:
    import io
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


@pytest.mark.parametrize("kind", ["tar", "tar.gz", "tar.xz", "tar.bz2", "zip"])
def test_an_archive_of_one_trace_file_is_read_as_that_file(tmp_path: Path, kind: str) -> None:
    """Public traces also ship as .tar.gz and .zip. Read as raw keys, an archive's headers would be parsed as keys
    without any error, so the archive is recognised by its magic (whatever its name) and its one file is read;
    macOS's resource-fork clutter does not count as a second file."""
    keys = np.array([5, 7, 5, 9, 7, 5] * 500, dtype=">i4")
    members = {"__MACOSX/._keys.trace": b"\x00\x05\x16\x07junk", "keys.trace": keys.tobytes()}
    if kind == "zip":
        data = _zip(members)
    else:
        data = _tar({"._keys.trace": b"junk", "keys.trace": keys.tobytes()}, kind[4:])
    for name in (f"keys.{kind}", "keys.bin"):
        p = tmp_path / name
        p.write_bytes(data)
        tr = read_trace(p, "raw-be-i4")
        assert len(tr) == keys.size and np.array_equal(tr.keys, read_trace(_raw(tmp_path, keys), "raw-be-i4").keys)
        assert tr.meta["archive"] == kind[:3] and tr.meta["member"] == "keys.trace"
        assert ("compression" in tr.meta) == (kind not in ("tar", "zip"))
    # the format is picked by the name of the file inside when the archive's name says nothing (ARC's .lis)
    arc_members = {"P9.lis": b"10 1 0 1\n20 2 0 2\n10 1 0 3\n"}
    p = tmp_path / f"traces.{kind}"
    p.write_bytes(_zip(arc_members) if kind == "zip" else _tar(arc_members, kind[4:]))
    arc = read_trace(p)
    assert arc.meta["format"] == "arc" and len(arc) == 4


def _raw(tmp_path: Path, keys: np.ndarray) -> Path:
    p = tmp_path / "plain.raw"
    p.write_bytes(keys.tobytes())
    return p


def test_a_zip_of_a_compressed_trace_is_decompressed_too(tmp_path: Path) -> None:
    keys = np.arange(1000, dtype=">i8") % 37
    p = tmp_path / "w.zip"
    p.write_bytes(_zip({"w.trace.zst": zstandard.ZstdCompressor().compress(keys.tobytes())}))
    tr = read_trace(p, "raw-be-i8")
    assert len(tr) == 1000 and tr.n_keys == 37 and tr.meta["compression"] == "zstd"
    assert tr.meta["stored"] == "zip member 'w.trace.zst', zstd-compressed"


@pytest.mark.parametrize("kind", ["tar.gz", "zip"])
def test_an_archive_of_several_files_is_refused_naming_them(tmp_path: Path, kind: str) -> None:
    """Which file of several is the trace is the user's call: one line names them, never a guess or a silent
    concatenation."""
    members = {"a.trace": b"1\n2\n1\n", "b.trace": b"3\n4\n3\n", "README": b"about\n"}
    p = tmp_path / f"many.{kind}"
    p.write_bytes(_zip(members) if kind == "zip" else _tar(members, "gz"))
    msg = _err(read_trace, p, "lirs")
    assert str(p) in msg and "3 files" in msg and "'a.trace'" in msg and "extract" in msg


def test_broken_or_empty_archives_fail_in_one_line(tmp_path: Path) -> None:
    empty_zip = tmp_path / "e.zip"
    empty_zip.write_bytes(_zip({}))
    assert "no file in it" in _err(read_trace, empty_zip, "lirs")
    cut_tar = tmp_path / "cut.tar"
    cut_tar.write_bytes(_tar({"k.trace": b"1\n2\n3\n" * 5000})[:4000])
    msg = _err(read_trace, cut_tar, "lirs")
    assert str(cut_tar) in msg and "tar" in msg
    cut_zip = tmp_path / "cut.zip"
    cut_zip.write_bytes(_zip({"k.trace": b"1\n2\n3\n" * 5000})[:-30])  # the listing at the end is gone
    assert "zip" in _err(read_trace, cut_zip, "lirs")
    # an encrypted member: the general-purpose flag's bit 0, in the local header (offset 6) and the listing (offset 8)
    enc = bytearray(_zip({"k.trace": b"1\n2\n"}))
    central = enc.index(b"PK\x01\x02")
    enc[6] |= 1
    enc[central + 8] |= 1
    locked = tmp_path / "locked.zip"
    locked.write_bytes(bytes(enc))
    msg = _err(read_trace, locked, "lirs")
    assert "'k.trace'" in msg and "encrypted" in msg


def test_a_directory_is_not_a_trace_file(tmp_path: Path) -> None:
    assert "a directory, not a trace file" in _err(read_trace, tmp_path, "lirs")


def test_a_raw_key_file_that_starts_like_an_archive_is_read_as_keys(tmp_path: Path) -> None:
    """Only a whole header counts: a first key spelling zip's signature (with small keys after it), or a file with
    'ustar' at byte 257 and no valid tar checksum, is keys."""
    from cachetuner.traces.archives import is_tar, is_zip

    zip_like = np.array([int.from_bytes(b"PK\x03\x04", "big"), 3, 4, 5, 6, 7, 8, 9, 10, 3], dtype=">u4")
    tar_like = np.arange(200, dtype=">u4")
    raw = bytearray(tar_like.tobytes())
    raw[257:262] = b"ustar"
    for name, data in (("zip-like.bin", zip_like.tobytes()), ("tar-like.bin", bytes(raw))):
        assert not is_zip(data[:64]) and not is_tar(data[:512])
        p = tmp_path / name
        p.write_bytes(data)
        tr = read_trace(p, "raw-be-u4")
        assert len(tr) == len(data) // 4 and "archive" not in tr.meta
