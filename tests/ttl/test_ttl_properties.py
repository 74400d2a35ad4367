"""Property tests: the vectorised causal features equal their definitions, written as plain loops."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cachetuner.ttl.outcomes import last_write_time
from cachetuner.ttl.policies import previous_access, recent_count, runs_before

small = st.lists(st.tuples(st.integers(0, 4), st.integers(0, 30), st.booleans()), min_size=1, max_size=60)


def _arrays(rows: list[tuple[int, int, bool]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    keys = np.array([r[0] for r in rows], dtype=np.int64)
    ts = np.cumsum([r[1] for r in rows]).astype(np.float64)  # non-decreasing times, ties allowed
    flags = np.array([r[2] for r in rows])
    return keys, ts, flags


@settings(max_examples=150, deadline=None)
@given(small, st.floats(0.5, 40.0))
def test_recent_count_previous_access_and_runs(rows: list[tuple[int, int, bool]], window: float) -> None:
    keys, ts, flags = _arrays(rows)
    n = len(keys)
    rc = [sum(1 for j in range(i) if keys[j] == keys[i] and ts[j] >= ts[i] - window) for i in range(n)]
    assert recent_count(keys, ts, window).tolist() == rc
    prev = [max((ts[j] for j in range(i) if keys[j] == keys[i]), default=-np.inf) for i in range(n)]
    assert previous_access(keys, ts).tolist() == prev
    runs = []
    for i in range(n):
        r = 0
        for j in range(i - 1, -1, -1):
            if keys[j] != keys[i]:
                continue
            if not flags[j]:
                break
            r += 1
        runs.append(r)
    assert runs_before(keys, flags).tolist() == runs


@settings(max_examples=150, deadline=None)
@given(small)
def test_last_write_time(rows: list[tuple[int, int, bool]]) -> None:
    keys, ts, written = _arrays(rows)
    want = [max((ts[j] for j in range(i + 1) if keys[j] == keys[i] and written[j]), default=np.nan) for i in range(len(keys))]
    np.testing.assert_array_equal(last_write_time(keys, ts, written), np.array(want))
