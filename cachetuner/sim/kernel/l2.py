"""The optional second tier: an LRU (or FIFO) byte-capacity cache that takes L1's eviction victims.

Keys live in a doubly linked list (``l2prev`` / ``l2next``, head = most recent); L1 evictions are
demoted into it (:func:`l2_insert`), an L1 miss that finds the key here is served from it.
"""

from __future__ import annotations

import numba as nb

from cachetuner.sim.kernel.common import _JIT
from cachetuner.sim.slots import I_L2HEAD, I_L2N, I_L2TAIL, I_L2USED, P_L2_CAP


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
