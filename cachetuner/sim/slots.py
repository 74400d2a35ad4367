"""Slot layout of the simulator state: which index of which flat array holds what.

The one place these indices are defined. :mod:`cachetuner.sim.state` allocates the arrays, the
compiled kernel (:mod:`cachetuner.sim.kernel`) reads and writes them, :mod:`cachetuner.sim.simulator`
fills the parameters and reads the counters. Plain integers, no imports: numba freezes them into the
compiled code as constants.
"""

from __future__ import annotations

EVPOOL_SIZE = 16  # evict.c: EVPOOL_SIZE
SAMPLE_SCRATCH = 64  # dictGetSomeKeys output buffer (maxmemory-samples <= 64, GETFAIR_NUM_ENTRIES 15)

# Scalar slots in KState.ist (int64).
I_NRES = 0       # resident keys
I_NVOL = 1       # resident keys with a TTL
I_DATA = 2       # bytes charged for resident keys
I_HEAD = 3       # exact-LRU list head (most recent), -1 if empty
I_TAIL = 4       # exact-LRU list tail (least recent)
I_LISTED = 5     # 1 while the exact-LRU list is maintained (policy exact-lru)
I_L2HEAD = 6
I_L2TAIL = 7
I_L2USED = 8
I_L2N = 9
I_NCONN = 10     # connected clients
I_AE_TICK = 11   # last active-expire tick processed
I_CRON_SEC = 12  # last clientsCron second processed
I_STARTED = 13   # clock initialised by a first request
I_PEAK = 14      # peak used_memory since the last report
I_HSIZE = 15     # main dict (db->dict) hash-table size in buckets, 0 = not allocated (power of two)
N_IST = 16

# Scalar slots in KState.fst (float64).
F_NOW = 0        # simulated clock, seconds
F_NEXT_EVENT = 1  # earliest time a cron (active expire, clientsCron) is due
N_FST = 2

# Cumulative counters in KState.cnt (int64); snapshots report differences.
C_REQ = 0
C_GETS = 1
C_HITS = 2
C_MISSES = 3
C_BREQ = 4
C_BHIT = 5
C_SETS = 6
C_EVICT = 7
C_EXPIRED = 8
C_REJECT = 9
C_CMDS = 10
C_RECONN = 11
C_L2HITS = 12
C_BACKEND = 13
N_CNT = 14

# Cumulative float counters in KState.fcnt.
FC_LATSUM_MS = 0
FC_MISSCOST = 1
N_FCNT = 2

# Columns of KState.kv: the per-key fields a request touches, in one 64-byte row (one cache line)
# rather than eight arrays, because a miss otherwise costs a cache miss per field. The dict chain
# link lives here too (a bucket walk reads the row it scores anyway); the key-name length, needed
# only by the Redis 7 memory formula, is a separate array (``klen``).
KV_DPOS = 0      # index in dkeys, -1 if not resident
KV_VPOS = 1      # index in vkeys, -1 if not resident with a TTL
KV_LRU = 2       # Redis robj 24-bit lru field (LRU clock, or LFU minutes<<8 | counter)
KV_COST = 3      # bytes charged to used_memory for the resident key
KV_VSIZE = 4     # value size of the resident key
KV_PREV = 5      # exact-LRU list
KV_NEXT = 6
KV_HNEXT = 7     # next key in the same main-dict bucket (dictEntry->next), -1 = end of chain
N_KV = 8

N_PARAMS = 32  # length of KState.ipar / KState.fpar: room for the P_* / Q_* below

# Integer parameters (KState.ipar).
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

# Float parameters (KState.fpar).
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

assert N_IPAR <= N_PARAMS and N_FPAR <= N_PARAMS
