"""Small traces shipped inside the package (see ``cachetuner/data/README.md`` for origin and licence)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from cachetuner.errors import TraceError, UnknownTraceNameError
from cachetuner.registry import Registry

#: ``bundled:NAME`` -> (file in cachetuner/data, --format)
BUNDLED_TRACES: Registry[tuple[str, str]] = Registry("bundled trace", error=UnknownTraceNameError)
BUNDLED_TRACES.add("web07", ("web07-50k.trace", "raw-be-i4"))
BUNDLED_TRACES.add("web12", ("web12-50k.trace", "raw-be-i4"))


def bundled_trace_path(name: str = "web07") -> Path:
    """Path of a bundled trace file (read it with ``read_trace(path, bundled_trace_format(name))``)."""
    filename, _fmt = BUNDLED_TRACES.get(name)
    path = Path(str(resources.files("cachetuner.data").joinpath(filename)))
    if not path.is_file():
        raise TraceError(f"bundled trace {name!r} missing at {path} (broken install)")
    return path


def bundled_trace_format(name: str = "web07") -> str:
    return BUNDLED_TRACES.get(name)[1]
