"""Reply accounting of the replayer: one batch's replies -> counts, read-through fills and stream entries.

A GET that misses on a read-through trace is filled (``SET`` of its trace size and TTL) at the head of
the next batch; a sampled request (:mod:`.sampling`) adds one ``XADD`` there too. The counts of a batch
go to :class:`~.replay_metrics.BatchCounters` and to the :class:`~.replay.ReplayResult` in one step.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from itertools import compress, repeat
from typing import NamedTuple

import hiredis

from cachetuner.live.replay_encoding import Column, is_oom
from cachetuner.traces.trace import Op


class BatchCounts(NamedTuple):
    """What one batch's requests did (``fills``: read-through SETs queued for the next batch)."""

    gets: int
    sets: int
    deletes: int
    hits: int
    misses: int
    fills: int
    rejected: int
    errors: int
    requested_bytes: int
    hit_bytes: int


def write_errors(replies: Sequence[object]) -> tuple[int, int]:
    """(OOM refusals, other error replies) among the replies of SETs."""
    rejected = errors = 0
    for r in replies:
        if isinstance(r, hiredis.ReplyError):
            if is_oom(r):
                rejected += 1
            else:
                errors += 1
    return rejected, errors


class ReplyAccountant:
    """Accounts the replies of a batch's trace requests against the trace columns.

    ``all_gets`` (read-only GET trace, the common replay) takes the fast path: the per-reply work runs in
    C (misses found with ``list.index(None)``, hits counted with ``isinstance`` over the batch); only
    misses (and errors, rare) are touched from Python.
    """

    #: ``account(reps, batch_idx, fills, xadds)``: the counts of the requests ``batch_idx`` from their
    #: replies ``reps``; appends read-through fills to ``fills`` and stream entries to ``xadds``.
    account: Callable[[list, list[int], list[bytes], list[bytes]], BatchCounts]

    def __init__(
        self,
        keys: Column,
        sizes: Column,
        ops: Column,
        ttls: Column,
        *,
        read_only: bool,
        all_gets: bool,
        uniform_size: int | None,
        sampled: list[bool] | None,
        encode_set: Callable[[int, int, float], bytes],
        stream_entry: Callable[[int, int, int, float, float, int], bytes],
    ) -> None:
        self.keys, self.sizes, self.ops, self.ttls = keys, sizes, ops, ttls
        self.read_only, self.uniform_size, self.sampled = read_only, uniform_size, sampled
        self.enc_set, self.xadd = encode_set, stream_entry
        self.account = self._account_gets if all_gets else self._account_mixed

    def _account_gets(self, reps: list, batch_idx: list[int], fills: list[bytes], xadds: list[bytes]) -> BatchCounts:
        sizes, ttls, keys, enc_set, fills_append = self.sizes, self.ttls, self.keys, self.enc_set, fills.append
        n_req = len(batch_idx)
        uniform_size = self.uniform_size
        b_req = uniform_size * n_req if uniform_size is not None else sum(map(sizes.__getitem__, batch_idx))
        b_hit = b_req
        n_miss = reps.count(None)
        n_hit = sum(map(isinstance, reps, repeat(bytes)))
        pos = -1
        for _ in range(n_miss):
            pos = reps.index(None, pos + 1)
            idx = batch_idx[pos]
            sz = sizes[idx]
            b_hit -= sz
            fills_append(enc_set(keys[idx], sz, ttls[idx]))
        n_err = n_req - n_miss - n_hit
        if n_err:
            for idx, r in zip(batch_idx, reps, strict=True):
                if r is not None and r.__class__ is not bytes:
                    b_hit -= sizes[idx]
        sampled = self.sampled
        if sampled is not None:
            wall = time.time()
            xadd, xadds_append, get_op = self.xadd, xadds.append, int(Op.GET)
            for pos in compress(range(n_req), map(sampled.__getitem__, batch_idx)):
                idx = batch_idx[pos]
                hit = 1 if reps[pos].__class__ is bytes else 0
                xadds_append(xadd(keys[idx], sizes[idx], get_op, wall, ttls[idx], hit))
        return BatchCounts(n_req, 0, 0, n_hit, n_miss, n_miss, 0, n_err, b_req, b_hit)

    def _account_mixed(self, reps: list, batch_idx: list[int], fills: list[bytes], xadds: list[bytes]) -> BatchCounts:
        sizes, ttls, keys, ops, enc_set = self.sizes, self.ttls, self.keys, self.ops, self.enc_set
        read_only, sampled, xadd = self.read_only, self.sampled, self.xadd
        get_op, set_op = int(Op.GET), int(Op.SET)
        c_get = c_set = c_del = c_hit = c_miss = c_fill = c_rej = c_err = 0
        b_req = b_hit = 0
        wall = time.time()
        for idx, r in zip(batch_idx, reps, strict=True):
            op = ops[idx]
            k = keys[idx]
            hit = 0
            if op == get_op:
                c_get += 1
                sz = sizes[idx]
                b_req += sz
                if isinstance(r, hiredis.ReplyError):
                    c_err += 1
                elif r is None:
                    c_miss += 1
                    if read_only:
                        fills.append(enc_set(k, sz, ttls[idx]))
                        c_fill += 1
                else:
                    c_hit += 1
                    b_hit += sz
                    hit = 1
            elif op == set_op:
                c_set += 1
                if isinstance(r, hiredis.ReplyError):
                    if is_oom(r):
                        c_rej += 1
                    else:
                        c_err += 1
            else:
                c_del += 1
                if isinstance(r, hiredis.ReplyError):
                    c_err += 1
            if sampled is not None and sampled[idx]:
                xadds.append(xadd(k, sizes[idx], op, wall, ttls[idx], hit))
        return BatchCounts(c_get, c_set, c_del, c_hit, c_miss, c_fill, c_rej, c_err, b_req, b_hit)
