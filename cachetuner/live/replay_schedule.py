"""Scheduling of a replay: when a batch is due (:class:`Pacer`) and which requests it holds (:class:`BatchBuilder`).

A batch never contains the same key twice: a request whose key is already in the batch (or in a batch
still in flight) is deferred to the head of a later batch, with every later request of that key, or,
with ``exact_order``, the batch is cut before it. Deferred requests are per-key FIFOs under a heap of
their first trace index, so a batch takes them in trace order without rescanning the backlog.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from heapq import heappop, heappush

import numpy as np

from cachetuner.live.replay_encoding import Column


class Pacer:
    """Due times of batches: ``rate`` (request ``i`` at ``i / rate``), else trace timestamps ``speedup``
    times faster, else flat out (:attr:`flat_out`: every batch is due at once)."""

    def __init__(self, rate: float | None, speedup: float | None, timestamps: np.ndarray, start: int, t0: float) -> None:
        self.rate, self.speedup = rate, speedup
        self.flat_out = rate is None and speedup is None
        self.ts = timestamps
        self.last = len(timestamps) - 1
        self.ts0 = float(timestamps[start])
        self.t0 = t0
        self.loop_offset = 0.0

    def due(self, scheduled: int, i: int) -> float:
        """``perf_counter`` time at which the next batch is due; ``scheduled`` = requests replayed or in
        flight (rate pacing), ``i`` = the trace cursor (timestamp pacing). Not for :attr:`flat_out`."""
        if self.rate is not None:
            return self.t0 + scheduled / self.rate
        assert self.speedup is not None
        return self.t0 + (float(self.ts[min(i, self.last)]) - self.ts0 + self.loop_offset) / self.speedup

    def wrap(self) -> None:
        """The trace starts over (``loop``): its timestamps continue after the end of the last pass."""
        self.loop_offset += float(self.ts[-1] - self.ts0) + (1.0 / self.rate if self.rate else 0.0)


class BatchBuilder:
    """The trace cursor and the deferred requests; :meth:`fill` composes one batch."""

    def __init__(
        self,
        keys: Column,
        start: int,
        limit: int | None,
        *,
        exact_order: bool,
        all_gets: bool,
        get_table: list[bytes | None],
        encode_get: Callable[[int], bytes],
        encode_request: Callable[[int, int], bytes],
    ) -> None:
        self.keys = keys
        self.n = len(keys)
        self.start = start
        self.limit = limit
        self.exact_order = exact_order
        self.all_gets = all_gets
        self.get_table, self.encode_get, self.encode_request = get_table, encode_get, encode_request
        self.i = start   # next trace index to consume
        self.taken = 0   # requests consumed from the cursor (replayed or deferred)
        # Requests postponed because their key was already in the batch: a FIFO of trace indices per key,
        # and a heap of (first index, key) over the keys that have one. Taking the smallest heads is taking
        # the deferred requests in trace order, first occurrence of each key, without rescanning every
        # deferred request each batch (hot keys pile up thousands of them on skewed traces).
        self.groups: dict[int, deque[int]] = {}
        self.heap: list[tuple[int, int]] = []

    def limit_reached(self) -> bool:
        """``limit`` requests taken and none of them still deferred."""
        return self.limit is not None and self.taken >= self.limit and not self.heap

    def at_end(self) -> bool:
        """The cursor is past the trace and nothing is deferred."""
        return self.i >= self.n and not self.heap

    def rewind(self) -> None:
        self.i = self.start

    def defer(self, idx: int, k: int) -> None:
        grp = self.groups.get(k)
        if grp is None:
            self.groups[k] = deque((idx,))
            heappush(self.heap, (idx, k))
        else:
            grp.append(idx)

    def fill(self, cmds: list[bytes], room: int, busy: set[int] | None) -> tuple[list[int], set[int]]:
        """Append up to ``room`` requests with distinct keys, none in ``busy`` (the keys in flight), to
        ``cmds``: earlier-deferred ones first (trace order), then new ones from the cursor. Returns
        their trace indices and keys."""
        seen: set[int] = set()
        batch_idx: list[int] = []
        cmds_append, bidx_append, seen_add = cmds.append, batch_idx.append, seen.add
        encode_request = self.encode_request
        cnt = 0
        heap = self.heap
        if heap:
            groups = self.groups
            aside: list[tuple[int, int]] = []
            while heap and cnt < room:
                idx, k = heappop(heap)
                if busy is not None and k in busy:
                    aside.append((idx, k))
                    continue
                grp = groups[k]
                grp.popleft()
                seen_add(k)
                cmds_append(encode_request(idx, k))
                bidx_append(idx)
                cnt += 1
                if grp:
                    aside.append((grp[0], k))  # its next request waits for a later batch
                else:
                    del groups[k]
            for e in aside:
                heappush(heap, e)
        if cnt < room:
            # New requests [i, hi): at most 8 x room scanned per batch, never past `limit`.
            i, limit, keys, exact_order, defer = self.i, self.limit, self.keys, self.exact_order, self.defer
            hi = min(self.n, i + 8 * room)
            if limit is not None:
                hi = min(hi, i + limit - self.taken)
            end = hi
            if self.all_gets and busy is None:
                get_tbl, enc_get = self.get_table, self.encode_get
                for jj in range(i, hi):
                    k = keys[jj]
                    if k in seen:
                        if exact_order:  # cut the batch here; this request opens the next one
                            end = jj
                            break
                        defer(jj, k)
                        continue
                    seen_add(k)
                    c = get_tbl[k]
                    cmds_append(c if c is not None else enc_get(k))
                    bidx_append(jj)
                    cnt += 1
                    if cnt >= room:
                        end = jj + 1
                        break
            else:
                for jj in range(i, hi):
                    k = keys[jj]
                    if k in seen or (busy is not None and k in busy):
                        if exact_order:
                            end = jj
                            break
                        defer(jj, k)
                        continue
                    seen_add(k)
                    cmds_append(encode_request(jj, k))
                    bidx_append(jj)
                    cnt += 1
                    if cnt >= room:
                        end = jj + 1
                        break
            self.taken += end - i
            self.i = end
        return batch_idx, seen
