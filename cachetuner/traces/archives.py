"""One trace file inside a tar or zip archive, streamed as if it had been extracted.

Public traces are sometimes shipped as archives (``trace.tar.gz``, ``trace.zip``). Read without this module, an
archive's headers would be parsed as trace records: a raw key file (no magic number, any bytes are keys) would load
tar's 512-byte headers and zip's local headers as keys without any error. So an archive is recognised by its
magic (zip's local-header signature; tar's ``ustar`` at byte 257 of the decompressed stream), whatever its name,
and the one trace file in it is read. An archive of several files is refused with a line naming them: which one
is the trace is the user's call, not a guess. Archive clutter (directories, macOS's ``__MACOSX/`` and ``._*``
resource forks) is not counted.

:mod:`cachetuner.traces.streams` applies the decompression around it (a ``.tar.gz`` is gzip, then tar) and once
more to the member (a zip of a ``.zst`` file).
"""

from __future__ import annotations

import io
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, BinaryIO

from cachetuner.errors import TraceError

#: a zip archive's first bytes: a local file header, or the end-of-central-directory record of an empty archive
ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06")
#: tar's POSIX and GNU header magic ("ustar\x0000" / "ustar  \x00") start at this byte of each 512-byte header
TAR_MAGIC_OFFSET = 257
TAR_HEADER_BYTES = 512
#: file-name endings of archives (after a compression suffix is stripped: ``x.tar.gz`` -> ``x.tar``)
ARCHIVE_SUFFIXES = (".tar", ".tgz", ".txz", ".tbz2", ".tbz", ".zip")


@dataclass(frozen=True)
class Member:
    """The archive a trace was read from (``tar`` or ``zip``) and the name of the file in it."""

    archive: str
    name: str


#: zip compression methods (stored, deflate, deflate64, bzip2, lzma, zstd, xz, ppmd): a local header names one of them
ZIP_METHODS = frozenset({0, 8, 9, 12, 14, 93, 95, 98})


def is_zip(head: bytes) -> bool:
    """A zip archive's first (64) bytes: a local file header with a real "version needed" (1.0-6.3) and compression
    method and a file name without NUL bytes, or an empty archive's end record. More than the 4-byte signature, as
    for gzip (:mod:`cachetuner.traces.streams`): a raw key file is arbitrary bytes, and one whose first key spells
    the signature is keys, not an archive (its next keys would also have to spell a version, a method and a name)."""
    if head[:4] == ZIP_MAGICS[1]:
        return head[4:8] == b"\x00\x00\x00\x00"  # an empty archive: disk numbers 0
    if head[:4] != ZIP_MAGICS[0] or len(head) < 31 or not 10 <= head[4] <= 63:
        return False
    name_len = int.from_bytes(head[26:28], "little")
    return int.from_bytes(head[8:10], "little") in ZIP_METHODS and name_len > 0 and b"\x00" not in head[30 : 30 + name_len]


def is_tar(head: bytes) -> bool:
    """A tar header: ``ustar`` at byte 257 and a header checksum that adds up (the sum of its 512 bytes with the
    checksum field read as spaces), so that no other data is taken for one by chance."""
    if len(head) < TAR_HEADER_BYTES or head[TAR_MAGIC_OFFSET : TAR_MAGIC_OFFSET + 5] != b"ustar":
        return False
    try:
        stored = int(head[148:156].split(b"\x00", 1)[0].strip() or b"-1", 8)
    except ValueError:
        return False
    rest = head[:148] + b" " * 8 + head[156:TAR_HEADER_BYTES]
    return stored in (sum(rest), sum(b - 256 if b > 127 else b for b in rest))  # unsigned, or old tars' signed sum


def _clutter(name: str) -> bool:
    """Entries that archivers add beside the data: macOS's resource forks (``__MACOSX/``, ``._name``)."""
    p = PurePosixPath(name)
    return p.parts[:1] == ("__MACOSX",) or p.name.startswith("._")


def _several(path: Path, kind: str, names: list[str]) -> TraceError:
    shown = ", ".join(repr(n) for n in names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    return TraceError(f"{path}: a {kind} archive of {len(names)} files ({shown}); extract the trace file and pass "
                      "that file")


class _Prefixed(io.RawIOBase):
    """``prefix`` (bytes already read from ``stream``), then the rest of ``stream``."""

    def __init__(self, prefix: bytes, stream: IO[bytes]) -> None:
        self._prefix = memoryview(prefix)
        self._stream = stream

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:  # type: ignore[no-untyped-def]
        if self._prefix:
            n = min(len(b), len(self._prefix))
            b[:n] = self._prefix[:n]
            self._prefix = self._prefix[n:]
            return n
        return self._stream.readinto(b)  # type: ignore[attr-defined]

    def close(self) -> None:
        self._stream.close()
        super().close()


class _TarMember(io.RawIOBase):
    """The data of one member of a streamed tar; at its end, another file in the archive is an error (the streamed
    archive's listing is known only once the member before has been read)."""

    def __init__(self, path: Path, tar: tarfile.TarFile, first: tarfile.TarInfo, outer: IO[bytes]) -> None:
        self._path, self._tar, self._first, self._outer = path, tar, first, outer
        data = tar.extractfile(first)
        assert data is not None  # a regular file member always has data
        self._data = data
        self._checked = False

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:  # type: ignore[no-untyped-def]
        n = self._data.readinto(b)  # type: ignore[attr-defined]
        if not n and not self._checked:
            self._checked = True
            rest = [m.name for m in _files(self._path, self._tar)]
            if rest:
                raise _several(self._path, "tar", [self._first.name, *rest])
        return n or 0

    def close(self) -> None:
        self._tar.close()
        self._outer.close()
        super().close()


def _files(path: Path, tar: tarfile.TarFile):  # noqa: ANN202 (a generator of TarInfo)
    """The regular, non-clutter members still ahead in a streamed ``tar``."""
    try:
        while (m := tar.next()) is not None:
            if m.isfile() and not _clutter(m.name):
                yield m
    except tarfile.TarError as e:
        raise TraceError(f"{path}: cannot read the tar archive ({e})") from None


def untar(path: Path, stream: IO[bytes]) -> tuple[BinaryIO, Member | None]:
    """``stream`` (decompressed bytes) as it is, or, when it is a tar archive, the data of the one file in it."""
    head = b""
    while len(head) < TAR_HEADER_BYTES:
        more = stream.read(TAR_HEADER_BYTES - len(head))
        if not more:
            break
        head += more
    rest = io.BufferedReader(_Prefixed(head, stream), buffer_size=1 << 20)
    if not is_tar(head):
        return rest, None  # type: ignore[return-value]
    tar = tarfile.open(fileobj=rest, mode="r|")  # noqa: SIM115 (closed by the member's reader)
    first = next(_files(path, tar), None)
    if first is None:
        tar.close()
        raise TraceError(f"{path}: a tar archive with no file in it")
    member = io.BufferedReader(_TarMember(path, tar, first, rest), buffer_size=1 << 20)
    return member, Member("tar", first.name)  # type: ignore[return-value]


class _ZipMember(io.RawIOBase):
    """A zip member's data; closing it closes the archive."""

    def __init__(self, zf: zipfile.ZipFile, data: IO[bytes]) -> None:
        self._zf, self._data = zf, data

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:  # type: ignore[no-untyped-def]
        return self._data.readinto(b)  # type: ignore[attr-defined]

    def close(self) -> None:
        self._data.close()
        self._zf.close()
        super().close()


def unzip(path: Path, fileobj: IO[bytes]) -> tuple[BinaryIO, Member]:
    """The data of the one file in the zip archive ``fileobj`` (seekable: zip's listing is at its end)."""
    try:
        zf = zipfile.ZipFile(fileobj)
    except (zipfile.BadZipFile, OSError, EOFError) as e:
        raise TraceError(f"{path}: cannot read the zip archive ({e})") from None
    names = [i.filename for i in zf.infolist() if not i.is_dir() and not _clutter(i.filename)]
    if len(names) != 1:
        zf.close()
        if not names:
            raise TraceError(f"{path}: a zip archive with no file in it")
        raise _several(path, "zip", names)
    try:
        data = zf.open(names[0])
    except (RuntimeError, NotImplementedError, zipfile.BadZipFile) as e:  # encrypted, or an unsupported method
        zf.close()
        raise TraceError(f"{path}: cannot read {names[0]!r} in the zip archive ({e})") from None
    return io.BufferedReader(_ZipMember(zf, data), buffer_size=1 << 20), Member("zip", names[0])  # type: ignore[return-value]
