"""Write a :class:`Trace` out in a format other tools read: libCacheSim's ``lcs`` (v3) and plain csv.

Why: every format CacheTuner reads ends as one ``Trace``, so converting is reading plus one writer. ``lcs`` is what
libCacheSim and its Python package replay (a Twitter csv, an ARC ``.lis`` or a synthetic workload can be compared
there against Belady, S3-FIFO or SIEVE); it also reads back here without parsing text. ``csv`` is for spreadsheets
and other tools, with the ``--format csv`` params that read it back printed beside it.

What does not survive a round trip (said where it happens): ``lcs`` keeps whole seconds (its clock is a u32), so
sub-second timestamps are floored, and TTLs are whole seconds too; neither format carries per-key name lengths
(``key_bytes``), which a re-read charges again from the key ids (``ct:{id}``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from cachetuner.errors import ConfigError
from cachetuner.traces.readers.lcsbin import LCS_HEADER_BYTES, LCS_MAGIC, LCS_VERSIONS
from cachetuner.traces.trace import Op, Trace

#: CacheTuner op -> libCacheSim ``req_op_e`` code (get 1, set 3, delete 9).
LCS_OP_CODES = {Op.GET: 1, Op.SET: 3, Op.DELETE: 9}
#: csv columns, in order; ``CSV_PARAMS`` reads them back with ``--format csv``.
CSV_HEADER = "time,key,size,op,ttl"
CSV_PARAMS = {"header": True, "key": "key", "time": "time", "size": "size", "op": "op", "ttl": "ttl"}
_CSV_OPS = np.array(["get", "set", "delete"])


def next_access(keys: np.ndarray) -> np.ndarray:
    """For each request, the index of the next request to the same key, or -1 (libCacheSim's
    ``next_access_vtime``, which its oracle policies such as Belady read)."""
    n = len(keys)
    order = np.argsort(keys, kind="stable")  # each key's requests, in time order
    nxt = np.full(n, -1, dtype=np.int64)
    same = keys[order[1:]] == keys[order[:-1]]
    nxt[order[:-1][same]] = order[1:][same]
    return nxt


def _lcs_header(trace: Trace, version: int) -> bytes:
    """The 8 KiB header: magics, version and the first stat fields libCacheSim prints (the rest zero)."""
    h = np.zeros(LCS_HEADER_BYTES // 8, dtype="<i8")
    h[0] = np.array(LCS_MAGIC, dtype="<u8").view("<i8")
    h[1] = version
    get = trace.ops == Op.GET
    last_size = np.zeros(trace.n_keys, dtype=np.int64)
    last_size[trace.keys] = trace.sizes  # the last size of each key (fancy assignment keeps the last write)
    stat = [1, len(trace), trace.n_keys, int(trace.sizes.sum()), int(last_size.sum()),
            int(trace.timestamps[0]) if len(trace) else 0, int(trace.timestamps[-1]) if len(trace) else 0,
            int(get.sum()), int((trace.ops == Op.SET).sum()), int((trace.ops == Op.DELETE).sum())]
    h[2:2 + len(stat)] = stat
    h[-1] = h[0]
    return h.tobytes()


def _lcs_v3_record() -> np.dtype:
    """The reader's v3 layout (:data:`LCS_VERSIONS`), with the whole ``op:8|tenant:24`` word (tenant 0) and the
    ``next_access_vtime`` the reader skips."""
    fields, size = LCS_VERSIONS[3]
    full = {**fields, "op": ("<u4", fields["op"][1]), "nxt": ("<i8", size - 8)}
    return np.dtype({"names": list(full), "formats": [f for f, _ in full.values()],
                     "offsets": [o for _, o in full.values()], "itemsize": size})


def write_lcs(trace: Trace, path: Path) -> dict[str, object]:
    """``lcs`` v3 (36-byte records: u32 time, u64 id, i64 size, op:8|tenant:24, u32 ttl, i64 next access)."""
    if len(trace) and (trace.timestamps[0] < 0 or trace.timestamps[-1] >= 2**32):
        raise ConfigError(f"{path}: lcs keeps u32 seconds; this trace's times run {trace.timestamps[0]:.0f}.."
                          f"{trace.timestamps[-1]:.0f} s")
    rec = np.zeros(len(trace), dtype=_lcs_v3_record())
    rec["t"] = np.floor(trace.timestamps).astype(np.uint32)
    rec["id"] = trace.keys.astype(np.uint64)
    rec["sz"] = trace.sizes
    rec["op"] = np.array([LCS_OP_CODES[Op(o)] for o in range(3)], dtype=np.uint32)[trace.ops]
    rec["ttl"] = np.floor(trace.ttls).astype(np.uint32)
    rec["nxt"] = next_access(trace.keys)
    with path.open("wb") as f:
        f.write(_lcs_header(trace, 3))
        f.write(rec.tobytes())
    subsecond = bool(len(trace)) and bool(np.any(trace.timestamps != np.floor(trace.timestamps)))
    return {"format": "lcs", "version": 3, "requests": len(trace),
            "note": "timestamps floored to whole seconds (lcs keeps u32 seconds)" if subsecond else None}


def write_csv(trace: Trace, path: Path) -> dict[str, object]:
    """``time,key,size,op,ttl`` with a header; read back with ``--format csv --params`` :data:`CSV_PARAMS`."""
    with path.open("w") as f:
        f.write(CSV_HEADER + "\n")
        step = 1 << 18
        for i in range(0, len(trace), step):
            sl = slice(i, i + step)
            cols = [np.char.mod("%.6f", trace.timestamps[sl]), trace.keys[sl].astype(str),
                    trace.sizes[sl].astype(str), _CSV_OPS[trace.ops[sl]], np.char.mod("%g", trace.ttls[sl])]
            f.write("\n".join(",".join(row) for row in zip(*cols, strict=True)) + "\n")
    return {"format": "csv", "requests": len(trace), "read_back_params": CSV_PARAMS}


#: ``trace convert --to`` name -> writer.
WRITERS: dict[str, Callable[[Trace, Path], dict[str, object]]] = {"lcs": write_lcs, "csv": write_csv}


def get_writer(to: str) -> Callable[[Trace, Path], dict[str, object]]:
    """The writer of format ``to``; an unknown name is one line listing the valid ones."""
    writer = WRITERS.get(to)
    if writer is None:
        raise ConfigError(f"--to {to!r}: unknown output format (valid: {', '.join(sorted(WRITERS))})")
    return writer


def write_trace(trace: Trace, path: str | Path, to: str) -> dict[str, object]:
    """Write ``trace`` to ``path`` in format ``to`` (one of :data:`WRITERS`); returns what was written."""
    return {**get_writer(to)(trace, Path(path)), "path": str(path)}
