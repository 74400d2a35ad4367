"""Redis-faithful tiered cache simulator (numba-compiled).

Public API::

    from cachetuner.sim import TieredCacheSim, SimParams, simulate, SimResult
"""

from cachetuner.sim.params import (
    ActiveExpireParams,
    ClientParams,
    CostParams,
    L2Params,
    LatencyParams,
    MemoryParams,
    SimParams,
)
from cachetuner.sim.policies import POLICIES, PolicySpec, get_policy
from cachetuner.sim.result import SimResult, simulate
from cachetuner.sim.simulator import SimCounts, TieredCacheSim

__all__ = [
    "ActiveExpireParams",
    "ClientParams",
    "CostParams",
    "L2Params",
    "LatencyParams",
    "MemoryParams",
    "POLICIES",
    "PolicySpec",
    "SimCounts",
    "SimParams",
    "SimResult",
    "TieredCacheSim",
    "get_policy",
    "simulate",
]
