"""The compiled hot loop: one Redis 7 instance (plus an optional second tier) over flat arrays.

Follows Redis 7.0 source semantics (evict.c, object.c, expire.c, networking.c); each helper names the
function it stands for. Approximations are stated where they are made. All randomness comes from a
xorshift64* generator whose state lives in ``KState.rng``, so a run is a pure function of the seed
and :meth:`TieredCacheSim.clone` copies the random stream too.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from cachetuner.sim.memory import key_charge
from cachetuner.sim.policies import (
    KEYS_NONE,
    KEYS_VOLATILE,
    SCORE_EXACT_LRU,
    SCORE_LFU,
    SCORE_LRU,
    SCORE_RANDOM,
    SCORE_TTL,
)
from cachetuner.sim.state import (
    C_BACKEND,
    C_BHIT,
    C_BREQ,
    C_CMDS,
    C_EVICT,
    C_EXPIRED,
    C_GETS,
    C_HITS,
    C_L2HITS,
    C_MISSES,
    C_RECONN,
    C_REJECT,
    C_REQ,
    C_SETS,
    EVPOOL_SIZE,
    F_NEXT_EVENT,
    F_NOW,
    FC_LATSUM_MS,
    I_AE_TICK,
    I_CRON_SEC,
    I_DATA,
    I_HEAD,
    I_HSIZE,
    I_L2HEAD,
    I_L2N,
    I_L2TAIL,
    I_L2USED,
    I_LISTED,
    I_NCONN,
    I_NRES,
    I_NVOL,
    I_PEAK,
    I_STARTED,
    I_TAIL,
    KV_COST,
    KV_DPOS,
    KV_HNEXT,
    KV_LRU,
    KV_NEXT,
    KV_PREV,
    KV_VPOS,
    KV_VSIZE,
    SAMPLE_SCRATCH,
)

# Integer parameters (ipar).
P_MAXMEM = 0
P_KEYS = 1          # KEYS_* of the policy
P_SCORE = 2         # SCORE_* of the policy
P_SAMPLES = 3       # maxmemory-samples
P_LFU_LOG = 4       # lfu-log-factor
P_LFU_DECAY = 5     # lfu-decay-time (minutes)
P_FLAT = 6          # flat per-key overhead, -1 = Redis 7 formula
P_BASE = 7          # base used_memory
P_CLIENT_BUF = 8    # bytes per connected client
P_NCLIENTS = 9
P_L2_ON = 10
P_L2_CAP = 11
P_L2_FIFO = 12
P_AE_ON = 13
P_AE_KEYS = 14
P_AE_LOOPS = 15
P_AE_CATCHUP = 16
P_READ_ONLY = 17
P_LGQ = 18          # jemalloc lg-quantum of the memory model
P_REDIS_ORDER = 19  # 1: evict before each command only (Redis); 0: make room for each write
P_DICT_SAMPLE = 20  # 1: sample allkeys candidates by walking the modelled hash table (dictGetSomeKeys)
P_LATENCY = 21      # 0: no latency model (no draws, no histogram): hit ratios only
N_IPAR = 22

# Float parameters (fpar).
Q_NET_MS = 0
Q_L1_MS = 1
Q_L2_MS = 2
Q_MISS_MS = 3
Q_MISS_SIGMA = 4
Q_JITTER = 5
Q_RECONN_MS = 6
Q_MISS_COST = 7
Q_AE_PERIOD = 8
Q_AE_STALE = 9
Q_TIMEOUT = 10      # idle client timeout, seconds; 0 = never
N_FPAR = 11

OP_GET = 0
OP_SET = 1
OP_DELETE = 2

LRU_CLOCK_MAX = (1 << 24) - 1   # server.h: LRU_CLOCK_MAX
LRU_CLOCK_RESOLUTION_MS = 1000  # server.h: LRU_CLOCK_RESOLUTION
LFU_INIT_VAL = 5                # server.h: LFU_INIT_VAL
DICT_HT_INITIAL_SIZE = 4        # dict.h
HASHTABLE_MIN_FILL = 10         # server.h: shrink below 10 % fill (tryResizeHashTables)
HASHTABLE_MAX_LOAD_FACTOR = 1.618  # server.c: dictExpandAllowed()
TTL_SCORE_BASE = 1 << 62        # volatile-ttl: idle = ULLONG_MAX - expire
#: Redis's clocks run on unix time; trace time 0 is mapped here (2023-11-14) so that the 24-bit
#: field reinterpretations on a policy switch behave as on a real server (see apply_config). A whole
#: number of minutes, so that a trace stamped with unix times (fidelity runs) sees its LFU minute
#: boundaries (LFUGetTimeInMinutes = unixtime / 60) exactly where the real server does.
CLOCK_EPOCH_S = 1_699_999_980
assert CLOCK_EPOCH_S % 60 == 0

_U7 = np.uint64(7)
_U9 = np.uint64(9)
_U11 = np.uint64(11)
_U12 = np.uint64(12)
_U25 = np.uint64(25)
_U27 = np.uint64(27)
_UMUL = np.uint64(2685821657736338717)
_INV53 = 1.0 / 9007199254740992.0

_JIT = dict(cache=True, nogil=True)
_INLINE = dict(cache=True, nogil=True, inline="always")


# ----------------------------------------------------------------------------- random numbers
@nb.njit(**_INLINE)
def rng_next(rng):
    """xorshift64* (Vigna): 64 random bits."""
    x = rng[0]
    x ^= x >> _U12
    x ^= x << _U25
    x ^= x >> _U27
    rng[0] = x
    return x * _UMUL


@nb.njit(**_INLINE)
def rng_uniform(rng):
    """Uniform double in [0, 1)."""
    return float(rng_next(rng) >> _U11) * _INV53


@nb.njit(**_INLINE)
def rng_below(rng, n):
    """Uniform integer in [0, n)."""
    return int(rng_uniform(rng) * n)


# ----------------------------------------------------------------------------- clocks (evict.c)
@nb.njit(**_INLINE)
def lru_clock(now):
    """LRU_CLOCK(): seconds, 24 bits."""
    return (int(math.floor(now)) + CLOCK_EPOCH_S) & LRU_CLOCK_MAX


@nb.njit(**_INLINE)
def lfu_minutes(now):
    """LFUGetTimeInMinutes(): minutes, 16 bits."""
    return ((int(math.floor(now)) + CLOCK_EPOCH_S) // 60) & 65535


@nb.njit(**_INLINE)
def lru_idle_ms(field, now):
    """estimateObjectIdleTime()."""
    clk = lru_clock(now)
    if clk >= field:
        return (clk - field) * LRU_CLOCK_RESOLUTION_MS
    return (clk + (LRU_CLOCK_MAX - field)) * LRU_CLOCK_RESOLUTION_MS


@nb.njit(**_JIT)
def lfu_decr_and_return(field, now, decay_time):
    """LFUDecrAndReturn(): the counter after ``lfu-decay-time`` decay, not stored."""
    ldt = field >> 8
    counter = field & 255
    if decay_time <= 0:
        return counter
    now_m = lfu_minutes(now)
    elapsed = now_m - ldt if now_m >= ldt else 65535 - ldt + now_m
    periods = elapsed // decay_time
    if periods > 0:
        counter = 0 if periods > counter else counter - periods
    return counter


@nb.njit(**_JIT)
def lfu_log_incr(counter, log_factor, rng):
    """LFULogIncr(): Morris counter, increment with probability 1/((counter-5)*factor+1)."""
    if counter == 255:
        return 255
    r = rng_uniform(rng)
    baseval = counter - LFU_INIT_VAL
    if baseval < 0:
        baseval = 0
    p = 1.0 / (baseval * log_factor + 1)
    if r < p:
        counter += 1
    return counter


# ----------------------------------------------------------------------------- memory
@nb.njit(**_INLINE)
def used_memory(S):
    """Redis used_memory: base + keys + connected clients' buffers."""
    return S.ipar[P_BASE] + S.ist[I_DATA] + S.ist[I_NCONN] * S.ipar[P_CLIENT_BUF]


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


# ----------------------------------------------------------------------------- second tier
@nb.njit(**_JIT)
def l2_unlink(S, k):
    p = S.l2prev[k]
    n = S.l2next[k]
    if p >= 0:
        S.l2next[p] = n
    else:
        S.ist[I_L2HEAD] = n
    if n >= 0:
        S.l2prev[n] = p
    else:
        S.ist[I_L2TAIL] = p
    S.l2prev[k] = -1
    S.l2next[k] = -1


@nb.njit(**_JIT)
def l2_push_head(S, k):
    h = S.ist[I_L2HEAD]
    S.l2prev[k] = -1
    S.l2next[k] = h
    if h >= 0:
        S.l2prev[h] = k
    else:
        S.ist[I_L2TAIL] = k
    S.ist[I_L2HEAD] = k


@nb.njit(**_JIT)
def l2_remove(S, k):
    if S.l2in[k]:
        l2_unlink(S, k)
        S.l2in[k] = 0
        S.ist[I_L2USED] -= S.l2size[k]
        S.ist[I_L2N] -= 1


@nb.njit(**_JIT)
def l2_insert(S, k, size, exp):
    """Demotion: store the value in L2, evicting its LRU (or FIFO) tail until it fits."""
    cap = S.ipar[P_L2_CAP]
    if size > cap:
        return
    l2_remove(S, k)
    while S.ist[I_L2USED] + size > cap and S.ist[I_L2TAIL] >= 0:
        l2_remove(S, S.ist[I_L2TAIL])
    S.l2in[k] = 1
    S.l2size[k] = size
    S.l2exp[k] = exp
    S.ist[I_L2USED] += size
    S.ist[I_L2N] += 1
    l2_push_head(S, k)


# ----------------------------------------------------------------------------- main dict (dict.c)
_H1 = np.uint64(0x9E3779B97F4A7C15)
_H2 = np.uint64(0xBF58476D1CE4E5B9)
_H3 = np.uint64(0x94D049BB133111EB)
_U30 = np.uint64(30)
_U31 = np.uint64(31)


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
    it samples two tables.
    """
    old_size = S.ist[I_HSIZE]
    old = S.hbuckets[:old_size].copy()
    S.hbuckets[:new_size] = -1
    mask = new_size - 1
    for b in range(old_size):
        e = old[b]
        while e >= 0:
            nxt = S.kv[e, KV_HNEXT]
            h = key_bucket(S, e, mask)
            S.kv[e, KV_HNEXT] = S.hbuckets[h]
            S.hbuckets[h] = e
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


@nb.njit(**_INLINE)
def dict_delete(S, k):
    """dictDelete(): unlink ``k`` from its bucket chain."""
    kv = S.kv
    hb = S.hbuckets
    h = key_bucket(S, k, S.ist[I_HSIZE] - 1)
    e = hb[h]
    if e == k:
        hb[h] = kv[k, KV_HNEXT]
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
def dict_get_some_keys(S, count):
    """dictGetSomeKeys(): walk consecutive buckets from a random index, taking whole chains.

    Writes up to ``count`` keys into ``S.hsamp`` and returns how many: possibly fewer than
    ``count`` (at most ``count * 10`` steps), distinct, in bucket order and head first (the newest
    key of a chain first). Six empty buckets in a row jump to a new random index, as in Redis.
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
    hsamp = S.hsamp
    rng = S.rng
    mask = size - 1
    maxsteps = count * 10
    stored = 0
    i = int(rng_next(rng) >> _U11) & mask
    emptylen = 0
    while stored < count and maxsteps > 0:
        maxsteps -= 1
        e = hb[i]
        if e < 0:
            emptylen += 1
            if emptylen >= 5 and emptylen > count:
                i = int(rng_next(rng) >> _U11) & mask
                emptylen = 0
        else:
            emptylen = 0
            while e >= 0:
                hsamp[stored] = e
                stored += 1
                if stored == count:
                    return stored
                e = kv[e, KV_HNEXT]
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


# ----------------------------------------------------------------------------- keyspace (db.c)
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
def expire_if_needed(S, k, now):
    """expireIfNeeded(): a resident key past its expire time is deleted (an expiration)."""
    if S.kv[k, KV_VPOS] >= 0 and now > S.expire[k]:  # vpos >= 0: resident with a TTL
        remove_key(S, k)
        S.cnt[C_EXPIRED] += 1
        return True
    return False


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


# ----------------------------------------------------------------------------- eviction (evict.c)
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
        i = 0
        while i < EVPOOL_SIZE and pk[i] >= 0 and pi[i] < idle:
            i += 1
        if i == 0 and pk[last] >= 0:
            continue  # worse than everything in a full pool
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


@nb.njit(**_JIT)
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


# ----------------------------------------------------------------------------- writes (t_string.c)
@nb.njit(**_INLINE)
def write_key(S, k, size, exp, now):
    """SET (or a read-through fill): evict as needed, then store; False = OOM-rejected.

    Two orders (``SimParams.eviction_order``): ``make-room`` evicts until the incoming value fits
    (libCacheSim's order: used_memory never exceeds maxmemory after a write) and refuses a value
    that cannot fit even in an empty cache; ``redis`` is performEvictions() as processCommand()
    runs it: evict only while used > maxmemory *before* the command, then admit the write, which
    may overshoot until the next command evicts again.
    """
    kv = S.kv  # struct fields loaded once: each S.<field> access costs a reference-count pair
    ist = S.ist
    ipar = S.ipar
    cnt = S.cnt
    flat = ipar[P_FLAT]
    # key_charge(); the flat model needs no key length (one cache line fewer per write)
    new_cost = size + flat if flat >= 0 else key_charge(flat, S.klen[k], size, exp > 0.0, ipar[P_LGQ])
    maxmem = ipar[P_MAXMEM]
    if maxmem > 0 and ipar[P_REDIS_ORDER]:
        if used_memory(S) > maxmem and not perform_evictions(S, now, 0):
            cnt[C_REJECT] += 1
            return False
    elif maxmem > 0:
        fixed = ipar[P_BASE] + ist[I_NCONN] * ipar[P_CLIENT_BUF]
        if fixed + new_cost > maxmem:
            cnt[C_REJECT] += 1
            return False
        while True:
            old = kv[k, KV_COST] if kv[k, KV_DPOS] >= 0 else 0
            if fixed + ist[I_DATA] - old + new_cost <= maxmem:  # used_memory(): clients fixed here
                break
            v = select_victim(S, now)
            if v < 0:
                cnt[C_REJECT] += 1
                return False
            evict_one(S, v, now)
    if kv[k, KV_DPOS] >= 0:
        # Overwrite: lookupKeyWrite() touched it; dbSetValue() keeps the old lru/lfu field.
        ist[I_DATA] += new_cost - kv[k, KV_COST]
        touch(S, k, now)
    else:
        n = ist[I_NRES]
        dict_add(S, k, n)
        S.dkeys[n] = k
        kv[k, KV_DPOS] = n
        ist[I_NRES] = n + 1
        ist[I_DATA] += new_cost
        if ipar[P_SCORE] == SCORE_LFU:  # createObject()
            kv[k, KV_LRU] = (lfu_minutes(now) << 8) | LFU_INIT_VAL
        else:
            kv[k, KV_LRU] = lru_clock(now)
        if ist[I_LISTED]:
            list_push_head(S, k)
    kv[k, KV_COST] = new_cost
    kv[k, KV_VSIZE] = size
    if exp > 0.0:
        S.expire[k] = exp
        vol_add(S, k)
    elif kv[k, KV_VPOS] >= 0:
        S.expire[k] = 0.0
        vol_remove(S, k)
    cnt[C_SETS] += 1
    return True


# ----------------------------------------------------------------------------- crons
@nb.njit(**_JIT)
def active_expire_cycle(S, now):
    """activeExpireCycle() slow cycle (see ActiveExpireParams)."""
    per_loop = S.ipar[P_AE_KEYS]
    for _ in range(S.ipar[P_AE_LOOPS]):
        n = S.ist[I_NVOL]
        if n == 0:
            return
        ns = per_loop if per_loop < n else n
        expired = 0
        for _s in range(ns):
            n = S.ist[I_NVOL]
            if n == 0:
                break
            k = S.vkeys[rng_below(S.rng, n)]
            if now > S.expire[k]:
                remove_key(S, k)
                S.cnt[C_EXPIRED] += 1
                expired += 1
        if expired * 100.0 <= S.fpar[Q_AE_STALE] * ns:
            return


@nb.njit(**_JIT)
def close_idle_clients(S, now):
    """clientsCronHandleTimeout(): close clients idle longer than ``timeout``."""
    timeout = S.fpar[Q_TIMEOUT]
    if timeout <= 0.0:
        return
    for c in range(S.cl_conn.shape[0]):
        if S.cl_conn[c] and now - S.cl_last[c] > timeout:
            S.cl_conn[c] = 0
            S.ist[I_NCONN] -= 1


@nb.njit(**_INLINE)
def next_event(S):
    """When the next cron is due: the next active-expire tick or clientsCron second."""
    t = S.ist[I_CRON_SEC] + 1.0
    if S.ipar[P_AE_ON]:
        t = min(t, (S.ist[I_AE_TICK] + 1) * S.fpar[Q_AE_PERIOD])
    return t


@nb.njit(**_JIT)
def advance_clock(S, now):
    """Run the server crons due between the last event and ``now``, then set the clock."""
    if S.ist[I_STARTED] == 0:
        S.ist[I_STARTED] = 1
        S.cl_conn[:] = 1
        S.cl_last[:] = now
        S.ist[I_NCONN] = S.cl_conn.shape[0]
        S.ist[I_AE_TICK] = int(math.floor(now / S.fpar[Q_AE_PERIOD]))
        S.ist[I_CRON_SEC] = int(math.floor(now))
        S.fst[F_NOW] = now
        S.fst[F_NEXT_EVENT] = next_event(S)
        return
    if now < S.fst[F_NOW]:
        now = S.fst[F_NOW]
    if S.ipar[P_AE_ON]:
        period = S.fpar[Q_AE_PERIOD]
        tick = int(math.floor(now / period))
        last = S.ist[I_AE_TICK]
        if tick > last:
            first = last + 1
            if tick - first >= S.ipar[P_AE_CATCHUP]:
                first = tick - S.ipar[P_AE_CATCHUP] + 1
            if S.ist[I_NVOL] > 0:
                for t in range(first, tick + 1):
                    active_expire_cycle(S, t * period)
            S.ist[I_AE_TICK] = tick
    sec = int(math.floor(now))
    if sec > S.ist[I_CRON_SEC]:
        close_idle_clients(S, now)
        dict_try_shrink(S)
        S.ist[I_CRON_SEC] = sec
    S.fst[F_NOW] = now
    S.fst[F_NEXT_EVENT] = next_event(S)


# ----------------------------------------------------------------------------- latency
@nb.njit(**_INLINE)
def jitter(S, ms):
    """``ms`` times a lognormal factor (median 1, sigma ``jitter_sigma``) from the quantile table."""
    if S.ipar[P_LATENCY] == 0:
        return 0.0
    return ms * S.jit_tab[int(rng_uniform(S.rng) * S.jit_tab.shape[0])]


@nb.njit(**_INLINE)
def backend_ms(S):
    """One inference-call latency: median ``miss_ms``, lognormal sigma ``miss_sigma``."""
    if S.ipar[P_LATENCY] == 0:
        return 0.0
    return S.fpar[Q_MISS_MS] * S.miss_tab[int(rng_uniform(S.rng) * S.miss_tab.shape[0])]


@nb.njit(**_INLINE)
def record_latency(S, ms):
    S.fcnt[FC_LATSUM_MS] += ms
    sec = ms * 0.001
    b = S.bounds
    i = 0
    nb_ = b.shape[0]
    while i < nb_ and sec > b[i]:
        i += 1
    S.hist[i] += 1


@nb.njit(**_INLINE)
def pick_client(S):
    cdf = S.cl_cdf
    n = cdf.shape[0]
    if n == 1:
        return 0
    u = rng_uniform(S.rng)
    lo = 0
    hi = n - 1
    while lo < hi:
        mid = (lo + hi) >> 1
        if cdf[mid] > u:
            hi = mid
        else:
            lo = mid + 1
    return lo


# ----------------------------------------------------------------------------- main loop
@nb.njit(**_JIT)
def run_requests(S, ts, keys, sizes, ops, ttls):
    """Process requests in order (processCommand() for each), updating cumulative counters.

    The arrays the common path touches are loaded from the state once, outside the loop: every
    ``S.<field>`` access costs an (atomic) reference-count pair, which on a hit was most of the cost.
    Parameters (``ipar`` / ``fpar``) cannot change during a call, so they are read once too.
    """
    kv = S.kv
    ist = S.ist
    fst = S.fst
    cnt = S.cnt
    ipar = S.ipar
    rng = S.rng
    expire = S.expire
    cl_conn = S.cl_conn
    cl_last = S.cl_last
    jit_tab = S.jit_tab
    miss_tab = S.miss_tab
    n_jit = jit_tab.shape[0]
    n_miss = miss_tab.shape[0]
    hist = S.hist
    bounds = S.bounds
    n_bounds = bounds.shape[0]
    fcnt = S.fcnt
    timeout = S.fpar[Q_TIMEOUT]
    net = S.fpar[Q_NET_MS]
    l1 = S.fpar[Q_L1_MS]
    miss_ms = S.fpar[Q_MISS_MS]
    reconn_ms = S.fpar[Q_RECONN_MS]
    read_only = ipar[P_READ_ONLY] != 0
    maxmem = ipar[P_MAXMEM]
    base = ipar[P_BASE]
    client_buf = ipar[P_CLIENT_BUF]
    latency = ipar[P_LATENCY] != 0
    l2_on = ipar[P_L2_ON] != 0
    lfu = ipar[P_SCORE] == SCORE_LFU
    one_client = cl_conn.shape[0] == 1
    for i in range(ts.shape[0]):
        now = ts[i]
        if now >= fst[F_NEXT_EVENT] or ist[I_STARTED] == 0:
            advance_clock(S, now)  # crons due (rare); otherwise just move the clock
        elif now > fst[F_NOW]:
            fst[F_NOW] = now
        now = fst[F_NOW]
        k = keys[i]
        op = ops[i]
        cnt[C_REQ] += 1
        lat = net

        c = 0 if one_client else pick_client(S)  # pick_client draws nothing for one client either
        if cl_conn[c] == 0 or (timeout > 0.0 and now - cl_last[c] > timeout):
            if cl_conn[c] == 0:
                cl_conn[c] = 1
                ist[I_NCONN] += 1
            cnt[C_RECONN] += 1
            lat += reconn_ms
        cl_last[c] = now

        if maxmem > 0 and base + ist[I_DATA] + ist[I_NCONN] * client_buf > maxmem:
            perform_evictions(S, now, 0)
        if kv[k, KV_VPOS] >= 0 and now > expire[k]:  # expire_if_needed()
            remove_key(S, k)
            cnt[C_EXPIRED] += 1
        cnt[C_CMDS] += 1
        if latency:  # jitter(l1)
            lat += l1 * jit_tab[int(rng_uniform(rng) * n_jit)]

        do_write = False
        w_size = 0
        w_exp = 0.0
        if op == OP_GET:
            sz = sizes[i]
            cnt[C_GETS] += 1
            cnt[C_BREQ] += sz
            if kv[k, KV_DPOS] >= 0:
                cnt[C_HITS] += 1
                cnt[C_BHIT] += sz
                if lfu:
                    touch(S, k, now)
                else:  # touch(): LRU clock, exact-LRU move to head
                    kv[k, KV_LRU] = lru_clock(now)
                    if ist[I_LISTED] and ist[I_HEAD] != k:
                        list_unlink(S, k)
                        list_push_head(S, k)
            else:
                cnt[C_MISSES] += 1
                served_l2 = False
                if l2_on and S.l2in[k]:
                    if S.l2exp[k] > 0.0 and now > S.l2exp[k]:
                        l2_remove(S, k)
                    else:
                        served_l2 = True
                if served_l2:
                    cnt[C_L2HITS] += 1
                    lat += jitter(S, S.fpar[Q_L2_MS])
                    if ipar[P_L2_FIFO] == 0:
                        l2_unlink(S, k)
                        l2_push_head(S, k)
                    cnt[C_CMDS] += 1
                    lat += net + jitter(S, l1)
                    w_size = S.l2size[k]
                    w_exp = S.l2exp[k]
                    do_write = True
                else:
                    cnt[C_BACKEND] += 1
                    if latency:  # backend_ms()
                        lat += miss_ms * miss_tab[int(rng_uniform(rng) * n_miss)]
                    if read_only:
                        cnt[C_CMDS] += 1
                        if latency:
                            lat += net + l1 * jit_tab[int(rng_uniform(rng) * n_jit)]
                        else:
                            lat += net + 0.0
                        ttl = ttls[i]
                        w_size = sz
                        w_exp = now + ttl if ttl > 0.0 else 0.0
                        do_write = True
        elif op == OP_SET:
            ttl = ttls[i]
            if l2_on:
                l2_remove(S, k)
            w_size = sizes[i]
            w_exp = now + ttl if ttl > 0.0 else 0.0
            do_write = True
        else:
            if kv[k, KV_DPOS] >= 0:
                remove_key(S, k)
            if l2_on:
                l2_remove(S, k)
        if do_write:
            write_key(S, k, w_size, w_exp, now)

        if latency:  # record_latency()
            fcnt[FC_LATSUM_MS] += lat
            sec = lat * 0.001
            b = 0
            while b < n_bounds and sec > bounds[b]:
                b += 1
            hist[b] += 1
        u = base + ist[I_DATA] + ist[I_NCONN] * client_buf
        if u > ist[I_PEAK]:
            ist[I_PEAK] = u


@nb.njit(**_JIT)
def advance_to(S, until):
    """Let simulated time pass without requests (active expiry, idle-client closes)."""
    if S.ist[I_STARTED] and until > S.fst[F_NOW]:
        advance_clock(S, until)


@nb.njit(**_JIT)
def evict_to_limit(S):
    """CONFIG SET maxmemory below used_memory: performEvictions() right away."""
    return perform_evictions(S, S.fst[F_NOW], 0)
assert N_IPAR <= 32 and N_FPAR <= 32
