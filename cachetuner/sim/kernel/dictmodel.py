"""The main dict (db->dict, dict.c): a chained hash table over the resident keys, for sampling.

Redis draws eviction candidates from its hash table, not uniformly: dictGetSomeKeys() walks
consecutive buckets taking whole chains, dictGetRandomKey() picks a random bucket then a random entry
of its chain. The table is modelled (size, growth, shrink, chain order) so that these walks see what
Redis's would.
"""

from __future__ import annotations

import numba as nb
import numpy as np
from numba.cpython.unsafe.numbers import trailing_zeros

from cachetuner.sim.kernel.common import (
    _INLINE,
    _JIT,
    _U11,
    _U27,
    prefetch_row,
    rng_below,
    rng_next,
    used_memory,
)
from cachetuner.sim.slots import I_HSIZE, I_NRES, KV_HNEXT, P_MAXMEM

DICT_HT_INITIAL_SIZE = 4        # dict.h
HASHTABLE_MIN_FILL = 10         # server.h: shrink below 10 % fill (tryResizeHashTables)
HASHTABLE_MAX_LOAD_FACTOR = 1.618  # server.c: dictExpandAllowed()

_H1 = np.uint64(0x9E3779B97F4A7C15)
_H2 = np.uint64(0xBF58476D1CE4E5B9)
_H3 = np.uint64(0x94D049BB133111EB)
_U30 = np.uint64(30)
_U31 = np.uint64(31)
_U1 = np.uint64(1)
_ALL = np.uint64(0xFFFFFFFFFFFFFFFF)


@nb.njit(**_INLINE)
def key_bucket(S, k, mask):
    """``state.key_hashes()[k] & mask``, recomputed (a few multiplies) rather than loaded: the
    hash array is one more random cache line per add / delete."""
    z = np.uint64(k) ^ S.hsalt[0]
    z += _H1
    z = (z ^ (z >> _U30)) * _H2
    z = (z ^ (z >> _U27)) * _H3
    z ^= z >> _U31
    return np.int64(z & np.uint64(mask))


@nb.njit(**_INLINE)
def dict_next_size(x):
    """_dictNextExp(): the smallest power of two >= x (at least DICT_HT_INITIAL_SIZE)."""
    n = DICT_HT_INITIAL_SIZE
    while n < x:
        n <<= 1
    return n


@nb.njit(**_JIT)
def dict_rehash(S, new_size):
    """dictExpand() + the whole incremental rehash at once.

    Buckets move in index order and each chain head first, every entry inserted at the head of
    its new bucket, as _dictRehashStep() does (so chains come out reversed). Approximation: Redis
    spreads this over following operations and serverCron (1 ms per tick), so for a short while
    it samples two tables. In place (the kernel does not allocate): the old chains are first
    joined into one list in that order, then the list is dealt into the new table.
    """
    old_size = S.ist[I_HSIZE]
    hb = S.hbuckets
    kv = S.kv
    first = -1
    last = -1
    for b in range(old_size):
        e = hb[b]
        if e < 0:
            continue
        if last >= 0:
            kv[last, KV_HNEXT] = e
        else:
            first = e
        while kv[e, KV_HNEXT] >= 0:
            e = kv[e, KV_HNEXT]
        last = e
    hb[:new_size] = -1
    bits = S.hbits
    bits[: (max(old_size, new_size) + 63) >> 6] = 0
    mask = new_size - 1
    e = first
    while e >= 0:
        nxt = kv[e, KV_HNEXT]
        h = key_bucket(S, e, mask)
        kv[e, KV_HNEXT] = hb[h]
        hb[h] = e
        bits[h >> 6] |= _U1 << np.uint64(h & 63)
        e = nxt
    S.ist[I_HSIZE] = new_size


@nb.njit(**_INLINE)
def dict_add(S, k, used_before):
    """dictAdd(): _dictExpandIfNeeded() (with dictExpandAllowed()), then insert at the bucket head."""
    size = S.ist[I_HSIZE]
    if size == 0:
        dict_rehash(S, DICT_HT_INITIAL_SIZE)
    elif used_before >= size:
        new_size = dict_next_size(used_before + 1)
        allowed = True
        maxmem = S.ipar[P_MAXMEM]
        if maxmem > 0 and used_before / size <= HASHTABLE_MAX_LOAD_FACTOR:
            allowed = used_memory(S) + 8 * new_size <= maxmem  # overMaxmemoryAfterAlloc()
        if allowed and new_size <= S.hbuckets.shape[0]:
            dict_rehash(S, new_size)
    h = key_bucket(S, k, S.ist[I_HSIZE] - 1)
    hb = S.hbuckets
    S.kv[k, KV_HNEXT] = hb[h]
    hb[h] = k
    S.hbits[h >> 6] |= _U1 << np.uint64(h & 63)


@nb.njit(**_INLINE)
def dict_delete(S, k):
    """dictDelete(): unlink ``k`` from its bucket chain."""
    kv = S.kv
    hb = S.hbuckets
    h = key_bucket(S, k, S.ist[I_HSIZE] - 1)
    e = hb[h]
    if e == k:
        nxt = kv[k, KV_HNEXT]
        hb[h] = nxt
        if nxt < 0:
            S.hbits[h >> 6] &= ~(_U1 << np.uint64(h & 63))
    else:
        while e >= 0 and kv[e, KV_HNEXT] != k:
            e = kv[e, KV_HNEXT]
        if e >= 0:
            kv[e, KV_HNEXT] = kv[k, KV_HNEXT]
    kv[k, KV_HNEXT] = -1


@nb.njit(**_JIT)
def dict_try_shrink(S):
    """tryResizeHashTables() from serverCron: below 10 % fill, shrink to fit (dictResize())."""
    size = S.ist[I_HSIZE]
    used = S.ist[I_NRES]
    if size > DICT_HT_INITIAL_SIZE and used * 100 // size < HASHTABLE_MIN_FILL:
        dict_rehash(S, dict_next_size(used))


@nb.njit(**_INLINE)
def empty_run(bits, i, size, cap):
    """How many buckets from ``i`` on (cyclically, in a table of ``size``) are empty, at most ``cap``."""
    d = 0
    while d < cap:
        p = (i + d) & (size - 1)
        w = bits[p >> 6] >> np.uint64(p & 63)
        if w != 0:  # bits at and above ``size`` are always clear
            d += int(trailing_zeros(w))
            return d if d < cap else cap
        d += min(64 - (p & 63), size - p)
    return cap


@nb.njit(**_INLINE)
def dict_get_some_keys(S, count):
    """dictGetSomeKeys(): walk consecutive buckets from a random index, taking whole chains.

    Writes up to ``count`` keys into ``S.hsamp`` and returns how many: possibly fewer than
    ``count`` (at most ``count * 10`` steps), distinct, in bucket order and head first (the newest
    key of a chain first). Six empty buckets in a row jump to a new random index, as in Redis.
    The chain on which ``count`` is reached is walked to its end with reservoir sampling (each
    further key replaces a random slot with probability ``count / seen``), as Redis does since
    redis/redis#12276 (2023; the redis-server 7.0.15 we compare with behaves so, see docs/sim.md):
    without it, keys deep in a chain could never be sampled, and the model evicted chain heads
    (the newest keys) more often than Redis, +1.3 to +2.1 pp on CloudPhysics allkeys-lfu.

    Redis steps one bucket at a time; here a run of empty buckets is taken at once from the
    occupancy bitmap ``S.hbits`` (:func:`empty_run`), with the same steps, jumps and random draws.
    """
    ist = S.ist
    used = ist[I_NRES]
    if used < count:
        count = used
    size = ist[I_HSIZE]
    if count <= 0 or size == 0:
        return 0
    kv = S.kv
    hb = S.hbuckets
    bits = S.hbits
    hsamp = S.hsamp
    rng = S.rng
    mask = size - 1
    maxsteps = count * 10
    jump = count + 1 if count >= 5 else 5  # Redis: emptylen >= 5 && emptylen > count
    stored = 0
    i = int(rng_next(rng) >> _U11) & mask
    # The heads of the next few non-empty buckets (in i's bitmap word) are independent loads:
    # start them all now rather than one after the other as the walk reaches them.
    w = bits[i >> 6] & (_ALL << np.uint64(i & 63))
    base = i & ~63
    for _ in range(count):
        if w == 0:
            break
        prefetch_row(kv, hb[base + int(trailing_zeros(w))])
        w &= w - _U1
    while stored < count and maxsteps > 0:
        # Every run of empty buckets starts with emptylen = 0 (a chain or a jump came before).
        run = empty_run(bits, i, size, min(jump, maxsteps))
        maxsteps -= run
        if run == jump:  # the jump's bucket itself is skipped, as in Redis (i++ after the jump)
            i = ((int(rng_next(rng) >> _U11) & mask) + 1) & mask
            continue
        if maxsteps == 0:
            break
        i = (i + run) & mask
        maxsteps -= 1
        e = hb[i]
        while e >= 0:
            if stored < count:
                hsamp[stored] = e
            else:  # reservoir sampling over the rest of the chain (redis #12276)
                r = int(rng_next(rng) % np.uint64(stored + 1))
                if r < count:
                    hsamp[r] = e
            stored += 1
            e = kv[e, KV_HNEXT]
        if stored >= count:
            return count
        i = (i + 1) & mask
    return stored


@nb.njit(**_JIT)
def dict_random_key(S):
    """dictGetRandomKey() (what performEvictions() uses for allkeys-random): a uniformly random
    non-empty bucket, then a uniformly random entry of its chain.

    Not uniform over keys: a key alone in its bucket is drawn as often as a whole chain, so random
    eviction removes isolated keys first and the survivors cluster in chains (visible in Redis's
    DEBUG HTSTATS as fewer "different slots" than random hashing gives).
    """
    size = S.ist[I_HSIZE]
    if S.ist[I_NRES] == 0 or size == 0:
        return -1
    mask = size - 1
    while True:
        e = S.hbuckets[int(rng_next(S.rng) >> _U11) & mask]
        if e >= 0:
            break
    m = 0
    x = e
    while x >= 0:
        m += 1
        x = S.kv[x, KV_HNEXT]
    for _ in range(rng_below(S.rng, m)):
        e = S.kv[e, KV_HNEXT]
    return e
