"""Follow the replayer's sampled-request stream while it is written, so that no interval loses it.

Why: the stream is a key in the Redis being tuned (``{prefix}sampled``), so under an ``allkeys-*``
policy Redis may evict it like any other key. With Redis's one-second LRU clock and a small cache
that turns over in seconds, the stream's idle time ties with many keys'. An eviction drops every
entry not yet read; XADD then starts a new stream. Reading the whole interval once at its end
therefore lost it whenever the stream was evicted in between (a live shadow A/B saw 16 sampled keys of
~2,000 in one CI run). Polling with ``XRANGE`` from the last id read every ``poll_s`` loses at most
the entries written since the last poll. ``XRANGE`` only, not ``XREAD``, and no trimming: the
least-privileged daemon user may run ``XRANGE`` on the stream and nothing else, and other readers may
share the stream.

Each poll is a read of the Redis being measured: Redis counts it as a keyspace hit (the stream exists)
or miss, four a second. :meth:`StreamTail.own_reads` says how many fell in a window, so that the
snapshot's hits and misses can be the application's alone (:meth:`LiveRedisBackend.read`).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import deque
from collections.abc import Iterable
from typing import Any

from cachetuner.live.resp import redis_client


def count_reads(reads: Iterable[tuple[float, bool]], start_s: float, end_s: float) -> tuple[int, int]:
    """Of ``(time, a keyspace hit)`` reads, the (hits, misses) whose time lies in ``[start_s, end_s)``."""
    hits = misses = 0
    for t, hit in reads:
        if start_s <= t < end_s:
            hits, misses = (hits + 1, misses) if hit else (hits, misses + 1)
    return hits, misses


def _ms(entry_id: Any) -> int:
    raw = entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id)
    return int(raw.split("-", 1)[0])


class StreamTail:
    """Entries of one stream, read every ``poll_s`` by a daemon thread and kept for ``retention_s``."""

    def __init__(self, redis_url: str, key: str, *, poll_s: float = 0.25, retention_s: float = 120.0) -> None:
        self.key, self.poll_s, self.retention_s = key, float(poll_s), float(retention_s)
        self._r = redis_client(redis_url, socket_timeout=5.0)
        self._entries: deque[tuple[int, Any]] = deque()
        self._last: str | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.reads_ok = 0  # successful polls (0: the tail has seen nothing; callers fall back)
        self._reads: deque[tuple[float, bool]] = deque()  # (time, a keyspace hit) of each poll Redis answered
        self._seen = False  # the stream has returned entries: an empty poll of it is taken as a hit (see own_reads)
        self._thread = threading.Thread(target=self._loop, name="stream-tail", daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        lo = "-" if self._last is None else f"({self._last}"
        got = self._r.xrange(self.key, min=lo, max="+", count=50_000)
        now = time.time()
        cutoff = int((now - self.retention_s) * 1000)
        with self._lock:
            self._seen = self._seen or bool(got)
            self._reads.append((now, self._seen))
            while self._reads and self._reads[0][0] < now - self.retention_s:
                self._reads.popleft()
            for eid, fields in got:
                self._entries.append((_ms(eid), (eid, fields)))
            if got:
                last = got[-1][0]
                self._last = last.decode() if isinstance(last, bytes) else str(last)
            while self._entries and self._entries[0][0] < cutoff:
                self._entries.popleft()
            self.reads_ok += 1

    def _loop(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(Exception):  # Redis down or slow: the next poll retries; reads fall back
                self._poll()
            self._stop.wait(self.poll_s)

    def window(self, start_s: float, end_s: float) -> list:
        """Entries whose id time lies in ``[start_s, end_s)`` (Unix seconds), in stream order (raw bytes)."""
        lo, hi = int(start_s * 1000), int(end_s * 1000)
        with self._lock:
            return [e for ms, e in self._entries if lo <= ms < hi]

    def own_reads(self, start_s: float, end_s: float) -> tuple[int, int]:
        """The keyspace (hits, misses) the tail's polls added to the server's counters in ``[start_s, end_s)``.

        A poll that returned entries found the stream (a hit); before the first entries an empty poll found no
        stream (a miss). After them an empty poll is taken as a hit: the stream is gone only between an eviction
        and the next XADD (an approximation; an ``EXISTS`` to tell would itself be counted)."""
        with self._lock:
            return count_reads(self._reads, start_s, end_s)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=self.poll_s + 6.0)
        with contextlib.suppress(Exception):  # closing must not raise
            self._r.close()


__all__ = ["StreamTail", "count_reads"]
