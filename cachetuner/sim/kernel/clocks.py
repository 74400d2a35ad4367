"""Redis's per-object clocks (evict.c): the 24-bit LRU clock and the LFU minutes + Morris counter.

Both live in the robj ``lru`` field (``KV_LRU``); touching a key writes it, eviction scoring reads it.
"""

from __future__ import annotations

import math

import numba as nb

from cachetuner.sim.kernel.common import _INLINE, _JIT, rng_uniform

LRU_CLOCK_MAX = (1 << 24) - 1   # server.h: LRU_CLOCK_MAX
LRU_CLOCK_RESOLUTION_MS = 1000  # server.h: LRU_CLOCK_RESOLUTION
LFU_INIT_VAL = 5                # server.h: LFU_INIT_VAL
#: Redis's clocks run on unix time; trace time 0 is mapped here (2023-11-14) so that the 24-bit
#: field reinterpretations on a policy switch behave as on a real server (see apply_config). A whole
#: number of minutes, so that a trace stamped with unix times (fidelity runs) sees its LFU minute
#: boundaries (LFUGetTimeInMinutes = unixtime / 60) exactly where the real server does.
CLOCK_EPOCH_S = 1_699_999_980
assert CLOCK_EPOCH_S % 60 == 0


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
