"""Expiry (expire.c, db.c): lazy on access (expireIfNeeded) and the active-expire cycle's sampling."""

from __future__ import annotations

import numba as nb

from cachetuner.sim.kernel.common import _INLINE, _JIT, rng_below
from cachetuner.sim.kernel.keyspace import remove_key
from cachetuner.sim.slots import C_EXPIRED, I_NVOL, KV_VPOS, P_AE_KEYS, P_AE_LOOPS, Q_AE_STALE


@nb.njit(**_INLINE)
def expire_if_needed(S, k, now):
    """expireIfNeeded(): a resident key past its expire time is deleted (an expiration)."""
    if S.kv[k, KV_VPOS] >= 0 and now > S.expire[k]:  # vpos >= 0: resident with a TTL
        remove_key(S, k)
        S.cnt[C_EXPIRED] += 1
        return True
    return False


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
