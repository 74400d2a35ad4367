"""Free loopback ports for the processes CacheTuner starts itself (the live stack, Triton, test fixtures)."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A loopback TCP port that was free a moment ago (bind to port 0). Another process may take it before
    the caller binds it: callers that start a server retry on a new port (``LocalStack.up`` does)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


__all__ = ["free_port"]
