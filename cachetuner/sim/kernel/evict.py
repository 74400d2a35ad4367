"""Eviction (evict.c): candidate scoring, the 16-entry eviction pool, victim choice, performEvictions()."""

from __future__ import annotations

import numba as nb

from cachetuner.sim.kernel.clocks import (
    LRU_CLOCK_MAX,
    LRU_CLOCK_RESOLUTION_MS,
    lfu_decr_and_return,
    lru_clock,
    lru_idle_ms,
)
from cachetuner.sim.kernel.common import _INLINE, _JIT, rng_below, used_memory
from cachetuner.sim.kernel.dictmodel import dict_get_some_keys, dict_random_key
from cachetuner.sim.kernel.keyspace import remove_key
from cachetuner.sim.kernel.l2 import l2_insert
from cachetuner.sim.policies import (
    KEYS_NONE,
    KEYS_VOLATILE,
    SCORE_EXACT_LRU,
    SCORE_LFU,
    SCORE_LRU,
    SCORE_RANDOM,
    SCORE_TTL,
)
from cachetuner.sim.slots import (
    C_EVICT,
    EVPOOL_SIZE,
    I_NRES,
    I_NVOL,
    I_TAIL,
    KV_DPOS,
    KV_LRU,
    KV_VPOS,
    KV_VSIZE,
    P_DICT_SAMPLE,
    P_KEYS,
    P_L2_ON,
    P_LFU_DECAY,
    P_MAXMEM,
    P_SAMPLES,
    P_SCORE,
    SAMPLE_SCRATCH,
)

TTL_SCORE_BASE = 1 << 62        # volatile-ttl: idle = ULLONG_MAX - expire


# ----------------------------------------------------------------------------- pool and scoring
@nb.njit(**_INLINE)
def candidate_score(S, k, now):
    """The pool's ``idle``: higher = better eviction candidate."""
    score = S.ipar[P_SCORE]
    if score == SCORE_LRU:
        return lru_idle_ms(S.kv[k, KV_LRU], now)
    if score == SCORE_LFU:
        return 255 - lfu_decr_and_return(S.kv[k, KV_LRU], now, S.ipar[P_LFU_DECAY])
    if score == SCORE_TTL:
        return TTL_SCORE_BASE - int(S.expire[k] * 1000.0)
    return 0


@nb.njit(**_INLINE)
def pool_populate(S, now):
    """evictionPoolPopulate(): sample keys into the 16-entry pool sorted by ascending idle.

    allkeys-* with ``SimParams.sampling="dict"`` (default) sample as Redis does, with
    dict_get_some_keys() over the modelled hash table: distinct keys from consecutive buckets, the
    newest of a chain first, possibly fewer than ``maxmemory-samples``; the pool keeps stale
    entries and duplicates, as in Redis. volatile-* (db->expires, not modelled as a table) and
    ``sampling="uniform"`` draw uniformly with replacement, all candidates when there are no more
    than ``maxmemory-samples``. Returns the number of candidates (0 if none).
    """
    ipar = S.ipar
    ist = S.ist
    volatile = ipar[P_KEYS] == KEYS_VOLATILE
    n = ist[I_NVOL] if volatile else ist[I_NRES]
    if n == 0:
        return 0
    ns = ipar[P_SAMPLES]
    walk = ipar[P_DICT_SAMPLE] != 0 and not volatile
    if walk:
        ns = dict_get_some_keys(S, min(ns, SAMPLE_SCRATCH))
        if ns == 0:
            return n  # nothing found within count*10 steps: Redis retries (keys exist)
    take_all = ns >= n
    if take_all:
        ns = n
    pk = S.pool_key
    pi = S.pool_idle
    hsamp = S.hsamp
    rng = S.rng
    keys = S.vkeys if volatile else S.dkeys
    kv = S.kv
    score = ipar[P_SCORE]
    decay = ipar[P_LFU_DECAY]
    clk = lru_clock(now)
    last = EVPOOL_SIZE - 1
    for s in range(ns):
        if walk:
            k = hsamp[s]
        else:
            j = s if take_all else rng_below(rng, n)
            k = keys[j]
        # candidate_score(), with the arrays already loaded
        if score == SCORE_LRU:  # lru_idle_ms() with the clock read once
            field = kv[k, KV_LRU]
            if clk >= field:
                idle = (clk - field) * LRU_CLOCK_RESOLUTION_MS
            else:
                idle = (clk + (LRU_CLOCK_MAX - field)) * LRU_CLOCK_RESOLUTION_MS
        elif score == SCORE_LFU:
            idle = 255 - lfu_decr_and_return(kv[k, KV_LRU], now, decay)
        else:
            idle = candidate_score(S, k, now)
        if pk[last] >= 0 and (pk[0] < 0 or pi[0] >= idle):
            continue  # worse than everything in a full pool (Redis: k == 0 after the scan)
        i = 0
        while i < EVPOOL_SIZE and pk[i] >= 0 and pi[i] < idle:
            i += 1
        if i < EVPOOL_SIZE and pk[i] < 0:
            pass  # empty slot
        elif pk[last] < 0:
            for m in range(last, i, -1):  # free space on the right: shift right
                pk[m] = pk[m - 1]
                pi[m] = pi[m - 1]
        else:
            i -= 1  # no space: drop the best-kept (lowest idle) entry on the left
            for m in range(0, i):
                pk[m] = pk[m + 1]
                pi[m] = pi[m + 1]
        pk[i] = k
        pi[i] = idle
    return ns


# ----------------------------------------------------------------------------- victims
@nb.njit(**_INLINE)
def select_victim(S, now):
    """The key performEvictions() would delete next, or -1 when nothing can be evicted."""
    keys = S.ipar[P_KEYS]
    score = S.ipar[P_SCORE]
    if keys == KEYS_NONE:
        return -1
    if score == SCORE_EXACT_LRU:
        return S.ist[I_TAIL]
    if score == SCORE_RANDOM:
        if keys == KEYS_VOLATILE:
            n = S.ist[I_NVOL]
            return S.vkeys[rng_below(S.rng, n)] if n > 0 else -1
        n = S.ist[I_NRES]
        if n > 0 and S.ipar[P_DICT_SAMPLE]:
            return dict_random_key(S)
        return S.dkeys[rng_below(S.rng, n)] if n > 0 else -1
    volatile = keys == KEYS_VOLATILE
    pool_key = S.pool_key
    kv = S.kv
    while True:
        if pool_populate(S, now) == 0:
            return -1
        for i in range(EVPOOL_SIZE - 1, -1, -1):
            k = pool_key[i]
            if k < 0:
                continue
            pool_key[i] = -1
            # Ghost entries (deleted since they were pooled) are skipped, as in Redis.
            if kv[k, KV_DPOS] >= 0 and (not volatile or kv[k, KV_VPOS] >= 0):
                return k


@nb.njit(**_INLINE)
def evict_one(S, k, now):
    """Delete an eviction victim, count it, and demote its value into L2."""
    if S.ipar[P_L2_ON]:
        size = S.kv[k, KV_VSIZE]
        exp = S.expire[k]
        remove_key(S, k)
        S.cnt[C_EVICT] += 1
        l2_insert(S, k, size, exp)
    else:
        remove_key(S, k)
        S.cnt[C_EVICT] += 1


@nb.njit(**_JIT)
def perform_evictions(S, now, incoming):
    """Evict until ``used + incoming <= maxmemory``; False if the policy cannot free enough."""
    maxmem = S.ipar[P_MAXMEM]
    if maxmem <= 0:
        return True
    while used_memory(S) + incoming > maxmem:
        v = select_victim(S, now)
        if v < 0:
            return False
        evict_one(S, v, now)
    return True
