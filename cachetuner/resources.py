"""How much memory this process may still take, for the guards that stop a job with one line instead of the
kernel's OOM kill (a whole public trace read at once, a simulator sized for tens of millions of keys).

Two ceilings, the lower wins: the machine's ``MemAvailable`` (``/proc/meminfo``) and, inside a container, the
cgroup's own limit minus what the cgroup already uses. A container sees the host's ``/proc/meminfo``, so without
the cgroup a 4 GiB container on a 64 GiB host would be told it has ~60 GiB. Only the cgroup mounted at
``/sys/fs/cgroup`` is read: a container's own (its cgroup namespace mounts it there); a process in a limited
systemd slice on a host is not seen (it would need the path in ``/proc/self/cgroup``).
"""

from __future__ import annotations

from pathlib import Path

#: Where the cgroup file systems are mounted (v2 unified, or v1's memory controller).
CGROUP_ROOT = Path("/sys/fs/cgroup")
#: Limits at or above this are "no limit" (cgroup v1 writes 2^63 rounded down to the page size).
_UNLIMITED = 1 << 60


def memory_available(meminfo: Path = Path("/proc/meminfo"), cgroup_root: Path = CGROUP_ROOT) -> int | None:
    """Bytes this process may still allocate: the lower of ``MemAvailable`` and the cgroup's headroom; None where
    neither is known (not Linux), in which case the guards stand aside."""
    known = [b for b in (_meminfo_available(meminfo), cgroup_headroom(cgroup_root)) if b is not None]
    return min(known) if known else None


def _meminfo_available(path: Path) -> int | None:
    try:
        with open(path) as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def cgroup_headroom(root: Path = CGROUP_ROOT) -> int | None:
    """The cgroup's memory limit minus its current use (v2: ``memory.max`` and ``memory.current``; v1:
    ``memory/memory.limit_in_bytes`` and ``memory/memory.usage_in_bytes``), or None when there is no limit or
    the files cannot be read. Reads the cgroup the files at ``root`` describe: inside a container that is the
    container's own (its namespace mounts it there)."""
    for limit_file, usage_file in (("memory.max", "memory.current"),
                                   ("memory/memory.limit_in_bytes", "memory/memory.usage_in_bytes")):
        limit, usage = _read_int(root / limit_file), _read_int(root / usage_file)
        if limit is not None and usage is not None and limit < _UNLIMITED:
            return max(limit - usage, 0)
    return None


def format_bytes(n: float) -> str:
    """``n`` bytes for a message: ``512 B``, ``2.5 MiB``, ``1.5 GiB``."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if abs(n) >= 1 << shift:
            return f"{n / (1 << shift):.1f} {unit}"
    return f"{int(n)} B"


def _read_int(path: Path) -> int | None:
    """The integer in a one-line cgroup file; None for ``max`` (no limit), a missing file or garbage."""
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


__all__ = ["memory_available", "cgroup_headroom", "format_bytes"]
