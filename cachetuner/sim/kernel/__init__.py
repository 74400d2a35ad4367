"""The compiled hot loop: one Redis 7 instance (plus an optional second tier) over flat arrays.

Follows Redis 7.0 source semantics (evict.c, object.c, expire.c, networking.c); each helper names the
function it stands for. Approximations are stated where they are made. All randomness comes from a
xorshift64* generator whose state lives in ``KState.rng``, so a run is a pure function of the seed
and :meth:`TieredCacheSim.clone` copies the random stream too.

One module per concern, each importing only modules listed before it (numba resolves a callee
through the caller's module globals, so every helper is a module-level ``njit`` function)::

    common     compile options, xorshift64* random stream, used_memory, the prefetch hint
    clocks     LRU clock, LFU minutes / decay / Morris increment (the robj lru field)
    dictmodel  the main hash table: add / delete / resize, dictGetSomeKeys, dictGetRandomKey
    keyspace   resident keys, keys with a TTL, exact-LRU list, dbDelete, lookupKey's touch
    l2         the second tier (demotion target of evictions)
    expire     lazy expiry and the active-expire cycle
    evict      candidate scores, the 16-entry pool, victim choice, performEvictions
    clients    client choice per request, idle-timeout closes
    latency    per-request latency draws and the histogram (reference for the loop's inlined copy)
    cron       what runs between requests: active-expire ticks, clientsCron, dict shrink
    loop       run_requests (processCommand per request), write_key (SET / fill), advance_to,
               evict_to_limit: the entry points the simulator calls

Slot indices (``I_*``, ``C_*``, ``KV_*``, ``P_*``, ``Q_*``) are defined in :mod:`cachetuner.sim.slots`.
This package re-exports every name the former single ``kernel`` module had, so
``from cachetuner.sim import kernel as K; K.run_requests(...)`` keeps working.
"""

from __future__ import annotations

from cachetuner.sim.kernel.clients import (
    close_idle_clients,
    pick_client,
)
from cachetuner.sim.kernel.clocks import (
    CLOCK_EPOCH_S,
    LFU_INIT_VAL,
    LRU_CLOCK_MAX,
    LRU_CLOCK_RESOLUTION_MS,
    lfu_decr_and_return,
    lfu_log_incr,
    lfu_minutes,
    lru_clock,
    lru_idle_ms,
)
from cachetuner.sim.kernel.common import (
    rng_below,
    rng_next,
    rng_uniform,
    used_memory,
)
from cachetuner.sim.kernel.cron import (
    advance_clock,
    next_event,
)
from cachetuner.sim.kernel.dictmodel import (
    DICT_HT_INITIAL_SIZE,
    HASHTABLE_MAX_LOAD_FACTOR,
    HASHTABLE_MIN_FILL,
    dict_add,
    dict_delete,
    dict_get_some_keys,
    dict_next_size,
    dict_random_key,
    dict_rehash,
    dict_try_shrink,
    key_bucket,
)
from cachetuner.sim.kernel.evict import (
    TTL_SCORE_BASE,
    candidate_score,
    evict_one,
    perform_evictions,
    pool_populate,
    select_victim,
)
from cachetuner.sim.kernel.expire import (
    active_expire_cycle,
    expire_if_needed,
)
from cachetuner.sim.kernel.keyspace import (
    list_push_head,
    list_unlink,
    remove_key,
    touch,
    vol_add,
    vol_remove,
)
from cachetuner.sim.kernel.l2 import (
    l2_insert,
    l2_push_head,
    l2_remove,
    l2_unlink,
)
from cachetuner.sim.kernel.latency import (
    backend_ms,
    jitter,
    record_latency,
)
from cachetuner.sim.kernel.loop import (
    OP_DELETE,
    OP_GET,
    OP_SET,
    advance_to,
    evict_to_limit,
    run_requests,
    write_key,
)
from cachetuner.sim.slots import (
    N_FPAR,
    N_IPAR,
    P_AE_CATCHUP,
    P_AE_KEYS,
    P_AE_LOOPS,
    P_AE_ON,
    P_BASE,
    P_CLIENT_BUF,
    P_DICT_SAMPLE,
    P_FLAT,
    P_KEYS,
    P_L2_CAP,
    P_L2_FIFO,
    P_L2_ON,
    P_LATENCY,
    P_LFU_DECAY,
    P_LFU_LOG,
    P_LGQ,
    P_MAXMEM,
    P_NCLIENTS,
    P_READ_ONLY,
    P_REDIS_ORDER,
    P_SAMPLES,
    P_SCORE,
    Q_AE_PERIOD,
    Q_AE_STALE,
    Q_JITTER,
    Q_L1_MS,
    Q_L2_MS,
    Q_MISS_COST,
    Q_MISS_MS,
    Q_MISS_SIGMA,
    Q_NET_MS,
    Q_RECONN_MS,
    Q_TIMEOUT,
)

__all__ = [
    "CLOCK_EPOCH_S",
    "DICT_HT_INITIAL_SIZE",
    "HASHTABLE_MAX_LOAD_FACTOR",
    "HASHTABLE_MIN_FILL",
    "LFU_INIT_VAL",
    "LRU_CLOCK_MAX",
    "LRU_CLOCK_RESOLUTION_MS",
    "N_FPAR",
    "N_IPAR",
    "OP_DELETE",
    "OP_GET",
    "OP_SET",
    "P_AE_CATCHUP",
    "P_AE_KEYS",
    "P_AE_LOOPS",
    "P_AE_ON",
    "P_BASE",
    "P_CLIENT_BUF",
    "P_DICT_SAMPLE",
    "P_FLAT",
    "P_KEYS",
    "P_L2_CAP",
    "P_L2_FIFO",
    "P_L2_ON",
    "P_LATENCY",
    "P_LFU_DECAY",
    "P_LFU_LOG",
    "P_LGQ",
    "P_MAXMEM",
    "P_NCLIENTS",
    "P_READ_ONLY",
    "P_REDIS_ORDER",
    "P_SAMPLES",
    "P_SCORE",
    "Q_AE_PERIOD",
    "Q_AE_STALE",
    "Q_JITTER",
    "Q_L1_MS",
    "Q_L2_MS",
    "Q_MISS_COST",
    "Q_MISS_MS",
    "Q_MISS_SIGMA",
    "Q_NET_MS",
    "Q_RECONN_MS",
    "Q_TIMEOUT",
    "TTL_SCORE_BASE",
    "active_expire_cycle",
    "advance_clock",
    "advance_to",
    "backend_ms",
    "candidate_score",
    "close_idle_clients",
    "dict_add",
    "dict_delete",
    "dict_get_some_keys",
    "dict_next_size",
    "dict_random_key",
    "dict_rehash",
    "dict_try_shrink",
    "evict_one",
    "evict_to_limit",
    "expire_if_needed",
    "jitter",
    "key_bucket",
    "l2_insert",
    "l2_push_head",
    "l2_remove",
    "l2_unlink",
    "lfu_decr_and_return",
    "lfu_log_incr",
    "lfu_minutes",
    "list_push_head",
    "list_unlink",
    "lru_clock",
    "lru_idle_ms",
    "next_event",
    "perform_evictions",
    "pick_client",
    "pool_populate",
    "record_latency",
    "remove_key",
    "rng_below",
    "rng_next",
    "rng_uniform",
    "run_requests",
    "select_victim",
    "touch",
    "used_memory",
    "vol_add",
    "vol_remove",
    "write_key",
]
