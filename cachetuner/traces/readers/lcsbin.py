"""libCacheSim's own binary formats: ``lcs`` (versioned, with a header) and the Twitter ``twrBin``.

Both are packed little-endian records read in chunks through :func:`read_records`; record dtypes
name only the fields we use, at their offsets, so the rest (lcs tenant, feature fields and
``next_access_vtime``) is dropped while reading. Ops follow libCacheSim's ``req_op_e`` codes
(:mod:`cachetuner.traces.readers.ops`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cachetuner.errors import TraceError
from cachetuner.traces.assemble import Columns, ReadOptions, build_trace
from cachetuner.traces.base import NoParams, register_format, validate_params
from cachetuner.traces.readers.binary import read_records
from cachetuner.traces.readers.ops import map_op_codes
from cachetuner.traces.streams import read_head
from cachetuner.traces.trace import Trace

LCS_MAGIC = 0x123456789ABCDEF0
LCS_MAGIC_BYTES = LCS_MAGIC.to_bytes(8, "little")
#: u64 start_magic, u64 version, 8000-byte stat block, 21 unused u64, u64 end_magic.
LCS_HEADER_BYTES = 8192
LCS_END_MAGIC_OFFSET = LCS_HEADER_BYTES - 8

# (dtype, offset) of the fields we read. ``op`` is the low byte of the little-endian u32 holding
# the C bitfield ``op:8, tenant:24``; the tenant (upper 24 bits) is not read.
_V1 = {"t": ("<u4", 0), "id": ("<u8", 4), "sz": ("<u4", 12)}
_V2 = {**_V1, "op": ("u1", 16)}
_V3 = {**_V1, "sz": ("<i8", 12), "op": ("u1", 20), "ttl": ("<u4", 24)}
#: lcs version -> (fields read, record bytes). v4..v8 are v3 plus 1, 2, 4, 8, 16 u32 features.
LCS_VERSIONS: dict[int, tuple[dict[str, tuple[str, int]], int]] = {
    1: (_V1, 24),
    2: (_V2, 28),
    3: (_V3, 36),
    **{v: (_V3, 36 + 4 * n) for v, n in ((4, 1), (5, 2), (6, 4), (7, 8), (8, 16))},
}

#: twrBin: u32 time, u64 id, u32 key_size:10|value_size:22, u32 op:8|ttl:24 (high bits first).
TWR_DTYPE = np.dtype([("t", "<u4"), ("id", "<u8"), ("kv", "<u4"), ("op_ttl", "<u4")])


def lcs_dtype(version: int) -> np.dtype:
    """Record dtype of lcs ``version``: the fields we read at their offsets, the rest padding."""
    fields, size = LCS_VERSIONS[version]
    return np.dtype(
        {
            "names": list(fields),
            "formats": [fmt for fmt, _ in fields.values()],
            "offsets": [off for _, off in fields.values()],
            "itemsize": size,
        }
    )


def _lcs_version(path: Path) -> int:
    """Check the header's magic numbers; the version it names decides the record layout."""
    head = read_head(path, LCS_HEADER_BYTES)
    if not head:
        raise TraceError(f"{path}: empty file")
    if len(head) < LCS_HEADER_BYTES:
        raise TraceError(
            f"{path}: not an lcs trace: {len(head)} bytes, shorter than the {LCS_HEADER_BYTES}-byte header"
        )
    start, version = (int(x) for x in np.frombuffer(head, "<u8", count=2))
    end = int(np.frombuffer(head, "<u8", count=1, offset=LCS_END_MAGIC_OFFSET)[0])
    if start != LCS_MAGIC:
        raise TraceError(f"{path}: not an lcs trace: start magic 0x{start:016x}, expected 0x{LCS_MAGIC:016x}")
    if end != LCS_MAGIC:
        raise TraceError(
            f"{path}: corrupt lcs header: end magic at byte offset {LCS_END_MAGIC_OFFSET} is "
            f"0x{end:016x}, expected 0x{LCS_MAGIC:016x}"
        )
    if version not in LCS_VERSIONS:
        raise TraceError(
            f"{path}: unsupported lcs version {version} (supported: {min(LCS_VERSIONS)}-{max(LCS_VERSIONS)})"
        )
    return version


@dataclass(frozen=True)
class LcsReader:
    """libCacheSim ``lcs`` (v1..v8): an 8 KiB header (magic, version, trace stats), then records.

    v1 is oracleGeneral (no ops: all GET, read-only); v2 adds ops, v3 widens sizes to i64 and adds a
    TTL (s, 0 = none). Tenant, feature fields and ``next_access_vtime`` are ignored (the simulator
    computes reuse itself); sizes <= 0 count as unknown and are filled from the key's other requests.
    Only the header's magic numbers and version are read: counts come from the records themselves.
    """

    # No ``binary`` flag: detect_format lists flagged formats as having no magic number, and lcs has one.
    name: str = "lcs"
    extensions: tuple[str, ...] = (".lcs",)
    description: str = (
        "libCacheSim lcs binary v1-v8 (8 KiB header with magic, then LE records: time, id, size, op, ttl)"
    )

    def sniff(self, head: bytes) -> bool:
        return head[:8] == LCS_MAGIC_BYTES

    def read(self, path: Path, opts: ReadOptions) -> Trace:
        validate_params(NoParams, opts.params, f"{path}")
        version = _lcs_version(path)
        dtype = lcs_dtype(version)
        rec = read_records(path, dtype, opts, skip=LCS_HEADER_BYTES)
        names = rec.dtype.names or ()
        cols = Columns(
            keys=rec["id"],
            timestamps=rec["t"].astype(np.float64),
            sizes=rec["sz"].astype(np.int64),
            ops=(
                map_op_codes(path, rec["op"], first_byte=LCS_HEADER_BYTES, record_bytes=dtype.itemsize)
                if "op" in names
                else None
            ),
            ttls=rec["ttl"].astype(np.float64) if "ttl" in names else None,
        )
        meta = {"format": self.name, "path": str(path), "lcs_version": version}
        return build_trace(path.name, cols, opts, meta)


@dataclass(frozen=True)
class TwitterBinReader:
    """libCacheSim ``twrBin``: the Twitter cache traces as 20-byte binary records.

    As in the csv ``twitter`` reader, size is key + value bytes and a value size of 0 (a miss) is
    filled from the key's other requests; key_bytes is the key size. TTL in seconds (0 = none).
    The records carry no magic number, so auto-detection cannot name them: use ``--format twitter-bin``.
    """

    name: str = "twitter-bin"
    extensions: tuple[str, ...] = ()
    description: str = (
        "libCacheSim twrBin (20-byte LE records: time, id, key_size:10|value_size:22, op:8|ttl:24); "
        "needs --format"
    )
    binary: bool = True

    def sniff(self, head: bytes) -> bool:
        return False  # no magic number: only --format names it

    def read(self, path: Path, opts: ReadOptions) -> Trace:
        validate_params(NoParams, opts.params, f"{path}")
        rec = read_records(path, TWR_DTYPE, opts)
        key_size = (rec["kv"] >> 22).astype(np.int64)
        value_size = (rec["kv"] & 0x3FFFFF).astype(np.int64)
        ops = (rec["op_ttl"] >> 24).astype(np.uint8)
        cols = Columns(
            keys=rec["id"],
            timestamps=rec["t"].astype(np.float64),
            sizes=np.where(value_size > 0, key_size + value_size, 0),
            ops=map_op_codes(path, ops, first_byte=0, record_bytes=TWR_DTYPE.itemsize),
            ttls=(rec["op_ttl"] & 0xFFFFFF).astype(np.float64),
            key_bytes=key_size,
        )
        return build_trace(path.name, cols, opts, {"format": self.name, "path": str(path)})


register_format(LcsReader())
register_format(TwitterBinReader())
