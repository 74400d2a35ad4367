"""Plain-text block and object traces: LIRS (one id per line), ARC ``.lis``, AdaptSize."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict

from cachetuner.errors import TraceError
from cachetuner.resources import format_bytes
from cachetuner.traces.assemble import MAX_OBJECT_BYTES, Columns, ReadOptions, build_trace
from cachetuner.traces.base import NoParams, register_format, validate_params
from cachetuner.traces.readers.tabular import clip_counts, collect, first_bad, iter_tables
from cachetuner.traces.streams import MemoryGuard
from cachetuner.traces.textparse import row_to_line as _row_to_line
from cachetuner.traces.trace import Trace

#: ARC traces address 512-byte disk blocks.
ARC_BLOCK_BYTES = 512
#: The most blocks one line may name (one request of MAX_OBJECT_BYTES when not expanded).
MAX_BLOCKS = MAX_OBJECT_BYTES // ARC_BLOCK_BYTES


def _is_text(head: bytes) -> bool:
    return bool(head) and b"\x00" not in head[:1024]


def _first_lines(head: bytes, n: int = 8) -> list[list[str]]:
    """Whitespace-split fields of the first complete lines of ``head``."""
    lines = head.split(b"\n")[:-1][:n]
    return [ln.decode("latin-1").split() for ln in lines if ln.strip()]


def _all_int(fields: list[str]) -> bool:
    return all(f.lstrip("-").isdigit() for f in fields)


@dataclass(frozen=True)
class LirsReader:
    """LIRS paper traces: one integer block id per line; ``*`` lines are separators and skipped."""

    name: str = "lirs"
    extensions: tuple[str, ...] = ()
    description: str = "LIRS text: one integer id per line, '*' lines skipped (no sizes, no times)"

    def sniff(self, head: bytes) -> bool:
        rows = _first_lines(head)
        return (
            _is_text(head) and bool(rows) and all(len(r) == 1 and (r[0] == "*" or _all_int(r)) for r in rows)
        )

    def read(self, path: Path, opts: ReadOptions) -> Trace:
        validate_params(NoParams, opts.params, f"{path}")
        parts, have = [], 0
        for _, rows in iter_tables(path, opts, [("id", "int")], None, blank_out=lambda ln: ln.strip() == "*"):
            parts.append(rows["id"])
            have += len(rows)
            if opts.stop is not None and have >= opts.stop:
                break
        return build_trace(
            path.name, Columns(keys=collect(parts)), opts, {"format": self.name, "path": str(path)}
        )


class ArcParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    #: One request per 512-byte block (the ARC paper's unit); False: one request per line,
    #: keyed by start block, sized n_blocks * 512.
    expand: bool = True


@dataclass(frozen=True)
class ArcReader:
    """ARC paper ``.lis`` traces: ``start_block n_blocks ignored req_no`` per line, 512-byte blocks."""

    name: str = "arc"
    extensions: tuple[str, ...] = (".lis",)
    description: str = "ARC .lis text 'start n_blocks ignored req_no', one request per 512-byte block"

    def sniff(self, head: bytes) -> bool:
        rows = _first_lines(head)
        return _is_text(head) and bool(rows) and all(len(r) == 4 and _all_int(r) for r in rows)

    def read(self, path: Path, opts: ReadOptions) -> Trace:
        p = validate_params(ArcParams, opts.params, f"{path}")
        assert isinstance(p, ArcParams)
        starts, counts, have = [], [], 0.0
        cols = [("start", "int"), ("n_blocks", "int"), ("ignored", "int"), ("req_no", "int")]
        guard = MemoryGuard(path, opts.stop)  # expanded blocks, before they are expanded
        for chunk, rows in iter_tables(path, opts, cols, None):
            n_blocks = rows["n_blocks"]
            first_bad(path, chunk.first_line, chunk.lines, n_blocks < 1, "n_blocks must be >= 1", n_blocks)
            if p.expand:  # one request per block: the count is bounded by the memory to hold them
                over = guard.expand(n_blocks)
                if over is not None:
                    line = chunk.first_line + _row_to_line(chunk.lines, over)
                    raise TraceError(f"{path}:{line}: n_blocks {int(n_blocks[over]):,} expands the trace to more "
                                     f"blocks than fit in memory: {guard.too_many(guard.seen)}")
            else:  # one request of n_blocks * 512 bytes
                first_bad(path, chunk.first_line, chunk.lines, n_blocks > MAX_BLOCKS,
                          f"n_blocks must be at most {MAX_BLOCKS:,} (a {format_bytes(MAX_OBJECT_BYTES)} request)",
                          n_blocks)
            starts.append(rows["start"])
            counts.append(n_blocks)
            have += float(n_blocks.sum(dtype=np.float64)) if p.expand else len(rows)
            if opts.stop is not None and have >= opts.stop:
                break
        start, n_blocks = collect(starts), collect(counts)
        meta = {"format": self.name, "path": str(path), "expand": p.expand}
        if not p.expand:
            cols_ = Columns(keys=start, sizes=n_blocks * ARC_BLOCK_BYTES)
            return build_trace(path.name, cols_, opts, meta)
        n_blocks = clip_counts(n_blocks, opts.stop)  # only expand what the limit keeps
        total = int(n_blocks.sum())
        line_start = np.cumsum(n_blocks) - n_blocks
        offsets = np.arange(total, dtype=np.int64) - np.repeat(line_start, n_blocks)
        keys = np.repeat(start, n_blocks) + offsets
        cols_ = Columns(keys=keys, sizes=np.full(total, ARC_BLOCK_BYTES, dtype=np.int64))
        return build_trace(path.name, cols_, opts, meta)


@dataclass(frozen=True)
class AdaptSizeReader:
    """AdaptSize example trace: ``time id size`` where time is the request number (so timing uses the rate)."""

    name: str = "adaptsize"
    extensions: tuple[str, ...] = ()
    description: str = "AdaptSize text 'time id size' (time = request number; timing from --rate)"

    def sniff(self, head: bytes) -> bool:
        rows = _first_lines(head)
        return _is_text(head) and bool(rows) and all(len(r) == 3 and _all_int(r) for r in rows)

    def read(self, path: Path, opts: ReadOptions) -> Trace:
        validate_params(NoParams, opts.params, f"{path}")
        keys, sizes, have = [], [], 0
        for chunk, rows in iter_tables(path, opts, [("time", "int"), ("id", "int"), ("size", "int")], None):
            size = rows["size"]
            first_bad(path, chunk.first_line, chunk.lines, size < 1, "size must be >= 1 byte", size)
            first_bad(path, chunk.first_line, chunk.lines, size > MAX_OBJECT_BYTES,
                      f"size must be at most {MAX_OBJECT_BYTES:,} bytes ({format_bytes(MAX_OBJECT_BYTES)})", size)
            keys.append(rows["id"])
            sizes.append(rows["size"])
            have += len(rows)
            if opts.stop is not None and have >= opts.stop:
                break
        cols = Columns(keys=collect(keys), sizes=collect(sizes))
        return build_trace(path.name, cols, opts, {"format": self.name, "path": str(path)})


register_format(LirsReader())
register_format(ArcReader())
register_format(AdaptSizeReader())
