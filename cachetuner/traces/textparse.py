"""Parse a chunk of delimited text lines into a numpy structured array.

``np.loadtxt`` (C parser) does the work; only when it fails do we walk the chunk in Python to
find the first bad line, so the error names the exact line and field instead of loadtxt's
chunk-relative row.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from cachetuner.errors import TraceError
from cachetuner.traces.streams import LineChunk

#: (field name, kind) with kind one of "int", "float", "str".
Columns = Sequence[tuple[str, str]]

_KIND_DTYPE = {"int": "<i8", "float": "<f8"}
_KIND_WORD = {"int": "an integer", "float": "a number", "str": "text"}


def _dtype(columns: Columns, width: int) -> np.dtype:
    return np.dtype([(name, _KIND_DTYPE.get(kind, f"S{max(width, 1)}")) for name, kind in columns])


def _check(value: str, kind: str) -> bool:
    try:
        if kind == "int":
            int(value)
        elif kind == "float":
            float(value)
        return True
    except ValueError:
        return False


def _locate(
    path: Path, chunk: LineChunk, columns: Columns, delimiter: str | None, loadtxt_msg: str
) -> TraceError:
    names = ",".join(name for name, _ in columns)
    for i, line in enumerate(chunk.lines):
        if not line.strip():
            continue
        fields = line.split(delimiter) if delimiter else line.split()
        where = f"{path}:{chunk.first_line + i}"
        if len(fields) != len(columns):
            return TraceError(
                f"{where}: expected {len(columns)} fields ({names}), got {len(fields)}: {line[:80]!r}"
            )
        for (name, kind), value in zip(columns, fields, strict=True):
            if not _check(value, kind):
                return TraceError(f"{where}: field '{name}' is not {_KIND_WORD[kind]}: {value[:40]!r}")
    last = chunk.first_line + len(chunk.lines) - 1
    return TraceError(f"{path}: lines {chunk.first_line}-{last}: cannot parse ({loadtxt_msg})")


def parse_chunk(path: Path, chunk: LineChunk, columns: Columns, delimiter: str | None) -> np.ndarray:
    """Structured array with one row per non-blank line; raises :class:`TraceError` on the first bad line."""
    if not any(ln.strip() for ln in chunk.lines):
        return np.zeros(0, dtype=_dtype(columns, 1))
    width = max((len(ln) for ln in chunk.lines), default=1) if any(k == "str" for _, k in columns) else 1
    dtype = _dtype(columns, width)
    try:
        return np.loadtxt(chunk.lines, dtype=dtype, delimiter=delimiter, comments=None, ndmin=1)
    except ValueError as e:
        raise _locate(path, chunk, columns, delimiter, str(e)) from None
