"""Byte and line streams over trace files, with transparent decompression and exact error positions.

Compressed files are recognised by their magic number, not their name, and streamed: zstd (the libCacheSim
collections' ``.zst``), gzip, xz and bzip2 (the Caffeine simulator's public traces ship as ``.gz`` and ``.xz``).
A compressed file read as raw records would parse as garbage keys, so none is ever read undecompressed. For the
same reason a tar or zip archive is opened and its one trace file read (:mod:`cachetuner.traces.archives`).

Readers never hold a whole file as Python objects: text is handed out in chunks of lines (each
chunk parsed by numpy), binary files in chunks of whole records. Every chunk carries the position
of its first line / byte so a parse error can name the exact line or offset.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import tarfile
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, BinaryIO

import numpy as np

from cachetuner.errors import TraceError
from cachetuner.resources import format_bytes, memory_available
from cachetuner.traces.archives import ARCHIVE_SUFFIXES, Member, is_zip, untar, unzip

#: Called with (compressed bytes consumed so far, total file bytes) while reading.
ProgressFn = Callable[[int, int], None]

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
#: zstd frame magics (little-endian): a data frame, and the 16 skippable-frame magics (their low 4 bits vary)
_ZSTD_FRAME = 0xFD2FB528
_ZSTD_SKIPPABLE, _ZSTD_SKIPPABLE_MASK = 0x184D2A50, 0xFFFFFFF0
#: the xz container's magic number (6 bytes: no raw key file starts with it by chance)
XZ_MAGIC = b"\xfd7zXZ\x00"
#: file-name endings of compressed files, stripped before a format is picked by extension
COMPRESSED_SUFFIXES = (".zst", ".gz", ".xz", ".bz2")
TEXT_CHUNK_LINES = 1 << 18
BINARY_CHUNK_BYTES = 1 << 24
#: Peak memory of reading one request into a Trace (the raw chunk, the parsed columns, the dense-id pass and the
#: Trace's own 33 bytes; measured ~50 B on orm-night's 4-byte keys, more with sizes and times): reading stops with
#: an error naming ``--limit`` before the requests read so far would need more than the memory available at start.
READ_BYTES_PER_REQUEST = 64
#: Share of the memory available (cachetuner.resources) the reading may use (the rest is the process and what follows the read).
READ_MEMORY_SHARE = 0.8


@dataclass
class MemoryGuard:
    """Stops a read that would exhaust the machine's memory with a one-line error, instead of the kernel's OOM kill
    (a multi-billion-request public trace read whole). Counts requests (records or lines) as chunks arrive."""

    path: Path
    #: the reader stops at this many requests (``--limit``): never count past it
    limit: int | None = None
    budget: int | None = None
    seen: int = 0

    def __post_init__(self) -> None:
        if self.budget is None:
            avail = memory_available()
            self.budget = None if avail is None else int(avail * READ_MEMORY_SHARE)

    def add(self, n: int) -> None:
        self.seen += n
        if self.limit is not None:
            self.seen = min(self.seen, self.limit)
        if self.budget is not None and self.seen * READ_BYTES_PER_REQUEST > self.budget:
            fits = self.budget // READ_BYTES_PER_REQUEST
            raise TraceError(
                f"{self.path}: stopped after {self.seen:,} requests: more would not fit in the "
                f"{format_bytes(self.budget)} of memory available here; pass --limit (at most ~{fits:,} requests)"
            )

    def expand(self, counts: np.ndarray) -> int | None:
        """Count rows that each stand for ``counts`` requests (an ARC line's n_blocks, a Meta row's op_count);
        the index of the first row that takes the total past the memory available, else None. Why before the
        expansion: one row's count of 10^12 would be an allocation of terabytes, not a slow read."""
        total = self.seen + np.cumsum(counts, dtype=np.float64)  # float: a sum of huge counts must not wrap
        if self.limit is not None:
            total = np.minimum(total, self.limit)
        if len(total):
            self.seen = int(total[-1])
        if self.budget is None:
            return None
        over = np.flatnonzero(total * READ_BYTES_PER_REQUEST > self.budget)
        return int(over[0]) if len(over) else None

    def too_many(self, requests: int) -> str:
        """Why ``requests`` requests cannot be read here, and what to do (for a message that names the cause)."""
        budget = self.budget or 0
        return (f"{requests:,} requests need ~{format_bytes(requests * READ_BYTES_PER_REQUEST)} of memory, more "
                f"than the {format_bytes(budget)} available here; pass --limit (at most "
                f"~{budget // READ_BYTES_PER_REQUEST:,} requests)")


class _CountingReader(io.RawIOBase):
    """Wraps the on-disk file so progress reflects compressed bytes consumed."""

    def __init__(self, raw: IO[bytes], total: int, progress: ProgressFn | None) -> None:
        self._raw = raw
        self._total = total
        self._progress = progress
        self.consumed = 0

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:  # type: ignore[no-untyped-def]
        n = self._raw.readinto(b)  # type: ignore[attr-defined]
        n = n or 0
        self.consumed = self._raw.tell()  # the position read up to (a zip is read from its listing at the end first)
        if self._progress is not None:
            self._progress(self.consumed, self._total)
        return n

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        return self._raw.seek(offset, whence)

    def tell(self) -> int:
        return self._raw.tell()

    def close(self) -> None:
        self._raw.close()
        super().close()


def compression(head: bytes) -> str | None:
    """The compression a file's first (64) bytes announce (``zstd``, ``gzip``, ``xz``, ``bzip2``), or None.

    Why more than the two-byte gzip and three-byte bzip2 magic: a raw key file is arbitrary bytes, and one whose first
    key happens to start with ``1f 8b`` must not be taken for gzip. gzip also needs method 8 (deflate, the only one)
    and no reserved flag bit; bzip2 a block size digit and the first block's (or the empty stream's) magic."""
    if head[:4] == ZSTD_MAGIC or _skippable_then_zstd(head):
        return "zstd"
    if head[:6] == XZ_MAGIC:
        return "xz"
    if head[:3] == b"\x1f\x8b\x08" and len(head) > 3 and not head[3] & 0xE0:
        return "gzip"
    if head[:3] == b"BZh" and len(head) >= 10 and 0x31 <= head[3] <= 0x39 and head[4:10] in (b"1AY&SY", b"\x17rE8P\x90"):
        return "bzip2"
    return None


def _skippable_then_zstd(head: bytes) -> bool:
    """A zstd skippable frame followed by a zstd frame, as ``pzstd`` writes (its first frame says how the data was
    split): the magic, the frame's size and the next frame's magic must all agree, so no raw key file passes."""
    if len(head) < 12 or int.from_bytes(head[:4], "little") & _ZSTD_SKIPPABLE_MASK != _ZSTD_SKIPPABLE:
        return False
    end = 8 + int.from_bytes(head[4:8], "little")
    return head[end : end + 4] == ZSTD_MAGIC


def strip_compression_suffix(name: str) -> str:
    """``name`` in lower case without a compressed file's or an archive's ending (``w01.oraclegeneral.bin.zst`` ->
    ``...bin``, ``p3.lis.tar.gz`` -> ``p3.lis``)."""
    name = name.lower()
    name = next((name[: -len(x)] for x in COMPRESSED_SUFFIXES if name.endswith(x)), name)
    return next((name[: -len(x)] for x in ARCHIVE_SUFFIXES if name.endswith(x)), name)


@dataclass(frozen=True)
class Source:
    """How a trace file's bytes were stored: the compression around it, the archive member it is, and that member's
    own compression (a zip of a ``.zst`` file). All None: a plain file."""

    compression: str | None = None
    member: Member | None = None
    member_compression: str | None = None

    def describe(self) -> str | None:
        """``gzip-compressed``, ``tar member 'x.trace', gzip-compressed``; None for a plain file."""
        packed = [c for c in (self.compression, self.member_compression) if c]
        parts = ([f"{self.member.archive} member {self.member.name!r}"] if self.member else []) + [
            f"{'+'.join(packed)}-compressed"] * bool(packed)
        return ", ".join(parts) or None

    def label(self) -> str | None:
        """A short name of the stream for error messages: ``gzip``, ``gzip-compressed tar``, ``zip``; None: plain."""
        if self.member is None:
            return self.compression
        inner = f"{self.member_compression} in " if self.member_compression else ""
        outer = f"{self.compression}-compressed " if self.compression else ""
        return f"{inner}{outer}{self.member.archive}"


class CutShortError(EOFError):
    """A compressed stream ends inside a frame: the file was cut short (an interrupted download or copy). An
    EOFError, as gzip, xz and bzip2 raise for the same fault, so that one handler words them all; ``produced``: the
    bytes decompressed before the cut (a reader's chunk position would only say which chunk it was in)."""

    def __init__(self, codec: str, produced: int) -> None:
        super().__init__(f"the file ends inside a {codec} frame: truncated {codec} stream")
        self.produced = produced


class ZstdFrameWalker:
    """Follows the frame and block headers of a zstd stream as its compressed bytes go by, skipping the block
    contents, so that the end of the input can be told from the end of a frame.

    Why: python-zstandard's stream reader returns a frame cut short as if it had ended (a truncated ``.zst`` read
    as a shorter trace, without a word), and its decompressing object, which has ``eof``, gives no bound on the
    output of one call. The headers are a few bytes per block (RFC 8878 section 3.1), so this costs nothing next to
    the decompression. Bytes that are no zstd frame stop the walk (``lost``): the decompressor reports those."""

    def __init__(self) -> None:
        self._state = "magic"
        self._need = 4  # bytes of the header being collected
        self._head = bytearray()
        self._skip = 0  # bytes of block (or skippable frame) content still to pass over
        self._checksum = False
        self.lost = False

    @property
    def inside(self) -> bool:
        """Whether the bytes so far end inside a frame (True for a stream that has no complete frame yet)."""
        return not self.lost and (self._state != "magic" or bool(self._head) or self._skip > 0)

    def feed(self, data: bytes) -> None:
        view, pos, n = memoryview(data), 0, len(data)
        while pos < n and not self.lost:
            if self._skip:
                take = min(self._skip, n - pos)
                self._skip -= take
                pos += take
                continue
            take = min(self._need - len(self._head), n - pos)
            self._head += view[pos : pos + take]
            pos += take
            if len(self._head) == self._need:
                head = bytes(self._head)
                self._head.clear()
                self._advance(head)

    def _expect(self, state: str, need: int) -> None:
        self._state, self._need = state, need

    def _advance(self, head: bytes) -> None:
        value = int.from_bytes(head, "little")
        if self._state == "magic":
            if value == _ZSTD_FRAME:
                self._expect("descriptor", 1)
            elif value & _ZSTD_SKIPPABLE_MASK == _ZSTD_SKIPPABLE:
                self._expect("skippable", 4)
            else:
                self.lost = True
        elif self._state == "skippable":
            self._skip = value
            self._expect("magic", 4)
        elif self._state == "descriptor":
            single, fcs = value >> 5 & 1, value >> 6
            self._checksum = bool(value >> 2 & 1)
            rest = (1 - single) + (0, 1, 2, 4)[value & 3] + (single, 2, 4, 8)[fcs]
            self._expect("header", rest) if rest else self._expect("block", 3)
        elif self._state == "header":
            self._expect("block", 3)
        elif self._state == "block":
            kind, size = value >> 1 & 3, value >> 3
            if kind == 3:  # reserved block type: corrupt, the decompressor says so
                self.lost = True
                return
            self._skip = 1 if kind == 1 else size  # an RLE block holds one byte
            if value & 1:  # the frame's last block
                self._expect("checksum", 4) if self._checksum else self._expect("magic", 4)
        else:  # checksum
            self._expect("magic", 4)


class _WalkedSource:
    """The compressed bytes as the zstd reader reads them, shown to a :class:`ZstdFrameWalker` on the way."""

    def __init__(self, raw: BinaryIO, walker: ZstdFrameWalker) -> None:
        self._raw, self._walker = raw, walker

    def read(self, n: int = -1) -> bytes:
        data = self._raw.read(n)
        self._walker.feed(data)
        return data

    def close(self) -> None:
        self._raw.close()


class _ZstdStream(io.RawIOBase):
    """zstd-decompressed bytes, every frame of the file (``zstd`` and ``pzstd`` write several back to back), and a
    :class:`CutShortError` where the file ends inside a frame."""

    def __init__(self, compressed: BinaryIO) -> None:
        import zstandard

        self._walker = ZstdFrameWalker()
        self._produced = 0
        self._reader = zstandard.ZstdDecompressor().stream_reader(
            _WalkedSource(compressed, self._walker),  # type: ignore[arg-type]
            read_size=1 << 20, read_across_frames=True, closefd=True,
        )

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:  # type: ignore[no-untyped-def]
        n = self._reader.readinto(b)
        self._produced += n
        if not n and len(b) and self._walker.inside:
            raise CutShortError("zstd", self._produced)
        return n

    def close(self) -> None:
        if not self.closed:
            self._reader.close()
        super().close()


def _decompressed(kind: str | None, buffered: BinaryIO) -> BinaryIO:
    if kind == "zstd":
        return _ZstdStream(buffered)  # type: ignore[return-value]
    if kind == "gzip":
        return gzip.GzipFile(fileobj=buffered, mode="rb")  # type: ignore[return-value]
    if kind == "xz":
        return lzma.LZMAFile(buffered, mode="rb")  # type: ignore[return-value]
    if kind == "bzip2":
        return bz2.BZ2File(buffered, mode="rb")  # type: ignore[return-value]
    return buffered


def not_a_file(path: Path) -> TraceError:
    """The error for a trace path that is not a readable file."""
    return TraceError(f"{path}: {'a directory, not a trace file' if path.is_dir() else 'trace file not found'}")


def open_source(path: Path, progress: ProgressFn | None = None) -> tuple[BinaryIO, Source]:
    """Open ``path`` for reading its trace bytes, and say how they were stored: zstd, gzip, xz and bzip2 (by magic
    number) are streamed, and a tar or zip archive yields its one file (itself decompressed if compressed)."""
    if not path.is_file():
        raise not_a_file(path)
    total = path.stat().st_size
    counting = _CountingReader(open(path, "rb"), total, progress)  # noqa: SIM115
    buffered = io.BufferedReader(counting, buffer_size=1 << 20)
    head = buffered.peek(64)[:64]
    zipped = is_zip(head)
    kind = None if zipped else compression(head)
    member: Member | None
    try:
        if zipped:
            data, member = unzip(path, buffered)  # type: ignore[arg-type]
        else:
            data, member = untar(path, _decompressed(kind, buffered))  # type: ignore[arg-type]
        if member is None:
            return data, Source(kind)
        inner = compression(data.peek(64)[:64])  # type: ignore[attr-defined]
        return _decompressed(inner, data), Source(kind, member, inner)
    except Exception as e:
        buffered.close()
        if decompression_error(e):
            what = " ".join(x for x in (kind, "tar" if isinstance(e, tarfile.TarError) else None) if x) or "zip"
            if isinstance(e, EOFError):
                where = f"after {e.produced:,} decompressed bytes" if isinstance(e, CutShortError) else "in its first bytes"
                raise TraceError(f"{path}: {_cut_short(what, where)}") from None
            raise TraceError(f"{path}: cannot read the {what} stream ({e})") from None
        raise


def open_binary(path: Path, progress: ProgressFn | None = None) -> BinaryIO:
    """Open ``path`` for reading its trace bytes (see :func:`open_source`)."""
    return open_source(path, progress)[0]


def source_of(path: Path) -> Source:
    """How the trace file at ``path`` is stored (see :func:`open_source`); reads no more than an archive's first
    header."""
    f, source = open_source(path)
    f.close()
    return source


def compression_of(path: Path) -> str | None:
    """The compression (and archive) of the file at ``path``, for error messages (``gzip``, ``gzip-compressed
    tar``; see :meth:`Source.label`); None for a plain file."""
    try:
        return source_of(path).label()
    except TraceError:
        with open(path, "rb") as f:
            return compression(f.read(64))


def _cut_short(codec: str | None, where: str) -> str:
    return (f"the {codec} stream is cut short {where}: the file ends before its compressed data does "
            "(truncated; an interrupted download or copy?)")


def stream_error(path: Path, where: str, e: BaseException) -> TraceError:
    """The one-line error for a compressed stream that failed ``where`` (``near line 12``): cut short (an EOFError,
    which every codec raises for a file that ends too soon) or corrupt."""
    if isinstance(e, CutShortError):
        where = f"after {e.produced:,} decompressed bytes"
    if isinstance(e, EOFError):
        return TraceError(f"{path}: {_cut_short(compression_of(path), where)}")
    return TraceError(f"{path}: corrupt {compression_of(path)} stream {where} ({e})")


def decompression_error(e: BaseException) -> bool:
    """Whether ``e``, raised while reading a decompressing stream, says the compressed data is corrupt or cut short."""
    return type(e).__name__ == "ZstdError" or isinstance(
        e, (EOFError, lzma.LZMAError, zlib.error, gzip.BadGzipFile, tarfile.TarError, zipfile.BadZipFile)) or (
        isinstance(e, OSError) and "data stream" in str(e))  # bz2: "Invalid data stream"


def read_head(path: Path, n: int = 4096) -> bytes:
    """First ``n`` decompressed bytes (for format sniffing)."""
    with open_binary(path) as f:
        try:
            return f.read(n)
        except Exception as e:  # a corrupt frame (zstandard.ZstdError, lzma.LZMAError, ...)
            if decompression_error(e):
                raise stream_error(path, "in its first bytes", e) from None
            raise


@dataclass(frozen=True)
class LineChunk:
    """Consecutive lines of a text file; ``first_line`` is the 1-based number of ``lines[0]``."""

    first_line: int
    lines: list[str]


def iter_lines(
    path: Path, *, chunk_lines: int | None = None, progress: ProgressFn | None = None, limit: int | None = None
) -> Iterator[LineChunk]:
    """Yield the file's lines in chunks (newline stripped).

    Decoded as latin-1, which maps every byte to one character: numbers parse the same and string
    keys stay byte-exact, so no file can fail on encoding alone.
    """
    hint = (chunk_lines or TEXT_CHUNK_LINES) * 32  # readlines() takes a size hint in characters
    with open_binary(path, progress) as raw:
        text = io.TextIOWrapper(raw, encoding="latin-1", newline=None)  # type: ignore[arg-type]
        line_no = 1
        guard = MemoryGuard(path, limit)
        try:
            while True:
                lines = text.readlines(hint)
                if not lines:
                    return
                guard.add(len(lines))
                yield LineChunk(line_no, [ln.rstrip("\n") for ln in lines])
                line_no += len(lines)
        except TraceError:
            raise
        except Exception as e:  # a corrupt or truncated compressed stream
            if decompression_error(e):
                raise stream_error(path, f"near line {line_no}", e) from None
            raise


@dataclass(frozen=True)
class ByteChunk:
    """Whole records; ``offset`` is the decompressed byte offset of ``data[0]``."""

    offset: int
    data: bytes


def iter_records(
    path: Path,
    record_size: int,
    *,
    chunk_bytes: int | None = None,
    progress: ProgressFn | None = None,
    skip: int = 0,
    limit: int | None = None,
) -> Iterator[ByteChunk]:
    """Yield chunks holding whole ``record_size``-byte records; a trailing partial record is an error.

    ``skip`` leading bytes (a header the caller has already read with :func:`read_head`) are read
    past first, so ``.zst`` files need no seek; chunk offsets stay offsets in the whole file.
    """
    chunk_bytes = chunk_bytes or BINARY_CHUNK_BYTES
    chunk_bytes = max(chunk_bytes - chunk_bytes % record_size, record_size)
    offset = 0
    guard = MemoryGuard(path, limit)
    with open_binary(path, progress) as f:
        while offset < skip:
            got = len(f.read(min(skip - offset, chunk_bytes)))
            if not got:
                raise TraceError(f"{path}: file ends at byte offset {offset}, inside its {skip}-byte header")
            offset += got
        while True:
            try:
                data = f.read(chunk_bytes)
                # a decompressing reader may return short reads before EOF: top up to whole records.
                while data and len(data) % record_size:
                    more = f.read(record_size - len(data) % record_size)
                    if not more:
                        break
                    data += more
            except Exception as e:
                if decompression_error(e):
                    raise stream_error(path, f"near byte offset {offset}", e) from None
                raise
            if not data:
                return
            if len(data) % record_size:
                whole = len(data) - len(data) % record_size
                raise TraceError(
                    f"{path}: truncated record at byte offset {offset + whole}: "
                    f"{len(data) - whole} trailing bytes, records are {record_size} bytes"
                )
            guard.add(len(data) // record_size)
            yield ByteChunk(offset, data)
            offset += len(data)
