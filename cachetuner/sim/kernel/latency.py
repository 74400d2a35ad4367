"""The latency model: per-request network / L1 / L2 / backend times and the latency histogram.

The main loop inlines these on its hot path (see :func:`.loop.run_requests`); they are the
reference for what it computes.
"""

from __future__ import annotations

import numba as nb

from cachetuner.sim.kernel.common import _INLINE, rng_uniform
from cachetuner.sim.slots import FC_LATSUM_MS, P_LATENCY, Q_MISS_MS


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
def latency_bucket(bounds, sec):
    """The histogram bucket of ``sec``: how many of the (ascending) bounds lie below it.

    The same index as scanning up to the first bound >= ``sec``, but counted over all of them:
    vector compares and no branch to mispredict where hits and misses land ten buckets apart
    (8.5 vs 16.4 ns a request with a third misses). The length must stay a run-time value:
    with the constant 21 numba unrolls the loop into 21 scalar compares (18 ns).
    """
    b = 0
    for j in range(bounds.shape[0]):
        b += sec > bounds[j]
    return b


@nb.njit(**_INLINE)
def record_latency(S, ms):
    S.fcnt[FC_LATSUM_MS] += ms
    S.hist[latency_bucket(S.bounds, ms * 0.001)] += 1
