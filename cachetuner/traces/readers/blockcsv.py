"""libCacheSim's block-I/O csv (``version,time,op,size,lbn``), e.g. the CloudPhysics sample.

Ops are SCSI command codes in hex. Reads (READ6/10/12/16: 08, 28, a8, 88) become GET — a miss is
filled read-through; writes (WRITE6/10/12/16: 0a, 2a, aa, 8a) become SET of the written size.
Any other code is an error (we would rather fail than guess). ``time`` is taken as seconds
(the CloudPhysics sample spans 7,200 of them: its stated 2 hours); ``lbn`` is the key.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cachetuner.errors import TraceError
from cachetuner.resources import format_bytes
from cachetuner.traces.assemble import MAX_OBJECT_BYTES, Columns, ReadOptions, build_trace
from cachetuner.traces.base import NoParams, register_format, validate_params
from cachetuner.traces.readers.tabular import collect, first_bad, header_checker, iter_tables
from cachetuner.traces.readers.text import _row_to_line
from cachetuner.traces.trace import Op, Trace

HEADER = "version,time,op,size,lbn"
SCSI_OPS: dict[bytes, Op] = {
    **{code: Op.GET for code in (b"08", b"28", b"a8", b"88")},
    **{code: Op.SET for code in (b"0a", b"2a", b"aa", b"8a")},
}


def map_codes(
    path: Path, chunk_first_line: int, lines: list[str], codes: np.ndarray, table: dict[bytes, Op]
) -> np.ndarray:
    """Vectorised op mapping over the chunk's few distinct codes; an unknown code names its line."""
    uniq, inverse = np.unique(np.char.lower(np.char.strip(codes)), return_inverse=True)
    mapped = np.empty(len(uniq), dtype=np.uint8)
    for i, code in enumerate(uniq):
        op = table.get(bytes(code))
        if op is None:
            row = int(np.flatnonzero(inverse == i)[0])
            line = chunk_first_line + _row_to_line(lines, row)
            valid = ", ".join(sorted(c.decode() for c in table))
            raise TraceError(f"{path}:{line}: unknown op {code.decode('latin-1')!r} (valid: {valid})")
        mapped[i] = op
    return mapped[inverse.reshape(-1)]


@dataclass(frozen=True)
class LibCacheSimCsvReader:
    name: str = "libcachesim-csv"
    extensions: tuple[str, ...] = ()
    description: str = (
        "libCacheSim block csv 'version,time,op,size,lbn' (SCSI 28 read -> GET, 2a write -> SET)"
    )

    def sniff(self, head: bytes) -> bool:
        return head.split(b"\n", 1)[0].strip().lower() == HEADER.encode()

    def read(self, path: Path, opts: ReadOptions) -> Trace:
        validate_params(NoParams, opts.params, f"{path}")
        cols = [("version", "int"), ("time", "float"), ("op", "str"), ("size", "int"), ("lbn", "int")]
        ts, ops, sizes, keys, have = [], [], [], [], 0
        for chunk, rows in iter_tables(path, opts, cols, ",", header=header_checker(path, HEADER)):
            size = rows["size"]  # 0: unknown, filled from the block's other requests (counted in the trace's meta)
            first_bad(path, chunk.first_line, chunk.lines, size < 0, "size must be >= 0 bytes", size)
            first_bad(path, chunk.first_line, chunk.lines, size > MAX_OBJECT_BYTES,
                      f"size must be at most {MAX_OBJECT_BYTES:,} bytes ({format_bytes(MAX_OBJECT_BYTES)})", size)
            ops.append(map_codes(path, chunk.first_line, chunk.lines, rows["op"], SCSI_OPS))
            ts.append(rows["time"])
            sizes.append(rows["size"])
            keys.append(rows["lbn"])
            have += len(rows)
            if opts.stop is not None and have >= opts.stop:
                break
        c = Columns(keys=collect(keys), timestamps=collect(ts), sizes=collect(sizes), ops=collect(ops))
        return build_trace(path.name, c, opts, {"format": self.name, "path": str(path)})


register_format(LibCacheSimCsvReader())
