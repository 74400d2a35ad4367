"""The keyspace (db.c): which keys are resident, with a TTL, and in exact-LRU order.

``dkeys`` / ``vkeys`` are dense swap-remove lists (O(1) uniform sampling; ``vkeys`` stands for
db->expires), the main dict is kept in step (:mod:`.dictmodel`), and the exact-LRU list is a doubly
linked list through the ``kv`` rows, maintained only under the simulator-only ``exact-lru`` policy.
"""

from __future__ import annotations

import numba as nb

from cachetuner.sim.kernel.clocks import lfu_decr_and_return, lfu_log_incr, lfu_minutes, lru_clock
from cachetuner.sim.kernel.common import _INLINE
from cachetuner.sim.kernel.dictmodel import dict_delete
from cachetuner.sim.policies import SCORE_LFU
from cachetuner.sim.slots import (
    I_DATA,
    I_HEAD,
    I_LISTED,
    I_NRES,
    I_NVOL,
    I_TAIL,
    KV_COST,
    KV_DPOS,
    KV_LRU,
    KV_NEXT,
    KV_PREV,
    KV_VPOS,
    P_LFU_DECAY,
    P_LFU_LOG,
    P_SCORE,
)


# ----------------------------------------------------------------------------- exact LRU list
@nb.njit(**_INLINE)
def list_unlink(S, k):
    kv = S.kv  # one struct field load (and reference count pair) instead of one per access
    ist = S.ist
    p = kv[k, KV_PREV]
    n = kv[k, KV_NEXT]
    if p >= 0:
        kv[p, KV_NEXT] = n
    else:
        ist[I_HEAD] = n
    if n >= 0:
        kv[n, KV_PREV] = p
    else:
        ist[I_TAIL] = p
    kv[k, KV_PREV] = -1
    kv[k, KV_NEXT] = -1


@nb.njit(**_INLINE)
def list_push_head(S, k):
    kv = S.kv
    ist = S.ist
    h = ist[I_HEAD]
    kv[k, KV_PREV] = -1
    kv[k, KV_NEXT] = h
    if h >= 0:
        kv[h, KV_PREV] = k
    else:
        ist[I_TAIL] = k
    ist[I_HEAD] = k


# ----------------------------------------------------------------------------- resident keys (db.c)
@nb.njit(**_INLINE)
def vol_add(S, k):
    if S.kv[k, KV_VPOS] < 0:
        n = S.ist[I_NVOL]
        S.vkeys[n] = k
        S.kv[k, KV_VPOS] = n
        S.ist[I_NVOL] = n + 1


@nb.njit(**_INLINE)
def vol_remove(S, k):
    i = S.kv[k, KV_VPOS]
    if i >= 0:
        last = S.ist[I_NVOL] - 1
        moved = S.vkeys[last]
        S.vkeys[i] = moved
        S.kv[moved, KV_VPOS] = i
        S.kv[k, KV_VPOS] = -1
        S.ist[I_NVOL] = last


@nb.njit(**_INLINE)
def remove_key(S, k):
    """dbDelete(): drop a resident key from every structure (not counted by itself)."""
    kv = S.kv
    ist = S.ist
    dkeys = S.dkeys
    i = kv[k, KV_DPOS]
    last = ist[I_NRES] - 1
    moved = dkeys[last]
    dkeys[i] = moved
    kv[moved, KV_DPOS] = i
    kv[k, KV_DPOS] = -1
    ist[I_NRES] = last
    dict_delete(S, k)
    if kv[k, KV_VPOS] >= 0:  # expire[] is only ever non-zero for resident TTL keys: no write otherwise
        vol_remove(S, k)
        S.expire[k] = 0.0
    ist[I_DATA] -= kv[k, KV_COST]
    kv[k, KV_COST] = 0
    if ist[I_LISTED]:
        list_unlink(S, k)


@nb.njit(**_INLINE)
def touch(S, k, now):
    """lookupKey() access update: LFU counter (updateLFU) or LRU clock; exact-LRU move to head."""
    if S.ipar[P_SCORE] == SCORE_LFU:
        c = lfu_decr_and_return(S.kv[k, KV_LRU], now, S.ipar[P_LFU_DECAY])
        c = lfu_log_incr(c, S.ipar[P_LFU_LOG], S.rng)
        S.kv[k, KV_LRU] = (lfu_minutes(now) << 8) | c
    else:
        S.kv[k, KV_LRU] = lru_clock(now)
    if S.ist[I_LISTED] and S.ist[I_HEAD] != k:
        list_unlink(S, k)
        list_push_head(S, k)
