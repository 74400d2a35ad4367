"""Bad input found by a fuzz pass: each case gets one line naming the file, line, option or parameter at fault,
never a traceback, a silently shorter trace or a value changed without a word."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import zstandard
from traces_testlib import one_line_error
from typer.testing import CliRunner

import cachetuner.cli.trace_cmds  # noqa: F401  (registers the commands)
from cachetuner.cli.app import app
from cachetuner.cli.trace_options import load_trace_from_options
from cachetuner.errors import TraceError
from cachetuner.traces import parse_size_model, read_trace

_err = one_line_error
runner = CliRunner()


def _put(tmp_path: Path, name: str, data: bytes | str) -> Path:
    p = tmp_path / name
    if isinstance(data, str):
        p.write_text(data)
    else:
        p.write_bytes(data)
    return p


def _small_memory(monkeypatch: pytest.MonkeyPatch, avail: int = 1 << 30) -> None:
    """Make every memory guard see ``avail`` bytes, so the numbers in messages do not depend on the machine."""
    import cachetuner.traces.streams as streams
    import cachetuner.traces.synthetic.common as common

    monkeypatch.setattr(streams, "memory_available", lambda: avail)
    monkeypatch.setattr(common, "memory_available", lambda: avail)


# --- C1: a truncated .zst is an error, as a truncated .gz / .xz / .bz2 is ---------------------------------------


def test_truncated_zst_of_a_real_trace_is_reported_not_read_short(shared_traces: Path, tmp_path: Path) -> None:
    """The first 20,000 bytes of orm-night.trace.zst used to read as 12,325 requests (of 5M) with exit code 0."""
    cut = _put(tmp_path, "orm-night.trace.zst", (shared_traces / "cache2k/orm-night.trace.zst").read_bytes()[:20000])
    msg = _err(read_trace, cut, "raw-be-i4")
    assert msg.startswith(f"{cut}: the zstd stream is cut short after ") and "truncated" in msg


@pytest.mark.parametrize("keep", [100, 2_000_000])
def test_truncated_zst_text_trace_is_reported(shared_traces: Path, tmp_path: Path, keep: int) -> None:
    """A cut P2.lis.zst said "empty file" (or named a bad line at the cut)."""
    cut = _put(tmp_path, "P2.lis.zst", (shared_traces / "arc/P2.lis.zst").read_bytes()[:keep])
    for fmt in ("arc", "auto"):
        msg = _err(read_trace, cut, fmt)
        assert msg.startswith(f"{cut}: the zstd stream is cut short") and "empty" not in msg


def _frames(data: bytes) -> dict[str, bytes]:
    """zstd encodings of ``data`` with every header variant: content size or not, checksum, several frames
    (``zstd`` and ``pzstd`` write several), a leading skippable frame (as ``pzstd`` does)."""
    import io

    half = len(data) // 2
    streamed = io.BytesIO()
    with zstandard.ZstdCompressor(level=1).stream_writer(streamed, closefd=False) as w:
        w.write(data)  # no content size in the header
    return {
        "plain": zstandard.ZstdCompressor().compress(data),
        "checksum": zstandard.ZstdCompressor(write_checksum=True, write_content_size=False).compress(data),
        "streamed": streamed.getvalue(),
        "two frames": zstandard.ZstdCompressor().compress(data[:half]) + zstandard.ZstdCompressor().compress(data[half:]),
        "skippable first": struct.pack("<II", 0x184D2A50, 4) + b"\x00\x00\x10\x00" + zstandard.ZstdCompressor().compress(data),
    }  # fmt: skip


def test_every_cut_of_a_zstd_stream_is_an_error_or_a_frame_boundary(tmp_path: Path) -> None:
    from cachetuner.traces.streams import ZstdFrameWalker, open_binary

    rng = np.random.default_rng(7)
    # compressible keys, incompressible bytes (raw blocks) and a run of zeros (RLE blocks)
    data = rng.integers(0, 300, 60_000).astype(">i4").tobytes() + rng.bytes(50_000) + bytes(200_000)
    for kind, blob in _frames(data).items():
        p = _put(tmp_path, "k.zst", blob)
        with open_binary(p) as f:
            assert f.read() == data, kind
        first = 16 if kind == "skippable first" else 4  # shorter: no zstd magic, not taken for zstd at all
        cuts = set(range(first, 64)) | set(rng.integers(first, len(blob), 60).tolist()) | {len(blob) - 1}
        for cut in sorted(cuts):
            p.write_bytes(blob[:cut])
            walker = ZstdFrameWalker()
            walker.feed(blob[:cut])
            if not walker.inside:  # the cut falls between two frames: nothing can tell it from a whole file
                assert kind == "two frames", (kind, cut)
                continue
            with pytest.raises(TraceError, match="zstd stream is cut short"):
                read_trace(p, "raw-be-i4")


def test_every_frame_of_a_multi_frame_zst_is_read(tmp_path: Path) -> None:
    """Only the first frame used to be read: the rest of a multi-frame file (``pzstd``, concatenated files) was
    dropped without a word; and a file that starts with a skippable frame was read as raw keys."""
    keys = np.arange(40_000, dtype=">i4")
    for kind in ("two frames", "skippable first"):
        p = _put(tmp_path, f"{kind.replace(' ', '_')}.zst", _frames(keys.tobytes())[kind])
        tr = read_trace(p, "raw-be-i4")
        assert len(tr) == keys.size and tr.n_keys == keys.size and tr.meta["compression"] == "zstd", kind


# --- A6 / A21: counts that would need more memory than there is ---------------------------------------------------


@pytest.mark.parametrize(("param", "value"), [("n_requests", 10**12), ("n_keys", 10**13)])
def test_synthetic_workload_too_large_for_memory(monkeypatch: pytest.MonkeyPatch, param: str, value: int) -> None:
    _small_memory(monkeypatch)
    msg = _err(read_trace, "synthetic:zipf", params={param: value})
    assert msg.startswith(f"synthetic:zipf: param '{param}': {value:,} ") and "GiB of memory" in msg
    assert "available here" in msg and "lower it (at most ~" in msg


def test_synthetic_workload_file_too_large_names_the_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _small_memory(monkeypatch)
    wl = _put(tmp_path, "w.yaml", "synthetic: shifting\nparams: {n_requests: 1000000000000}\n")
    assert _err(read_trace, wl).startswith(f"{wl} (synthetic:shifting): param 'n_requests': 1,000,000,000,000 ")


META_HEADER = "op_time,key,key_size,op,op_count,size,cache_hits,ttl,usecase,sub_usecase\n"


def test_meta_op_count_too_large_for_memory(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _small_memory(monkeypatch)
    p = _put(tmp_path, "m.csv", META_HEADER + "1,aa,2,GET,3,5,0,0,1,1\n2,bb,2,GET,99999999999,5,0,0,1,1\n")
    msg = _err(read_trace, p, "meta-kv")
    assert msg.startswith(f"{p}:3: op_count 99,999,999,999 expands the trace to more requests than fit in memory")
    assert "100,000,000,002 requests need ~" in msg and "pass --limit" in msg
    tr = read_trace(p, "meta-kv", limit=10)  # a limit expands only what it keeps
    assert len(tr) == 10 and list(tr.keys) == [0, 0, 0] + [1] * 7


def test_arc_n_blocks_too_large_for_memory(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _small_memory(monkeypatch)
    p = _put(tmp_path, "big.lis", "10 8 0 0\n11 999999999999 0 1\n")
    msg = _err(read_trace, p)
    assert msg.startswith(f"{p}:2: n_blocks 999,999,999,999 expands the trace to more blocks than fit in memory")
    assert "1,000,000,000,007 requests need ~" in msg and "pass --limit" in msg
    tr = read_trace(p, limit=20)
    assert len(tr) == 20 and tr.n_keys == 13  # blocks 10..17, then 11..22: only the first 12 of line 2 expanded
    # not expanded: one request of n_blocks * 512 bytes, which must be an object size
    msg = _err(read_trace, p, params={"expand": False})
    assert msg.startswith(f"{p}:2: n_blocks must be at most 2,147,483,648")


# --- B5: numbers too large for their field ------------------------------------------------------------------------


def test_integer_field_too_large_is_reported_as_written(tmp_path: Path) -> None:
    """It used to overflow first: "value_size must be >= 0, got -9223372036854775808"."""
    p = _put(tmp_path, "t.csv", "1,k1,2,10,1,get,0\n2,k2,2,99999999999999999999999,1,get,0\n")
    msg = _err(read_trace, p, "twitter")
    assert msg.startswith(f"{p}:2: field 'value_size' is too large: '99999999999999999999999'")
    p = _put(tmp_path, "f.csv", "1,k1,2,1.5,1,get,0\n")  # read as 1 before, without a word
    assert _err(read_trace, p, "twitter") == f"{p}:1: field 'value_size' is not an integer: '1.5'"


def test_sizes_beyond_any_object_are_refused(tmp_path: Path) -> None:
    p = _put(tmp_path, "t.csv", "1,k1,2,9000000000000000000,1,get,0\n")  # fits int64; key + value would not
    assert _err(read_trace, p, "twitter").startswith(f"{p}:1: value_size must be at most 1,099,511,627,776")
    p = _put(tmp_path, "m.csv", META_HEADER + "1,aa,99999999999,GET,1,5,0,0,1,1\n")
    assert _err(read_trace, p, "meta-kv").startswith(f"{p}:2: key_size must be at most 536,870,912")
    p = _put(tmp_path, "a.trace", "1 5 100\n2 6 99999999999999\n")
    assert _err(read_trace, p, "adaptsize").startswith(f"{p}:2: size must be at most 1,099,511,627,776 bytes")
    p = _put(tmp_path, "c.csv", "1,2\n1,99999999999999\n")
    msg = _err(read_trace, p, "csv", params={"key": 1, "size": 2})
    assert msg.startswith(f"{p}:2: size must be at most 1,099,511,627,776")


# --- C3 / C4: --rate and --size-model -------------------------------------------------------------------------------


@pytest.mark.parametrize("rate", [float("inf"), 1e400, float("nan"), 0.0, -1.0])
def test_rate_must_be_finite_and_positive(rate: float) -> None:
    msg = _err(read_trace, "bundled:web07", rate=rate)
    assert msg.startswith("bundled:web07: rate must be a finite number > 0 requests/s")
    with pytest.raises(TraceError, match=r"^--rate must be a finite number > 0 requests/s"):
        load_trace_from_options("bundled:web07", rate=rate)


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("lognormal:nan,1", "arguments must be finite numbers"),
        ("lognormal:100,nan", "arguments must be finite numbers"),
        ("lognormal:100,inf", "arguments must be finite numbers"),
        ("fixed:1e400", "arguments must be finite numbers"),
        ("fixed:1e30", "BYTES must be a positive number of bytes, at most 536,870,912"),
        ("fixed:99999999999999999999", "BYTES must be a positive number of bytes, at most 536,870,912"),
        ("lognormal:1e12,1", "MEDIAN must be a positive number of bytes, at most 536,870,912"),
        ("lognormal:4096,50", "SIGMA must be 0 to 10"),
        ("llm:0.5,1e12,8192,1", "EMBED must be a positive number of bytes"),
        ("", "empty; expected fixed:BYTES"),
        ("  ", "empty; expected fixed:BYTES"),
    ],
)
def test_bad_size_model_is_one_line_naming_the_option(spec: str, says: str) -> None:
    assert says in _err(parse_size_model, spec)
    assert says in _err(read_trace, "bundled:web07", size_model=spec)  # "" no longer means "the default"
    with pytest.raises(TraceError) as info:
        load_trace_from_options("bundled:web07", size_model=spec)
    assert str(info.value).startswith(f"--size-model {spec!r}: ") and says in str(info.value)


def test_cli_rate_and_size_model_errors_exit_2_with_one_line() -> None:
    for args, line in (
        (["--rate", "inf"], "error: --rate must be a finite number > 0 requests/s, got inf"),
        (["--size-model", "fixed:1e30"], "error: --size-model 'fixed:1e30': BYTES must be a positive number of bytes, "
                                         "at most 536,870,912 (512 MiB, the largest Redis value), got 1e+30"),
    ):  # fmt: skip
        proc = subprocess.run(
            [sys.executable, "-m", "cachetuner.cli.main", "trace", "info", "--trace", "bundled:web07", *args],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert proc.returncode == 2 and proc.stdout == ""
        assert proc.stderr.strip().splitlines() == [line]


def test_a_reader_format_given_for_a_synthetic_workload_is_refused_not_ignored() -> None:
    msg = one_line_error(read_trace, "synthetic:zipf", "lirs", params={"n_requests": 1000})
    assert msg == "synthetic:zipf: --format lirs does not apply to a generated workload (leave it at auto)"
    for fmt in ("auto", "synthetic"):  # the two that do apply still generate
        assert len(read_trace("synthetic:zipf", fmt, params={"n_requests": 1000}).keys) == 1000


def test_good_size_models_still_parse() -> None:
    for spec in ("fixed:4096", "fixed:536870912", "lognormal:8192,1.0", "lognormal:100,0", "llm", "llm:0.5,768,20000,0.3"):
        assert parse_size_model(spec).spec.split(":")[0] == spec.split(":")[0]


# --- C6: synthetic params --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("workload", "params", "param", "says"),
    [
        ("zipf", {"alpha": float("inf")}, "alpha", "finite number"),
        ("zipf", {"rate": float("nan")}, "rate", "finite number"),
        ("zipf", {"n_requests": True}, "n_requests", "must be a number, not true"),
        ("zipf", {"n_keys": False}, "n_keys", "must be a number, not false"),
        ("diurnal", {"period_s": float("inf")}, "period_s", "finite number"),
        ("mixed-ttl", {"ttls": [True, 60.0]}, "ttls", "must be a number"),
        ("scan", {"scan_every": True}, "scan_every", "must be a number, not true"),
        ("shifting", {"alpha_range": [0.5, float("inf")]}, "alpha_range.1", "finite number"),
        ("shifting", {"phases": [{"workload": "zipf", "fraction": float("inf")}]}, "phases.0.fraction", "finite number"),
        ("shifting", {"phases": [{"workload": "zipf", "fraction": True}]}, "phases.0.fraction", "must be a number"),
    ],
)  # fmt: skip
def test_synthetic_params_refuse_non_finite_and_bools(workload: str, params: dict, param: str, says: str) -> None:
    msg = _err(read_trace, f"synthetic:{workload}", params={"n_requests": 1000, **params})
    assert msg.startswith(f"synthetic:{workload}: param '{param}': ") and says in msg


def test_yaml_inf_in_a_workload_file(tmp_path: Path) -> None:
    wl = _put(tmp_path, "w.yaml", "synthetic: zipf\nparams: {alpha: .inf, n_requests: 1000}\n")
    assert _err(read_trace, wl).startswith(f"{wl} (synthetic:zipf): param 'alpha': ")
    wl = _put(tmp_path, "w2.yaml", "synthetic: zipf\nparams: {n_requests: true}\n")
    assert _err(read_trace, wl).startswith(f"{wl} (synthetic:zipf): param 'n_requests': must be a number")
    wl = _put(tmp_path, "w3.yaml", "synthetic: zipf\nparams: {n_requests: 1000, alpha: 1.2, rate: 50}\n")
    assert len(read_trace(wl)) == 1000  # numbers still work


# --- C2: values that are invalid are errors; values that are repaired are shown -----------------------------------


@pytest.mark.parametrize("stamp", ["nan", "inf", "-inf", "NaN"])
def test_non_finite_timestamp_names_the_line(tmp_path: Path, stamp: str) -> None:
    """A NaN timestamp has no place in time: clamping it (np.maximum.accumulate) made every later one NaN."""
    p = _put(tmp_path, "t.csv", f"1,k1,2,10,1,get,0\n{stamp},k2,2,10,1,get,0\n")
    assert _err(read_trace, p, "twitter").startswith(f"{p}:2: field 'timestamp' must be a finite number, got ")
    p = _put(tmp_path, "c.csv", f"5,1\n{stamp},2\n")
    msg = _err(read_trace, p, "csv", params={"key": 2, "time": 1})
    assert msg.startswith(f"{p}:2: field 'time' must be a finite number")
    p = _put(tmp_path, "b.csv", f"version,time,op,size,lbn\n1,{stamp},28,512,7\n")
    assert _err(read_trace, p).startswith(f"{p}:2: field 'time' must be a finite number")
    p = _put(tmp_path, "m.csv", META_HEADER + f"1,aa,2,GET,1,5,0,{stamp},1,1\n")
    assert _err(read_trace, p, "meta-kv").startswith(f"{p}:2: field 'ttl' must be a finite number")


def test_negative_block_size_is_an_error(tmp_path: Path) -> None:
    """A SCSI transfer of -512 bytes used to be replaced by the block's other size, without a word."""
    p = _put(tmp_path, "b.csv", "version,time,op,size,lbn\n1,10,28,4096,5\n1,11,28,-512,5\n")
    assert _err(read_trace, p) == f"{p}:3: size must be >= 0 bytes, got -512"


def test_trace_info_shows_filled_sizes_and_clamped_timestamps(tmp_path: Path) -> None:
    p = _put(tmp_path, "t.csv", "10,k1,2,0,1,get,0\n11,k1,2,100,1,get,0\n5600011,k2,2,0,1,get,0\n12,k3,2,100,1,get,0\n")
    res = runner.invoke(app, ["trace", "info", "--trace", str(p), "--format", "twitter", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["repairs"] == {"sizes_filled": 2, "sizes_defaulted_keys": 1, "timestamps_clamped": 1,
                               "timestamps_max_step_back_s": 5_599_999.0}  # fmt: skip
    assert data["timing"] == "from trace" and data["size_model"] == "from trace"  # as read; the repairs are apart
    table = " ".join(runner.invoke(app, ["trace", "info", "--trace", str(p), "--format", "twitter"]).stdout.split())
    flat = table.replace("│ │", "").replace("│", " ")
    flat = " ".join(flat.split())
    assert ("repairs 1 timestamps clamped where time stepped back (by up to 5,599,999 s); 2 sizes <= 0 replaced by "
            "the key's known size (1 keys had none: fixed:4096)") in flat


def test_trace_info_without_repairs_is_unchanged(shared_traces: Path) -> None:
    res = runner.invoke(app, ["trace", "info", "--trace", str(shared_traces / "cloudphysics/cloudPhysicsIO.csv"), "--json"])
    data = json.loads(res.stdout)
    assert data["timing"] == "from trace" and data["size_model"] == "from trace"
    assert data["repairs"] == {"sizes_filled": 0, "sizes_defaulted_keys": 0, "timestamps_clamped": 0,
                               "timestamps_max_step_back_s": 0.0}  # fmt: skip


# --- the real traces still read as before --------------------------------------------------------------------------


def test_every_shared_trace_still_reads(shared_traces: Path) -> None:
    from cachetuner.mrc.bench import SHARED_TRACES

    expected = {"cache2k/orm-night.trace.zst": 5_000_000, "arc/P2.lis.zst": 12_729_495, "arc/P6.lis": 12_672_123,
                "meta_kvcache/kv_traces_1.csv": 691, "twitter/twitter_sample.csv": 100}  # fmt: skip
    extra = [("meta_kvcache/kv_traces_1.csv", "auto"), ("meta_kvcache/kv_traces_2.csv", "auto"),
             ("twitter/twitter_sample.csv", "auto"), ("cloudphysics/cloudPhysicsIO.oracleGeneral.bin", "auto")]  # fmt: skip
    for rel, fmt in (*SHARED_TRACES, *extra):
        tr = read_trace(shared_traces / rel, fmt)
        assert len(tr) == expected.get(rel, len(tr)) > 0, rel
