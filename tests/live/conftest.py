"""Fixtures of the live-path tests: real redis-server / redis_exporter / prometheus on free loopback ports.

Every fixture starts processes through :class:`cachetuner.live.stack.LocalStack` (the launcher the CLI
uses) and checks, when it stops them, that none of the recorded PIDs is still alive.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from cachetuner.live.stack import LocalStack, pid_alive


def assert_all_gone(pids: dict[str, int]) -> None:
    alive = {name: pid for name, pid in pids.items() if pid_alive(pid)}
    assert not alive, f"processes left behind: {alive}"


@pytest.fixture(scope="session")
def live_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    """redis-server + redis_exporter + prometheus, shared by the backend / replay / live-eval tests."""
    stack = LocalStack(tmp_path_factory.mktemp("stack"), maxmemory=64 * 1024 * 1024)
    with stack:
        pids = dict(stack.info.pids)
        yield stack
    assert_all_gone(pids)


@pytest.fixture()
def redis_only(tmp_path: Path) -> Iterator[LocalStack]:
    """A fresh redis-server alone (tests that FLUSH or benchmark)."""
    stack = LocalStack(tmp_path / "redis", maxmemory=0, redis_only=True)
    with stack:
        pids = dict(stack.info.pids)
        yield stack
    assert_all_gone(pids)


@pytest.fixture()
def cli_env() -> dict[str, str]:
    """Environment for ``cachetuner`` subprocesses (the venv's entry point, one torch thread)."""
    return {**os.environ, "OMP_NUM_THREADS": "1"}
