"""The request loop (processCommand() per request) and the commands it runs: GET, SET, DEL, fills.

Also the two other entry points the simulator calls between requests: :func:`advance_to` (time
passing) and :func:`evict_to_limit` (CONFIG SET maxmemory).
"""

from __future__ import annotations

import numba as nb

from cachetuner.sim.kernel.clients import pick_client
from cachetuner.sim.kernel.clocks import LFU_INIT_VAL, lfu_minutes, lru_clock
from cachetuner.sim.kernel.common import (
    _ENTRY,
    _INLINE,
    _JIT,
    below_shift,
    prefetch_row,
    rng_below_by,
    used_memory,
)
from cachetuner.sim.kernel.cron import advance_clock
from cachetuner.sim.kernel.dictmodel import dict_add
from cachetuner.sim.kernel.evict import evict_one, perform_evictions, select_victim
from cachetuner.sim.kernel.keyspace import list_push_head, list_unlink, remove_key, touch, vol_add, vol_remove
from cachetuner.sim.kernel.l2 import l2_push_head, l2_remove, l2_unlink
from cachetuner.sim.kernel.latency import jitter, latency_bucket
from cachetuner.sim.memory import key_charge
from cachetuner.sim.policies import SCORE_LFU
from cachetuner.sim.slots import (
    C_BACKEND,
    C_BHIT,
    C_BREQ,
    C_CMDS,
    C_EXPIRED,
    C_GETS,
    C_HITS,
    C_L2HITS,
    C_MISSES,
    C_RECONN,
    C_REJECT,
    C_REQ,
    C_SETS,
    F_NEXT_EVENT,
    F_NOW,
    FC_LATSUM_MS,
    I_DATA,
    I_HEAD,
    I_LISTED,
    I_NCONN,
    I_NRES,
    I_PEAK,
    I_STARTED,
    KV_COST,
    KV_DPOS,
    KV_LRU,
    KV_VPOS,
    KV_VSIZE,
    P_BASE,
    P_CLIENT_BUF,
    P_FLAT,
    P_L2_FIFO,
    P_L2_ON,
    P_LATENCY,
    P_LGQ,
    P_MAXMEM,
    P_READ_ONLY,
    P_REDIS_ORDER,
    P_SCORE,
    Q_L1_MS,
    Q_L2_MS,
    Q_MISS_MS,
    Q_NET_MS,
    Q_RECONN_MS,
    Q_TIMEOUT,
)
from cachetuner.sim.state import borrow

#: How many requests ahead :func:`replay` prefetches the key's ``kv`` row (a cache miss per request
#: otherwise: the trace's keys are known in advance, the cache's own lookups are not).
PREFETCH_AHEAD = 16

OP_GET = 0  # trace op codes (cachetuner.traces.trace.Op)
OP_SET = 1
OP_DELETE = 2


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


# ----------------------------------------------------------------------------- main loop
@nb.njit(**_ENTRY)
def run_requests(state, ts, keys, sizes, ops, ttls, out):
    """Process requests in order (processCommand() for each), updating cumulative counters.

    ``out``: per-request outcomes for callers that need them (TTL policies, staleness, tenants), a
    float64 array of shape ``(n, 2)``, or ``(0, 2)`` to record nothing: ``out[i, 0]`` = 1 for an L1
    hit + 2 when a write (SET or fill) was admitted, ``out[i, 1]`` = the request's latency in ms.
    """
    replay(borrow(state), ts, keys, sizes, ops, ttls, out)  # a plain pointer from here on (state.borrow)


@nb.njit(**_JIT)
def replay(S, ts, keys, sizes, ops, ttls, out):
    """:func:`run_requests` on the state's view.

    The arrays the common path touches are loaded from the state once, outside the loop, and
    parameters (``ipar`` / ``fpar``) cannot change during a call, so they are read once too.
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
    jit_shift = below_shift(n_jit)
    miss_shift = below_shift(n_miss)
    hist = S.hist
    bounds = S.bounds
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
    tracing = out.shape[0] > 0
    n = ts.shape[0]
    for i in range(n):
        if i + PREFETCH_AHEAD < n:  # the key row a later request reads first: its load overlaps this one
            prefetch_row(kv, keys[i + PREFETCH_AHEAD])
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
            lat += l1 * jit_tab[rng_below_by(rng, n_jit, jit_shift)]

        do_write = False
        hit = 0.0
        w_size = 0
        w_exp = 0.0
        if op == OP_GET:
            sz = sizes[i]
            cnt[C_GETS] += 1
            cnt[C_BREQ] += sz
            if kv[k, KV_DPOS] >= 0:
                hit = 1.0
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
                        lat += miss_ms * miss_tab[rng_below_by(rng, n_miss, miss_shift)]
                    if read_only:
                        cnt[C_CMDS] += 1
                        if latency:
                            lat += net + l1 * jit_tab[rng_below_by(rng, n_jit, jit_shift)]
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
        if do_write and write_key(S, k, w_size, w_exp, now) and tracing:
            hit += 2.0
        if tracing:
            out[i, 0] = hit
            out[i, 1] = lat

        if latency:  # record_latency()
            fcnt[FC_LATSUM_MS] += lat
            hist[latency_bucket(bounds, lat * 0.001)] += 1
        u = base + ist[I_DATA] + ist[I_NCONN] * client_buf
        if u > ist[I_PEAK]:
            ist[I_PEAK] = u


@nb.njit(**_ENTRY)
def advance_to(state, until):
    """Let simulated time pass without requests (active expiry, idle-client closes)."""
    S = borrow(state)
    if S.ist[I_STARTED] and until > S.fst[F_NOW]:
        advance_clock(S, until)


@nb.njit(**_ENTRY)
def evict_to_limit(state):
    """CONFIG SET maxmemory below used_memory: performEvictions() right away."""
    S = borrow(state)
    return perform_evictions(S, S.fst[F_NOW], 0)
