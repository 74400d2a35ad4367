"""Fixed-size binary records: libCacheSim oracleGeneral and Caffeine's raw big-endian key files."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.lib.recfunctions import repack_fields

from cachetuner.traces.assemble import Columns, ReadOptions, build_trace
from cachetuner.traces.base import NoParams, register_format, validate_params
from cachetuner.traces.streams import iter_records
from cachetuner.traces.trace import Trace

#: libCacheSim oracleGeneral: u32 time_s, u64 obj_id, u32 obj_size, i64 next_access_vtime (packed, LE).
ORACLE_DTYPE = np.dtype([("t", "<u4"), ("id", "<u8"), ("sz", "<u4"), ("nxt", "<i8")])


def read_records(path: Path, dtype: np.dtype, opts: ReadOptions, *, skip: int = 0) -> np.ndarray:
    """All records (up to ``opts.stop``: the requests before the window's end) as one structured array, read chunk by chunk.

    ``skip``: header bytes before the first record. Bytes the dtype leaves unnamed (gaps between
    its field offsets, up to its itemsize) are dropped as each chunk is copied, so fields a reader
    ignores never reach memory.
    """
    packed = repack_fields(dtype)
    parts: list[np.ndarray] = []
    have = 0
    for chunk in iter_records(path, dtype.itemsize, progress=opts.progress, skip=skip, limit=opts.stop):
        arr = np.frombuffer(chunk.data, dtype=dtype)
        if opts.stop is not None and have + len(arr) >= opts.stop:
            parts.append(arr[: opts.stop - have].astype(packed))
            have = opts.stop
            break
        parts.append(arr.astype(packed))
        have += len(arr)
    return np.concatenate(parts) if parts else np.zeros(0, dtype=packed)


@dataclass(frozen=True)
class OracleGeneralReader:
    """libCacheSim ``oracleGeneral``: timestamps and sizes, no ops (all GET, read-only).

    ``next_access_vtime`` is dropped (the simulator computes reuse itself); a size of 0 counts as
    unknown and is filled from the key's other requests.
    """

    name: str = "oracle"
    extensions: tuple[str, ...] = (".oraclegeneral.bin", ".oraclegeneral")
    description: str = "libCacheSim oracleGeneral binary (24-byte LE records: time, id, size, next)"
    binary: bool = True

    def sniff(self, head: bytes) -> bool:
        return False  # no magic number: only the extension identifies it

    def read(self, path: Path, opts: ReadOptions) -> Trace:
        validate_params(NoParams, opts.params, f"{path}")
        rec = read_records(path, ORACLE_DTYPE, opts)
        cols = Columns(
            keys=rec["id"], timestamps=rec["t"].astype(np.float64), sizes=rec["sz"].astype(np.int64)
        )
        return build_trace(path.name, cols, opts, {"format": self.name, "path": str(path)})


@dataclass(frozen=True)
class RawKeysReader:
    """Caffeine simulator raw key files: big-endian integers, nothing else (read-only, no sizes/times)."""

    name: str
    dtype: str
    description: str
    extensions: tuple[str, ...] = ()
    binary: bool = True

    def sniff(self, head: bytes) -> bool:
        return False  # any byte string is a valid key file

    def read(self, path: Path, opts: ReadOptions) -> Trace:
        validate_params(NoParams, opts.params, f"{path}")
        rec = read_records(path, np.dtype(self.dtype), opts)
        cols = Columns(keys=rec.astype(rec.dtype.newbyteorder("=")))
        return build_trace(path.name, cols, opts, {"format": self.name, "path": str(path)})


register_format(OracleGeneralReader())
register_format(RawKeysReader("raw-be-i4", ">i4", "Caffeine raw big-endian int32 keys (cache2k traces)"))
register_format(
    RawKeysReader("raw-be-u4", ">u4", "Caffeine raw big-endian uint32 keys (CloudPhysics w-series)")
)
register_format(RawKeysReader("raw-be-i8", ">i8", "Caffeine raw big-endian int64 keys (scarab, corda)"))
