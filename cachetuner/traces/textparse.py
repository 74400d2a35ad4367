"""Parse a chunk of delimited text lines into a numpy structured array.

``np.loadtxt`` (C parser) does the work; only when it fails do we walk the chunk in Python to
find the first bad line, so the error names the exact line and field instead of loadtxt's
chunk-relative row.

Two of loadtxt's leniencies would alter data without a word, so they are errors here: an integer field that
does not parse as one is read through a float (``1.5`` -> 1, ``99999999999999999999999`` -> -2**63; numpy only
warns), and ``nan`` / ``inf`` parse as numbers (a NaN timestamp would turn every later one into NaN).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from cachetuner.errors import TraceError
from cachetuner.traces.streams import LineChunk

#: (field name, kind) with kind one of "int", "float", "str".
Columns = Sequence[tuple[str, str]]

_KIND_DTYPE = {"int": "<i8", "float": "<f8"}
_KIND_WORD = {"int": "an integer", "float": "a number", "str": "text"}
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def _dtype(columns: Columns, width: int) -> np.dtype:
    return np.dtype([(name, _KIND_DTYPE.get(kind, f"S{max(width, 1)}")) for name, kind in columns])


def row_to_line(lines: list[str], row: int) -> int:
    """Index within ``lines`` of the ``row``-th non-blank line (loadtxt skips blank lines)."""
    seen = -1
    for i, ln in enumerate(lines):
        if ln.strip():
            seen += 1
            if seen == row:
                return i
    return len(lines) - 1


def _problem(name: str, value: str, kind: str) -> str | None:
    """What is wrong with one field (None: nothing), in words that name the field and quote the value."""
    try:
        if kind == "int" and not INT64_MIN <= int(value) <= INT64_MAX:
            return f"field '{name}' is too large: {value[:40]!r} (an integer must lie within +-{INT64_MAX:,})"
        if kind == "float" and not np.isfinite(float(value)):
            return f"field '{name}' must be a finite number, got {value[:40]!r}"
        return None
    except ValueError:
        return f"field '{name}' is not {_KIND_WORD[kind]}: {value[:40]!r}"


def loadtxt(lines: list[str], dtype: np.dtype, delimiter: str | None, **kw: object) -> np.ndarray:
    """``np.loadtxt`` without its float fallback for integer fields (numpy warns, then reads ``1.5`` as 1 and an
    out-of-range integer as -2**63): that fallback raises ValueError here, as any other bad field does."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        try:
            return np.loadtxt(lines, dtype=dtype, delimiter=delimiter, comments=None, ndmin=1, **kw)  # type: ignore[call-overload, no-any-return]
        except DeprecationWarning as e:
            raise ValueError(str(e)) from None


def nonfinite(path: Path, chunk: LineChunk, rows: np.ndarray, columns: Columns) -> TraceError | None:
    """The error for the first ``nan`` / ``inf`` in a float column of ``rows`` (parsed from ``chunk``), or None."""
    for name, kind in columns:
        if kind != "float":
            continue
        bad = np.flatnonzero(~np.isfinite(rows[name]))
        if len(bad):
            line = chunk.first_line + row_to_line(chunk.lines, int(bad[0]))
            return TraceError(f"{path}:{line}: field '{name}' must be a finite number, got {rows[name][bad[0]]}")
    return None


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
            problem = _problem(name, value, kind)
            if problem:
                return TraceError(f"{where}: {problem}")
    last = chunk.first_line + len(chunk.lines) - 1
    return TraceError(f"{path}: lines {chunk.first_line}-{last}: cannot parse ({loadtxt_msg})")


def parse_chunk(path: Path, chunk: LineChunk, columns: Columns, delimiter: str | None) -> np.ndarray:
    """Structured array with one row per non-blank line; raises :class:`TraceError` on the first bad line."""
    if not any(ln.strip() for ln in chunk.lines):
        return np.zeros(0, dtype=_dtype(columns, 1))
    width = max((len(ln) for ln in chunk.lines), default=1) if any(k == "str" for _, k in columns) else 1
    dtype = _dtype(columns, width)
    try:
        rows = loadtxt(chunk.lines, dtype, delimiter)
    except ValueError as e:
        raise _locate(path, chunk, columns, delimiter, str(e)) from None
    bad = nonfinite(path, chunk, rows, columns)
    if bad is not None:
        raise bad
    return rows
