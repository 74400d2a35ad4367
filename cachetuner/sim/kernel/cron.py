"""The server crons between requests: active expiry ticks, clientsCron (idle timeouts), dict shrink."""

from __future__ import annotations

import math

import numba as nb

from cachetuner.sim.kernel.clients import close_idle_clients
from cachetuner.sim.kernel.common import _INLINE, _JIT
from cachetuner.sim.kernel.dictmodel import dict_try_shrink
from cachetuner.sim.kernel.expire import active_expire_cycle
from cachetuner.sim.slots import (
    F_NEXT_EVENT,
    F_NOW,
    I_AE_TICK,
    I_CRON_SEC,
    I_NCONN,
    I_NVOL,
    I_STARTED,
    P_AE_CATCHUP,
    P_AE_ON,
    Q_AE_PERIOD,
)


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
