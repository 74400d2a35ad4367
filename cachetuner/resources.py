"""How much memory this process may still take, for the guards that stop a job with one line instead of the
kernel's OOM kill (a whole public trace read at once, a simulator sized for tens of millions of keys).

Two ceilings, the lower wins: the machine's ``MemAvailable`` (``/proc/meminfo``) and the headroom of this
process's memory cgroup (its limit minus what it already uses). A container sees the host's ``/proc/meminfo``, so
without the cgroup a 4 GiB container on a 64 GiB host would be told it has ~60 GiB. The cgroup is the one
``/proc/self/cgroup`` names, found under ``/sys/fs/cgroup``, and every cgroup above it up to the mount counts too
(a limit applies to everything below it, so the tightest level wins): that covers a container (its cgroup
namespace shows it at the mount's root), a limited systemd slice or service on a host, and a container without a
cgroup namespace whose path is not mounted inside it (then only the levels that are visible are read).
"""

from __future__ import annotations

from pathlib import Path

#: Where the cgroup file systems are mounted (v2 unified, or v1's memory controller).
CGROUP_ROOT = Path("/sys/fs/cgroup")
#: This process's cgroup paths, one line per hierarchy.
SELF_CGROUP = Path("/proc/self/cgroup")
#: Limits at or above this are "no limit" (cgroup v1 writes 2^63 rounded down to the page size).
_UNLIMITED = 1 << 60


def memory_available(
    meminfo: Path = Path("/proc/meminfo"), cgroup_root: Path = CGROUP_ROOT, self_cgroup: Path = SELF_CGROUP
) -> int | None:
    """Bytes this process may still allocate: the lower of ``MemAvailable`` and the cgroup's headroom; None where
    neither is known (not Linux), in which case the guards stand aside."""
    known = [b for b in (_meminfo_available(meminfo), cgroup_headroom(cgroup_root, self_cgroup)) if b is not None]
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


def cgroup_headroom(root: Path = CGROUP_ROOT, self_cgroup: Path = SELF_CGROUP) -> int | None:
    """The smallest headroom (memory limit minus current use) of this process's memory cgroup and of every cgroup
    above it, or None when none of them has a limit or the files cannot be read. v2: ``memory.max`` and
    ``memory.current`` under ``root``; v1: ``memory.limit_in_bytes`` and ``memory.usage_in_bytes`` under
    ``root/memory``. The process's cgroup is the path ``self_cgroup`` (``/proc/self/cgroup``) gives for the
    hierarchy; levels not mounted here are skipped."""
    v2_path, v1_path = _own_paths(self_cgroup)
    found = [h for h in (
        _headroom(root, v2_path, "memory.max", "memory.current"),
        _headroom(root / "memory", v1_path, "memory.limit_in_bytes", "memory.usage_in_bytes"),
    ) if h is not None]
    return min(found) if found else None


def _headroom(mount: Path, path: str, limit_file: str, usage_file: str) -> int | None:
    """The smallest ``limit - usage`` over ``mount/path`` and its ancestors up to ``mount``; None without a limit."""
    parts = [p for p in path.split("/") if p and p not in (".", "..")]
    best: int | None = None
    for depth in range(len(parts), -1, -1):
        d = mount.joinpath(*parts[:depth])
        limit, usage = _read_int(d / limit_file), _read_int(d / usage_file)
        if limit is not None and usage is not None and limit < _UNLIMITED:
            room = max(limit - usage, 0)
            best = room if best is None else min(best, room)
    return best


def _own_paths(self_cgroup: Path) -> tuple[str, str]:
    """``(v2 path, v1 memory path)`` of this process from ``/proc/self/cgroup`` (``/`` where not listed):
    v2's line is ``0::/path``, v1's memory line ``N:memory[,...]:/path``."""
    v2, v1 = "/", "/"
    try:
        lines = self_cgroup.read_text().splitlines()
    except OSError:
        return v2, v1
    for line in lines:
        fields = line.split(":", 2)
        if len(fields) != 3:
            continue
        hid, controllers, path = fields
        if hid == "0" and controllers == "":
            v2 = path or "/"
        elif "memory" in controllers.split(","):
            v1 = path or "/"
    return v2, v1


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
