"""The memory guards: what the process may still allocate (``cachetuner.resources``: MemAvailable and a container's
cgroup), and the simulator stopping with one line before a state for too many distinct keys is allocated.

The machine cannot be made smaller for a test, so the guard is shown two ways: with the memory available set by
hand (the arithmetic, and the CLI's one-line error through the real command on a real trace), and on real
``/proc/meminfo`` and cgroup files written into a directory (the parsing)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import cachetuner.sim.simulator as simulator
from cachetuner.errors import BackendError
from cachetuner.resources import cgroup_headroom, format_bytes, memory_available
from cachetuner.sim.simulator import TieredCacheSim, ensure_state_fits
from cachetuner.sim.state import new_state, state_bytes_per_key


def test_state_bytes_per_key_counts_every_per_key_array() -> None:
    n = 1 << 16
    total = sum(a.nbytes for a in new_state(n, np.zeros(n, dtype=np.int64), 1, 1.0, 0))
    per_key = state_bytes_per_key()
    assert 100 <= per_key <= 400  # ~150 B today: a budget, not a constant to keep
    assert per_key * n <= total <= per_key * n + (1 << 20)  # the fixed part (pool, clients, tables) is small


def test_the_guard_stops_a_state_that_would_not_fit_and_names_limit() -> None:
    n = 4_000_000  # ~0.6 GiB of state
    need = n * state_bytes_per_key()
    with pytest.raises(BackendError) as e:
        ensure_state_fits(n, available=need)  # only 80 % of it may go to one state
    msg = str(e.value)
    assert "simulating 4,000,000 distinct keys needs ~583.6 MiB" in msg and "--limit" in msg and "\n" not in msg
    ensure_state_fits(n, available=2 * need)  # fits
    ensure_state_fits(1000, available=1)  # tiny states are never checked: they cannot exhaust a machine


def test_the_simulator_and_its_forks_are_guarded(monkeypatch: pytest.MonkeyPatch) -> None:
    sim = TieredCacheSim(10_000)
    monkeypatch.setattr(simulator, "SIM_CHECK_FROM_BYTES", 0)
    monkeypatch.setattr(simulator, "memory_available", lambda: 1 << 20)  # 1 MiB: 10k keys need ~1.5 MiB
    with pytest.raises(BackendError, match="simulating 10,000 distinct keys"):
        TieredCacheSim(10_000)
    with pytest.raises(BackendError, match="simulating 10,000 distinct keys"):
        sim.clone()  # best-static and dp-hindsight fork the state once per candidate
    monkeypatch.setattr(simulator, "memory_available", lambda: None)  # not known (not Linux): no guard
    assert sim.clone().n_keys == 10_000


def test_simulate_on_a_machine_too_small_for_the_trace_is_one_line() -> None:
    """The real entry point on a real bundled trace (16,572 distinct keys, ~2.4 MiB of state) in a process told it
    has 2 MiB."""
    boot = ("import cachetuner.sim.simulator as s; s.SIM_CHECK_FROM_BYTES = 0; s.memory_available = lambda: 2 << 20; "
            "from cachetuner.cli.main import main; main()")
    p = subprocess.run([sys.executable, "-c", boot, "simulate", "--trace", "bundled:web07", "--json"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 2, p.stderr
    line = p.stderr.strip()
    assert line.startswith("error: simulating 16,572 distinct keys needs ~2.4 MiB for one simulated cache"), line
    assert "of the 2.0 MiB of memory available here" in line and "--limit" in line and "\n" not in line
    assert p.stdout == ""


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_memory_available_is_the_lower_of_meminfo_and_the_cgroup(tmp_path: Path) -> None:
    """The mount's own files (the real /proc/self/cgroup's path is not under these directories: its levels are
    skipped)."""
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       24000000 kB\nMemFree:         1000000 kB\nMemAvailable:   20000000 kB\n")
    host = 20_000_000 * 1024
    none = tmp_path / "no-cgroup"
    assert memory_available(meminfo, none) == host  # no cgroup files: the host's figure
    v2 = _write(tmp_path / "v2", {"memory.max": "4294967296\n", "memory.current": "1073741824\n"})
    assert cgroup_headroom(v2) == 3 << 30
    assert memory_available(meminfo, v2) == 3 << 30  # a 4 GiB container on a bigger host
    unlimited = _write(tmp_path / "v2max", {"memory.max": "max\n", "memory.current": "1073741824\n"})
    assert cgroup_headroom(unlimited) is None and memory_available(meminfo, unlimited) == host
    v1 = _write(tmp_path / "v1", {"memory/memory.limit_in_bytes": "2147483648\n",
                                  "memory/memory.usage_in_bytes": "3221225472\n"})
    assert cgroup_headroom(v1) == 0  # over its limit already (page cache counts): nothing left
    v1_unlimited = _write(tmp_path / "v1u", {"memory/memory.limit_in_bytes": "9223372036854771712\n",
                                             "memory/memory.usage_in_bytes": "1\n"})
    assert cgroup_headroom(v1_unlimited) is None
    assert memory_available(tmp_path / "missing", v2) == 3 << 30 and memory_available(tmp_path / "x", none) is None


def test_the_process_own_cgroup_and_every_level_above_it_count(tmp_path: Path) -> None:
    """A limited systemd slice on a host (v2) and a v1 container without a cgroup namespace: the path comes from
    /proc/self/cgroup, the tightest level on the way up wins, levels not mounted here are skipped."""
    gib = 1 << 30
    v2 = _write(tmp_path / "v2", {
        "memory.max": "max\n", "memory.current": f"{10 * gib}\n",  # the root: no limit
        "app.slice/memory.max": f"{8 * gib}\n", "app.slice/memory.current": f"{7 * gib}\n",  # 1 GiB left
        "app.slice/job.service/memory.max": f"{4 * gib}\n", "app.slice/job.service/memory.current": f"{gib}\n",
    })
    own = _write(tmp_path / "self-v2", {"cgroup": "0::/app.slice/job.service\n"}) / "cgroup"
    assert cgroup_headroom(v2, own) == gib  # the slice above the service is the tighter
    leaf = _write(tmp_path / "self-leaf", {"cgroup": "0::/app.slice\n"}) / "cgroup"
    assert cgroup_headroom(v2, leaf) == gib
    root_only = _write(tmp_path / "self-root", {"cgroup": "0::/\n"}) / "cgroup"
    assert cgroup_headroom(v2, root_only) is None  # a process at the root: no limit anywhere
    v1 = _write(tmp_path / "v1", {
        "memory/memory.limit_in_bytes": "9223372036854771712\n", "memory/memory.usage_in_bytes": "5\n",
        "memory/box/memory.limit_in_bytes": f"{2 * gib}\n", "memory/box/memory.usage_in_bytes": f"{gib // 2}\n",
    })
    own_v1 = _write(tmp_path / "self-v1", {"cgroup": "12:pids:/\n4:memory:/box\n1:name=systemd:/\n"}) / "cgroup"
    assert cgroup_headroom(v1, own_v1) == gib + gib // 2
    hidden = _write(tmp_path / "self-hidden", {"cgroup": "4:cpu,memory:/not/mounted/here\n"}) / "cgroup"
    assert cgroup_headroom(v1, hidden) is None  # only the unlimited root is visible
    meminfo = _write(tmp_path / "mi", {"meminfo": "MemAvailable:   20000000 kB\n"}) / "meminfo"
    assert memory_available(meminfo, v2, own) == gib
    assert cgroup_headroom(v2, tmp_path / "no-such-file") is None  # unreadable: the mount's root alone


def test_format_bytes() -> None:
    assert [format_bytes(n) for n in (512, 2.5 * 2**20, 3 << 30)] == ["512 B", "2.5 MiB", "3.0 GiB"]


def test_this_machine_reports_some_memory() -> None:
    """On the Linux machines CI runs on, the guards are live (a None here would switch them off silently)."""
    avail = memory_available()
    assert avail is not None and avail > 64 << 20
