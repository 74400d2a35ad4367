"""``cachetuner trace convert``: a Trace written as libCacheSim lcs v3 or csv reads back the same here, and
libCacheSim's own reader (the ``libcachesim`` package) reads our lcs request by request, next access included."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import libcachesim
import numpy as np
import pytest
from typer.testing import CliRunner

from cachetuner.cli.main import _load_commands, app
from cachetuner.errors import ConfigError
from cachetuner.traces import read_trace
from cachetuner.traces.trace import Op
from cachetuner.traces.writers import CSV_PARAMS, next_access, write_trace

runner = CliRunner()


def _workload():
    """Writes, deletes, TTLs (fractional ones on the SETs) and sub-second times: everything a writer has to carry."""
    tr = read_trace("synthetic:read-write", seed=3, params={"n_requests": 6000, "n_keys": 700, "rate": 50})
    ttls = np.where(tr.ops == Op.SET, 30.5 + (tr.keys % 7), 0.0)
    return dataclasses.replace(tr, ttls=ttls)


def test_next_access_is_the_next_request_to_the_same_key() -> None:
    assert list(next_access(np.array([4, 7, 4, 4, 9, 7]))) == [2, 5, 3, -1, -1, -1]


def test_lcs_round_trip_and_libcachesim_reads_it(tmp_path: Path) -> None:
    tr = _workload()
    assert set(np.unique(tr.ops)) >= {Op.GET, Op.SET} and tr.ttls.max() > 0
    res = write_trace(tr, tmp_path / "w.lcs", "lcs")
    assert res["requests"] == len(tr) and "floored" in str(res["note"])
    back = read_trace(tmp_path / "w.lcs")
    assert back.meta["lcs_version"] == 3 and back.n_keys == tr.n_keys
    np.testing.assert_array_equal(back.keys, tr.keys)
    np.testing.assert_array_equal(back.sizes, tr.sizes)
    np.testing.assert_array_equal(back.ops, tr.ops)
    np.testing.assert_array_equal(back.ttls, np.floor(tr.ttls))
    np.testing.assert_array_equal(back.timestamps, np.floor(tr.timestamps))  # lcs keeps whole seconds
    assert back.read_only == tr.read_only

    init = libcachesim.ReaderInitParam()
    init.ignore_size_zero_req = False
    reader = libcachesim.TraceReader(str(tmp_path / "w.lcs"), libcachesim.TraceType.LCS_TRACE, init)
    ref = np.array([(r.obj_id, r.obj_size, int(r.op), r.ttl, r.next_access_vtime) for r in reader], dtype=np.int64)
    # no reader.close(): libcachesim 0.3.5 frees the reader again when the object is collected (abort)
    assert len(ref) == len(tr)
    np.testing.assert_array_equal(ref[:, 0], tr.keys)
    np.testing.assert_array_equal(ref[:, 1], tr.sizes)
    np.testing.assert_array_equal(ref[:, 2], np.array([1, 3, 9])[tr.ops])  # libCacheSim's get / set / delete
    np.testing.assert_array_equal(ref[:, 3], np.floor(tr.ttls))
    nxt = next_access(tr.keys)
    np.testing.assert_array_equal(ref[:, 4], np.where(nxt < 0, np.iinfo(np.int64).max, nxt))  # -1 reads as "never"


def test_csv_round_trip_with_the_printed_params(tmp_path: Path) -> None:
    tr = _workload()
    res = write_trace(tr, tmp_path / "w.csv", "csv")
    back = read_trace(tmp_path / "w.csv", "csv", params=res["read_back_params"])  # type: ignore[arg-type]
    assert res["read_back_params"] == CSV_PARAMS
    np.testing.assert_array_equal(back.keys, tr.keys)
    np.testing.assert_array_equal(back.sizes, tr.sizes)
    np.testing.assert_array_equal(back.ops, tr.ops)
    np.testing.assert_allclose(back.ttls, tr.ttls, rtol=1e-5)
    np.testing.assert_allclose(back.timestamps, tr.timestamps, atol=1e-6)


def test_cli_convert_json_refusals_and_force(tmp_path: Path) -> None:
    _load_commands()
    out = tmp_path / "web07.lcs"
    args = ["trace", "convert", "--trace", "bundled:web07", "--to", "lcs", "--out", str(out), "--json"]
    r = runner.invoke(app, args)
    assert r.exit_code == 0, r.output
    res = json.loads(r.stdout)
    assert res["requests"] == 50_000 and res["path"] == str(out) and len(read_trace(out)) == 50_000
    r = runner.invoke(app, args)  # never overwritten silently
    assert isinstance(r.exception, ConfigError) and "exists; pass --force to overwrite it" in str(r.exception)
    assert runner.invoke(app, [*args, "--force"]).exit_code == 0
    proc = subprocess.run([sys.executable, "-m", "cachetuner.cli.main", "trace", "convert", "--trace", "bundled:web07",
                           "--to", "parquet", "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == ["error: --to 'parquet': unknown output format (valid: csv, lcs)"]


@pytest.mark.parametrize("t", [-1.0, float(2**32)])
def test_lcs_refuses_times_its_u32_clock_cannot_hold(tmp_path: Path, t: float) -> None:
    from cachetuner.traces.trace import Trace

    tr = Trace(name="x", timestamps=np.array([t, t + 1]), keys=np.array([0, 0]), sizes=np.array([10, 10]),
               ops=np.zeros(2, np.uint8), ttls=np.zeros(2), n_keys=1, key_bytes=np.array([4], np.int32))
    with pytest.raises(ConfigError, match="lcs keeps u32 seconds"):
        write_trace(tr, tmp_path / "x.lcs", "lcs")
