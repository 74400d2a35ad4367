"""Curves of a whole trace from one sampled pass: what a controller's estimator would read at the end of
the trace if its window never forgot anything.

Shared by ``bench mrc`` (which compares them with full simulations) and ``recommend`` (which prices them).
The estimator is the online one, fed in chunks, so an offline answer carries exactly the sampling error
the controllers live with.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from cachetuner.backend import RequestSample
from cachetuner.mrc.config import MRCConfig
from cachetuner.mrc.curves import MissRatioCurves
from cachetuner.mrc.estimator import MRCEstimator
from cachetuner.sim.params import SimParams
from cachetuner.sim.sizing import full_size
from cachetuner.traces.trace import Trace

#: Requests fed to the estimator at a time (its update granularity; the window never forgets here).
CHUNK = 20_000


def default_bounds(trace: Trace, params: SimParams) -> tuple[int, int]:
    """The env's default bounds: 2 % to 100 % of the working set (``env.bounds``)."""
    ws = full_size(trace, params)
    return max(int(0.02 * ws), 1), ws


def whole_trace_curves(
    trace: Trace,
    cfg: MRCConfig,
    params: SimParams,
    bounds: tuple[int, int],
    *,
    chunk: int = CHUNK,
    on_chunk: Callable[[int], None] | None = None,
    knob_size: int | None = None,
) -> tuple[MissRatioCurves, MRCEstimator]:
    """Feed all of ``trace`` to a fresh estimator with a window that never forgets; the curves and the estimator.

    ``on_chunk(n)`` is called with the requests fed so far (progress); ``knob_size``: measure ``cfg.knob_variants``
    at that size (a budget's cap)."""
    ws = full_size(trace, params)
    obj = (ws - params.fixed_bytes) / max(trace.n_keys, 1)
    cfg = cfg.model_copy(update={"half_life_gets": 1e15})  # whole-trace window
    est = MRCEstimator(cfg, bounds, n_keys_hint=trace.n_keys, mean_object_bytes=obj, sim_params=params,
                       key_bytes=int(np.mean(trace.key_bytes)) if trace.n_keys else None, read_only=trace.read_only,
                       knob_size=knob_size)
    n = len(trace)
    for i in range(0, n, chunk):
        j = min(n, i + chunk)
        est.update(RequestSample(keys=trace.keys[i:j], sizes=trace.sizes[i:j], timestamps=trace.timestamps[i:j],
                                 ops=trace.ops[i:j], ttls=trace.ttls[i:j], rate=1.0))
        if on_chunk is not None:
            on_chunk(j)
    return est.curves(), est


__all__ = ["CHUNK", "default_bounds", "whole_trace_curves"]
