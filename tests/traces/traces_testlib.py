"""Helpers shared by the trace tests."""

from __future__ import annotations

import pytest

from cachetuner.errors import TraceError


def one_line_error(fn, *args, **kw) -> str:
    """The TraceError ``fn(*args, **kw)`` raises, checked to be one non-empty line."""
    with pytest.raises(TraceError) as info:
        fn(*args, **kw)
    msg = str(info.value)
    assert "\n" not in msg and msg
    return msg
