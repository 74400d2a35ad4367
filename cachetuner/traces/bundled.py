"""Small traces shipped inside the package (see ``cachetuner/data/README.md`` for origin and licence)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from cachetuner.errors import TraceError

#: name -> (file in cachetuner/data, --format)
BUNDLED_TRACES: dict[str, tuple[str, str]] = {
    "web07": ("web07-50k.trace", "raw-be-i4"),
    "web12": ("web12-50k.trace", "raw-be-i4"),
}


def bundled_trace_path(name: str = "web07") -> Path:
    """Path of a bundled trace file (read it with ``read_trace(path, bundled_trace_format(name))``)."""
    if name not in BUNDLED_TRACES:
        raise TraceError(f"unknown bundled trace {name!r}; valid: {', '.join(BUNDLED_TRACES)}")
    path = Path(str(resources.files("cachetuner.data").joinpath(BUNDLED_TRACES[name][0])))
    if not path.is_file():
        raise TraceError(f"bundled trace {name!r} missing at {path} (broken install)")
    return path


def bundled_trace_format(name: str = "web07") -> str:
    if name not in BUNDLED_TRACES:
        raise TraceError(f"unknown bundled trace {name!r}; valid: {', '.join(BUNDLED_TRACES)}")
    return BUNDLED_TRACES[name][1]
