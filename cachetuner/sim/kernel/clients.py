"""Clients (networking.c): which connection a request arrives on, and the idle-timeout close."""

from __future__ import annotations

import numba as nb

from cachetuner.sim.kernel.common import _INLINE, _JIT, rng_uniform
from cachetuner.sim.slots import I_NCONN, Q_TIMEOUT


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
