"""Traffic for the live tests that need a workload running while they look (the daemon's tests)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

from cachetuner.live.replay import ReplayOptions, replay
from cachetuner.live.stack import LocalStack
from cachetuner.traces.trace import Trace


@contextlib.contextmanager
def replaying(stack: LocalStack, trace: Trace, opts: ReplayOptions) -> Iterator[None]:
    """The replayer sending ``trace`` into the stack's Redis in a background thread for the block's duration (it has
    sent its first batch when the block starts); its error, if any, fails the test."""
    stop, started = threading.Event(), threading.Event()
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["result"] = replay(trace, stack.redis_url, opts, stop=stop, progress=lambda _n: started.set())
        except Exception as e:  # noqa: BLE001 (asserted below)
            out["error"] = e
        finally:
            started.set()

    worker = threading.Thread(target=run, name="test-replay", daemon=True)
    worker.start()
    assert started.wait(60) and "error" not in out, out.get("error")
    try:
        yield
    finally:
        stop.set()
        worker.join(30)
    assert "error" not in out, out.get("error")
