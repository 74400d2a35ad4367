"""Generic delimited text (``--format csv``): traces in no layout we know, columns named by params.

The params say which column holds the key (required) and, optionally, time, size, op, ttl and
key_size, each as a 1-based index or, with ``header: true``, a header name. Only those columns are
parsed (``np.loadtxt`` with ``usecols``), so wide files cost no more than narrow ones. Auto-detection
never picks this format: without params nothing says which column is which.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator, model_validator

from cachetuner.errors import TraceError
from cachetuner.resources import format_bytes
from cachetuner.traces.assemble import MAX_KEY_BYTES, MAX_OBJECT_BYTES, Columns, ReadOptions, build_trace
from cachetuner.traces.base import register_format, validate_params
from cachetuner.traces.readers.blockcsv import map_codes
from cachetuner.traces.readers.kv import KeyMapper
from cachetuner.traces.readers.ops import OP_WORDS
from cachetuner.traces.readers.tabular import collect, first_bad
from cachetuner.traces.readers.text import _row_to_line
from cachetuner.traces.streams import LineChunk, iter_lines
from cachetuner.traces.textparse import loadtxt, nonfinite, parse_chunk
from cachetuner.traces.trace import Trace

#: Column roles and how their fields parse (textparse kinds). Keys are read as text and turned
#: into integers afterwards when the whole column allows it.
ROLE_KINDS: dict[str, str] = {
    "key": "str", "time": "float", "size": "int", "op": "str", "ttl": "float", "key_size": "int",
}  # fmt: skip
_KIND_DTYPE = {"int": "<i8", "float": "<f8"}
#: seconds per unit of the ``time_unit`` param
TIME_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9, "100ns": 1e-7}


class CsvParams(BaseModel):
    """Reader params of ``csv``. A column is a 1-based index, or a header name with ``header: true``."""

    model_config = ConfigDict(extra="forbid")
    key: int | str
    time: int | str | None = None
    size: int | str | None = None
    op: int | str | None = None
    ttl: int | str | None = None
    key_size: int | str | None = None
    #: One character; null splits on runs of whitespace.
    delimiter: str | None = ","
    #: Line 1 names the columns (and is not a request).
    header: bool = False
    #: The unit of the ``time`` column: s, ms, us, ns, or 100ns (Windows FILETIME ticks, as in the MSR Cambridge
    #: block traces); read as seconds after scaling.
    time_unit: Literal["s", "ms", "us", "ns", "100ns"] = "s"

    @field_validator(*ROLE_KINDS, mode="before")
    @classmethod
    def _column(cls, v: object, info: ValidationInfo) -> object:
        if v is None and info.field_name != "key":
            return v
        if isinstance(v, bool) or not isinstance(v, int | str):
            raise ValueError("must be a 1-based column index or a column name")
        if isinstance(v, int) and v < 1:
            raise ValueError(f"column indexes start at 1, got {v}")
        if isinstance(v, str) and not v.strip():
            raise ValueError("column name is empty")
        return v

    @field_validator("delimiter")
    @classmethod
    def _one_char(cls, v: str | None) -> str | None:
        if v is not None and (len(v) != 1 or v in "\r\n"):
            raise ValueError(f"must be one character (e.g. ',' or '\\t'), or null for whitespace, got {v!r}")
        return v

    @model_validator(mode="after")
    def _names_need_header(self) -> CsvParams:
        for role in ROLE_KINDS:
            ref = getattr(self, role)
            if isinstance(ref, str) and not self.header:
                raise ValueError(
                    f"param '{role}': column name {ref!r} needs header: true (or give a 1-based column index)"
                )
        return self

    def roles(self) -> dict[str, int | str]:
        """The roles given, in :data:`ROLE_KINDS` order."""
        return {role: getattr(self, role) for role in ROLE_KINDS if getattr(self, role) is not None}


#: (role, 0-based column) of every column read, in :data:`ROLE_KINDS` order.
Spec = list[tuple[str, int]]


def _split(line: str, delimiter: str | None) -> list[str]:
    return line.split(delimiter) if delimiter else line.split()


def _spec(path: Path, p: CsvParams, header: str | None) -> Spec:
    """Resolve column references; names are looked up in ``header`` (stripped, case-insensitive)."""
    names = [n.strip().lower() for n in _split(header, p.delimiter)] if header is not None else []
    spec: Spec = []
    for role, ref in p.roles().items():
        if isinstance(ref, int):
            spec.append((role, ref - 1))
            continue
        hits = [i for i, n in enumerate(names) if n == ref.strip().lower()]
        if len(hits) != 1:
            what = "not in the header" if not hits else f"appears {len(hits)} times in the header"
            raise TraceError(
                f"{path}:1: param '{role}': column {ref!r} {what} (columns: {', '.join(names)[:200]})"
            )
        spec.append((role, hits[0]))
    return spec


def _locate(path: Path, chunk: LineChunk, spec: Spec, delimiter: str | None, loadtxt_msg: str) -> TraceError:
    """The first bad line: a row too short for a column, else (via ``parse_chunk`` on the used
    fields alone) a field that does not parse."""
    projected = []
    for i, line in enumerate(chunk.lines):
        fields = _split(line, delimiter) if line.strip() else []
        for role, col in spec:
            if fields and col >= len(fields):
                return TraceError(
                    f"{path}:{chunk.first_line + i}: no column {col + 1} (field '{role}'): "
                    f"the row has {len(fields)} fields: {line[:80]!r}"
                )
        projected.append((delimiter or " ").join(fields[col] for _, col in spec) if fields else "")
    try:
        parse_chunk(
            path, LineChunk(chunk.first_line, projected), [(r, ROLE_KINDS[r]) for r, _ in spec], delimiter
        )
    except TraceError as located:
        return located
    last = chunk.first_line + len(chunk.lines) - 1
    return TraceError(f"{path}: lines {chunk.first_line}-{last}: cannot parse ({loadtxt_msg})")


def _parse(path: Path, chunk: LineChunk, spec: Spec, delimiter: str | None) -> np.ndarray:
    """Structured array of the used columns, one row per non-blank line."""
    width = max((len(ln) for ln in chunk.lines), default=1)
    dtype = np.dtype([(role, _KIND_DTYPE.get(ROLE_KINDS[role], f"S{max(width, 1)}")) for role, _ in spec])
    if not any(ln.strip() for ln in chunk.lines):
        return np.zeros(0, dtype=dtype)
    try:
        rows = loadtxt(chunk.lines, dtype, delimiter, usecols=[c for _, c in spec])
    except ValueError as e:
        raise _locate(path, chunk, spec, delimiter, str(e)) from None
    bad = nonfinite(path, chunk, rows, [(role, ROLE_KINDS[role]) for role, _ in spec])
    if bad is not None:
        raise bad
    return rows


def _iter_rows(path: Path, p: CsvParams, opts: ReadOptions) -> Iterator[tuple[LineChunk, np.ndarray]]:
    spec = None if p.header else _spec(path, p, None)
    empty = True
    for chunk in iter_lines(path, progress=opts.progress, limit=opts.stop):
        empty, lines = False, chunk.lines
        if spec is None:
            spec = _spec(path, p, lines[0])
            lines = [""] + lines[1:]  # keep line numbering
        view = LineChunk(chunk.first_line, lines)
        yield view, _parse(path, view, spec, p.delimiter)
    if empty:
        raise TraceError(f"{path}: empty file")


class _StringKeys(Exception):
    """A key that is not an int64: the file is re-read with string keys."""


@dataclass(frozen=True)
class CsvReader:
    """Delimited text in any layout, described by params (no quoting: fields must not contain the
    delimiter). Keys are integers when every key parses as one, else strings numbered in order of
    first appearance; key_bytes comes from ``key_size``, else the key's length for string keys.
    Without ``time`` the requests are timed by ``--rate``; without ``size`` sizes come from the
    size model; without ``op`` every request is a GET (read-only)."""

    name: str = "csv"
    extensions: tuple[str, ...] = ()
    description: str = (
        "generic delimited text; params name the columns: key (required), time, size, op, ttl, "
        "key_size, delimiter, header, time_unit"
    )

    def sniff(self, head: bytes) -> bool:
        return False  # needs params: never auto-detected

    def read(self, path: Path, opts: ReadOptions) -> Trace:
        p = validate_params(CsvParams, opts.params, f"{path}")
        assert isinstance(p, CsvParams)
        try:
            return self._read(path, opts, p, int_keys=True)
        except _StringKeys:
            # Simplest correct fallback: ids seen as integers so far would need re-numbering as text.
            return self._read(path, opts, p, int_keys=False)

    def _read(self, path: Path, opts: ReadOptions, p: CsvParams, *, int_keys: bool) -> Trace:
        roles = p.roles()
        mapper = KeyMapper()
        out: dict[str, list[np.ndarray]] = {role: [] for role in (*roles, "key_len")}
        have = 0
        for chunk, rows in _iter_rows(path, p, opts):
            fl, lines = chunk.first_line, chunk.lines
            keys = np.char.strip(rows["key"])
            if int_keys:
                try:
                    out["key"].append(keys.astype(np.int64))
                except (ValueError, OverflowError):
                    raise _StringKeys from None
            else:
                empty = np.flatnonzero(np.char.str_len(keys) == 0)
                if len(empty):
                    raise TraceError(
                        f"{path}:{fl + _row_to_line(lines, int(empty[0]))}: field 'key' is empty"
                    )
                out["key"].append(mapper.map(keys))
                out["key_len"].append(np.char.str_len(keys))
            for role, lowest, highest in (("size", 0, MAX_OBJECT_BYTES), ("ttl", 0, None),
                                          ("key_size", 1, MAX_KEY_BYTES)):
                if role in roles:
                    values = rows[role]
                    first_bad(path, fl, lines, values < lowest, f"{role} must be >= {lowest}", values)
                    if highest is not None:
                        first_bad(path, fl, lines, values > highest,
                                   f"{role} must be at most {highest:,} ({format_bytes(highest)})", values)
                    out[role].append(values)
            if "time" in roles:
                out["time"].append(rows["time"])
            if "op" in roles:
                out["op"].append(map_codes(path, fl, lines, rows["op"], OP_WORDS))
            have += len(rows)
            if opts.stop is not None and have >= opts.stop:
                break

        def column(role: str) -> np.ndarray | None:
            return collect(out[role]) if role in roles else None

        key_bytes = column("key_size")
        if key_bytes is None and not int_keys:
            key_bytes = collect(out["key_len"])
        times = column("time")
        if times is not None and p.time_unit != "s":
            times = times * TIME_UNITS[p.time_unit]
        cols = Columns(
            keys=collect(out["key"]), timestamps=times, sizes=column("size"), ops=column("op"),
            ttls=column("ttl"), key_bytes=key_bytes, keys_dense=not int_keys,
        )  # fmt: skip
        meta = {"format": self.name, "path": str(path), "key_type": "integer" if int_keys else "string"}
        return build_trace(path.name, cols, opts, meta)


register_format(CsvReader())
