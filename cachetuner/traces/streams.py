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

from cachetuner.errors import TraceError
from cachetuner.resources import format_bytes, memory_available
from cachetuner.traces.archives import ARCHIVE_SUFFIXES, Member, is_zip, untar, unzip

#: Called with (compressed bytes consumed so far, total file bytes) while reading.
ProgressFn = Callable[[int, int], None]

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
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
    """The compression a file's first (10) bytes announce (``zstd``, ``gzip``, ``xz``, ``bzip2``), or None.

    Why more than the two-byte gzip and three-byte bzip2 magic: a raw key file is arbitrary bytes, and one whose first
    key happens to start with ``1f 8b`` must not be taken for gzip. gzip also needs method 8 (deflate, the only one)
    and no reserved flag bit; bzip2 a block size digit and the first block's (or the empty stream's) magic."""
    if head[:4] == ZSTD_MAGIC:
        return "zstd"
    if head[:6] == XZ_MAGIC:
        return "xz"
    if head[:3] == b"\x1f\x8b\x08" and len(head) > 3 and not head[3] & 0xE0:
        return "gzip"
    if head[:3] == b"BZh" and len(head) >= 10 and 0x31 <= head[3] <= 0x39 and head[4:10] in (b"1AY&SY", b"\x17rE8P\x90"):
        return "bzip2"
    return None


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


def _decompressed(kind: str | None, buffered: BinaryIO) -> BinaryIO:
    if kind == "zstd":
        import zstandard

        return zstandard.ZstdDecompressor().stream_reader(buffered, read_size=1 << 20, closefd=True)  # type: ignore[return-value]
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
    kind = None if zipped else compression(head[:10])
    member: Member | None
    try:
        if zipped:
            data, member = unzip(path, buffered)  # type: ignore[arg-type]
        else:
            data, member = untar(path, _decompressed(kind, buffered))  # type: ignore[arg-type]
        if member is None:
            return data, Source(kind)
        inner = compression(data.peek(10)[:10])  # type: ignore[attr-defined]
        return _decompressed(inner, data), Source(kind, member, inner)
    except Exception as e:
        buffered.close()
        if decompression_error(e):
            what = " ".join(x for x in (kind, "tar" if isinstance(e, tarfile.TarError) else None) if x) or "zip"
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
            return compression(f.read(10))


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
                raise TraceError(f"{path}: cannot decompress the {compression_of(path)} stream ({e})") from None
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
                raise TraceError(f"{path}: corrupt {compression_of(path)} stream near line {line_no} ({e})") from None
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
                    raise TraceError(f"{path}: corrupt {compression_of(path)} stream near byte offset {offset} ({e})") from None
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
