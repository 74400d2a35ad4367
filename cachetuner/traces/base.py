"""The trace-reader extension point: a small Protocol and a name registry.

Adding a format is one reader object plus ``register_format(reader)``; ``read_trace``,
``--format`` and ``cachetuner trace formats`` pick it up from :data:`FORMATS`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, ValidationError

from cachetuner.errors import TraceError, UnknownTraceNameError
from cachetuner.registry import Registry
from cachetuner.traces.assemble import ReadOptions
from cachetuner.traces.trace import Trace


@runtime_checkable
class TraceReader(Protocol):
    """One trace file format.

    Attributes:
        name: the ``--format`` name.
        extensions: file-name endings (without a compression suffix such as ``.zst``) that identify the format unambiguously;
            empty when the extension is shared with other formats.
        description: one line for ``cachetuner trace formats``.
    """

    @property
    def name(self) -> str: ...

    @property
    def extensions(self) -> tuple[str, ...]: ...

    @property
    def description(self) -> str: ...

    def sniff(self, head: bytes) -> bool:
        """True only when the first decompressed bytes identify this format beyond doubt."""
        ...

    def read(self, path: Path, opts: ReadOptions) -> Trace:
        """Parse ``path`` (possibly compressed: zstd, gzip, xz, bzip2) into a Trace; malformed input raises a one-line TraceError."""
        ...


class NoParams(BaseModel):
    """Readers without options reject every ``params`` key."""

    model_config = ConfigDict(extra="forbid")


def validate_params(model: type[BaseModel], params: dict, source: str) -> BaseModel:
    """Validate reader/workload params; a bad one gives a one-line TraceError naming it."""
    try:
        return model.model_validate(params)
    except ValidationError as e:
        first = e.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        msg = "unknown parameter" if first.get("type") == "extra_forbidden" else first["msg"]
        msg = msg.removeprefix("Value error, ")
        if not loc:  # a check across several params: the message names them
            raise TraceError(f"{source}: {msg}") from None
        valid = ", ".join(model.model_fields) or "none"
        raise TraceError(f"{source}: param '{loc}': {msg} (valid params: {valid})") from None


#: ``--format`` name -> reader.
FORMATS: Registry[TraceReader] = Registry("trace format", error=UnknownTraceNameError)


def register_format(reader: TraceReader) -> TraceReader:
    FORMATS.add(reader.name, reader)
    return reader


def get_reader(name: str) -> TraceReader:
    """The reader for ``--format name``; an unknown name raises a one-line ``UnknownTraceNameError``
    (a ``TraceError`` and a ``ConfigError``) listing the valid formats."""
    return FORMATS.get(name)


def list_formats() -> list[str]:
    """File formats by name, plus ``synthetic`` (use ``synthetic:NAME``)."""
    return sorted(FORMATS)
