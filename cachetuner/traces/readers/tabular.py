"""Shared loop for text readers: chunked lines -> numpy structured arrays, stopping at the limit."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from cachetuner.errors import TraceError
from cachetuner.traces.assemble import ReadOptions
from cachetuner.traces.streams import LineChunk, iter_lines
from cachetuner.traces.textparse import Columns, parse_chunk, row_to_line


def iter_tables(
    path: Path,
    opts: ReadOptions,
    columns: Columns,
    delimiter: str | None,
    *,
    header: Callable[[str], Columns | None] | None = None,
    blank_out: Callable[[str], bool] | None = None,
) -> Iterator[tuple[LineChunk, np.ndarray]]:
    """Yield ``(chunk, rows)``.

    ``header`` validates line 1 (which is then skipped) and may return the column spec it implies;
    ``blank_out`` marks lines to skip (replaced by blanks so line numbers stay exact).
    """
    first = True
    for chunk in iter_lines(path, progress=opts.progress, limit=opts.stop):
        lines = chunk.lines
        if first:
            first = False
            if header is not None:
                columns = header(lines[0]) or columns
                lines = [""] + lines[1:]  # keep line numbering
        if blank_out is not None:
            lines = ["" if blank_out(ln) else ln for ln in lines]
        view = LineChunk(chunk.first_line, lines)
        yield view, parse_chunk(path, view, columns, delimiter)
    if first:
        raise TraceError(f"{path}: empty file")


def first_bad(
    path: Path, first_line: int, lines: list[str], mask: np.ndarray, what: str, values: np.ndarray
) -> None:
    """Raise ``path:line: what, got value`` for the first row of a chunk where ``mask`` is set."""
    bad = np.flatnonzero(mask)
    if len(bad):
        line = first_line + row_to_line(lines, int(bad[0]))
        value = values[bad[0]]
        raise TraceError(f"{path}:{line}: {what}, got {f'{value:,}' if isinstance(value, np.integer) else value}")


def collect(parts: list[np.ndarray], dtype: np.dtype | None = None) -> np.ndarray:
    if not parts:
        return np.zeros(0, dtype=dtype or np.int64)
    return np.concatenate(parts)


def clip_counts(counts: np.ndarray, limit: int | None) -> np.ndarray:
    """Per-row request counts (ARC's n_blocks, Meta's op_count) cut to add up to at most ``limit``: rows past it
    expand to nothing, the row it falls in to its part before it. Why before expanding: expanding first and
    cutting after would allocate what the limit is there to avoid (one row may stand for 10^12 requests)."""
    if limit is None:
        return counts
    before = np.cumsum(counts, dtype=np.float64) - counts
    return np.clip(limit - before, 0, counts).astype(np.int64)


def header_checker(path: Path, expected: str) -> Callable[[str], Columns | None]:
    """Header line must list ``expected`` columns (comma separated, order as given)."""

    def check(line: str) -> Columns | None:
        got = [c.strip().lower() for c in line.split(",")]
        if got != expected.split(","):
            raise TraceError(f"{path}:1: expected header {expected!r}, got {line[:80]!r}")
        return None

    return check
