"""Key-value cache traces with string keys: Twitter twemcache csv and Meta kvcache csv.

String keys get dense ids in order of first appearance through one dict of distinct keys (the
only per-key Python objects we keep); every per-request column stays in numpy.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from cachetuner.errors import TraceError
from cachetuner.resources import format_bytes
from cachetuner.traces.assemble import MAX_KEY_BYTES, MAX_OBJECT_BYTES, Columns, ReadOptions, build_trace
from cachetuner.traces.base import NoParams, register_format, validate_params
from cachetuner.traces.readers.blockcsv import map_codes
from cachetuner.traces.readers.tabular import clip_counts, collect, first_bad, iter_tables
from cachetuner.traces.readers.text import _row_to_line
from cachetuner.traces.streams import MemoryGuard
from cachetuner.traces.trace import Op, Trace

TWITTER_OPS: dict[bytes, Op] = {
    b"get": Op.GET,
    b"gets": Op.GET,
    **{op: Op.SET for op in (b"set", b"add", b"replace", b"cas", b"append", b"prepend", b"incr", b"decr")},
    b"delete": Op.DELETE,
}
META_OPS: dict[bytes, Op] = {
    b"get": Op.GET,
    b"get_lease": Op.GET,
    b"set": Op.SET,
    b"set_lease": Op.SET,
    b"delete": Op.DELETE,
}


@dataclass
class KeyMapper:
    """Byte-string keys -> dense ids in order of first appearance, across chunks."""

    ids: dict[bytes, int] = field(default_factory=dict)

    def map(self, keys: np.ndarray) -> np.ndarray:
        uniq, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        mapped = np.empty(len(uniq), dtype=np.int64)
        for i in np.argsort(first, kind="stable"):
            mapped[i] = self.ids.setdefault(bytes(uniq[i]), len(self.ids))
        return mapped[inverse.reshape(-1)]


def check_sizes(
    path: Path, first_line: int, lines: list[str], key_size: np.ndarray, value_size: np.ndarray, value_field: str
) -> None:
    """Key and value sizes within what a cache can hold: a key of 1 byte to MAX_KEY_BYTES, a value of 0 (unknown:
    a miss) to MAX_OBJECT_BYTES. Why the upper bounds: a larger number is a corrupt field, and key + value would
    otherwise overflow on the way to the trace."""
    first_bad(path, first_line, lines, key_size < 1, "key_size must be >= 1", key_size)
    first_bad(path, first_line, lines, key_size > MAX_KEY_BYTES,
               f"key_size must be at most {MAX_KEY_BYTES:,} ({format_bytes(MAX_KEY_BYTES)})", key_size)
    first_bad(path, first_line, lines, value_size < 0, f"{value_field} must be >= 0", value_size)
    first_bad(path, first_line, lines, value_size > MAX_OBJECT_BYTES,
               f"{value_field} must be at most {MAX_OBJECT_BYTES:,} ({format_bytes(MAX_OBJECT_BYTES)})", value_size)


@dataclass(frozen=True)
class TwitterReader:
    """Twitter twemcache csv (no header). Size is key + value bytes, as in the Twitter trace papers;
    a value size of 0 (a miss) is filled from the key's other requests."""

    name: str = "twitter"
    extensions: tuple[str, ...] = ()
    description: str = (
        "Twitter twemcache csv 'timestamp,key,key_size,value_size,client_id,op,ttl' (no header)"
    )

    def sniff(self, head: bytes) -> bool:
        lines = [ln for ln in head.split(b"\n")[:-1][:8] if ln.strip()]
        if not lines:
            return False
        for ln in lines:
            f = ln.strip().split(b",")
            if len(f) != 7 or f[5].lower() not in TWITTER_OPS or not f[0].isdigit():
                return False
        return True

    def read(self, path: Path, opts: ReadOptions) -> Trace:
        validate_params(NoParams, opts.params, f"{path}")
        cols = [("timestamp", "float"), ("key", "str"), ("key_size", "int"), ("value_size", "int"),
                ("client_id", "int"), ("op", "str"), ("ttl", "float")]  # fmt: skip
        mapper = KeyMapper()
        out: dict[str, list[np.ndarray]] = {k: [] for k in ("t", "k", "kb", "sz", "op", "ttl")}
        have = 0
        for chunk, rows in iter_tables(path, opts, cols, ","):
            check_sizes(path, chunk.first_line, chunk.lines, rows["key_size"], rows["value_size"], "value_size")
            first_bad(path, chunk.first_line, chunk.lines, rows["ttl"] < 0, "ttl must be >= 0", rows["ttl"])
            out["op"].append(map_codes(path, chunk.first_line, chunk.lines, rows["op"], TWITTER_OPS))
            out["t"].append(rows["timestamp"])
            out["k"].append(mapper.map(rows["key"]))
            out["kb"].append(rows["key_size"])
            out["sz"].append(np.where(rows["value_size"] > 0, rows["key_size"] + rows["value_size"], 0))
            out["ttl"].append(rows["ttl"])
            have += len(rows)
            if opts.stop is not None and have >= opts.stop:
                break
        c = Columns(
            keys=collect(out["k"]), timestamps=collect(out["t"]), sizes=collect(out["sz"]), ops=collect(out["op"]),
            ttls=collect(out["ttl"]), key_bytes=collect(out["kb"]), keys_dense=True,
        )  # fmt: skip
        return build_trace(path.name, c, opts, {"format": self.name, "path": str(path)})


META_KINDS = {
    "op_time": "float", "key": "str", "key_size": "int", "op": "str", "op_count": "int", "size": "int",
    "cache_hits": "int", "ttl": "float", "usecase": "int", "sub_usecase": "int",
}  # fmt: skip
META_REQUIRED = ("op_time", "key", "key_size", "op", "op_count", "size")


@dataclass(frozen=True)
class MetaKvReader:
    """Meta kvcache csv (CacheLib trace replay). ``op_count`` identical requests are collapsed into
    one row; we expand them back to ``op_count`` requests at the row's timestamp. A size of 0 (a
    miss) is filled from the key's other requests; ``ttl`` (s) applies to SETs."""

    name: str = "meta-kv"
    extensions: tuple[str, ...] = ()
    description: str = (
        "Meta kvcache csv with header 'op_time,key,key_size,op,op_count,size,...,ttl' (op_count expanded)"
    )

    def sniff(self, head: bytes) -> bool:
        header = head.split(b"\n", 1)[0].strip().lower().split(b",")
        return all(col.encode() in header for col in META_REQUIRED)

    def read(self, path: Path, opts: ReadOptions) -> Trace:
        validate_params(NoParams, opts.params, f"{path}")
        names: list[str] = []

        def header(line: str) -> list[tuple[str, str]]:
            names.extend(c.strip().lower() for c in line.split(","))
            missing = [c for c in META_REQUIRED if c not in names]
            if missing:
                raise TraceError(f"{path}:1: header lacks column(s) {', '.join(missing)} (got {line[:80]!r})")
            dup = {c for c in names if names.count(c) > 1}
            if dup:
                raise TraceError(f"{path}:1: duplicate header column(s) {', '.join(sorted(dup))}")
            return [(n, META_KINDS.get(n, "str")) for n in names]

        mapper = KeyMapper()
        out: dict[str, list[np.ndarray]] = {k: [] for k in ("t", "k", "kb", "sz", "op", "ttl", "n")}
        have = 0.0
        guard = MemoryGuard(path, opts.stop)  # expanded requests, before they are expanded
        for chunk, rows in iter_tables(path, opts, [], ",", header=header):
            fl, lines = chunk.first_line, chunk.lines
            first_bad(path, fl, lines, rows["op_count"] < 1, "op_count must be >= 1", rows["op_count"])
            check_sizes(path, fl, lines, rows["key_size"], rows["size"], "size")
            over = guard.expand(rows["op_count"])
            if over is not None:
                line = fl + _row_to_line(lines, over)
                raise TraceError(f"{path}:{line}: op_count {int(rows['op_count'][over]):,} expands the trace to more "
                                 f"requests than fit in memory: {guard.too_many(guard.seen)}")
            out["op"].append(map_codes(path, fl, lines, rows["op"], META_OPS))
            out["t"].append(rows["op_time"])
            out["k"].append(mapper.map(rows["key"]))
            out["kb"].append(rows["key_size"])
            out["sz"].append(rows["size"])
            ttl = rows["ttl"] if "ttl" in names else np.zeros(len(rows))
            first_bad(path, fl, lines, ttl < 0, "ttl must be >= 0", ttl)
            out["ttl"].append(ttl)
            out["n"].append(rows["op_count"])
            have += float(rows["op_count"].sum(dtype=np.float64))
            if opts.stop is not None and have >= opts.stop:
                break
        n = clip_counts(collect(out["n"]), opts.stop)  # only expand what the limit keeps

        def expand(parts: list[np.ndarray]) -> np.ndarray:
            return np.repeat(collect(parts), n)

        c = Columns(
            keys=expand(out["k"]), timestamps=expand(out["t"]), sizes=expand(out["sz"]), ops=expand(out["op"]),
            ttls=expand(out["ttl"]), key_bytes=expand(out["kb"]), keys_dense=True,
        )  # fmt: skip
        return build_trace(path.name, c, opts, {"format": self.name, "path": str(path), "rows": int(len(n))})


register_format(TwitterReader())
register_format(MetaKvReader())
