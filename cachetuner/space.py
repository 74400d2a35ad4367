"""The configuration space a controller may choose from (bounds and choices of one episode or target).

Memory bounds are resolved per workload (fractions of its working set) or per daemon target; policies
and timeouts are the ones the action space can express, so that no baseline can pick a configuration
the learned policy could not reach.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cachetuner.config import RedisConfig


@dataclass(frozen=True)
class ConfigSpace:
    min_bytes: int
    max_bytes: int
    policies: tuple[str, ...]
    timeouts: tuple[int, ...]

    def sizes(self, n: int) -> list[int]:
        """``n`` sizes, geometric between the bounds (both included)."""
        return [int(round(x)) for x in np.geomspace(self.min_bytes, self.max_bytes, n)]

    def clip(self, maxmemory: float) -> int:
        return int(min(max(int(maxmemory), self.min_bytes), self.max_bytes))

    def grid(
        self, template: RedisConfig, n_sizes: int, policies: list[str] | None = None, timeouts: list[int] | None = None
    ) -> list[RedisConfig]:
        """Sizes x policies x timeouts; other knobs (samples, LFU factors) from ``template``."""
        return [
            template.evolve(maxmemory=m, maxmemory_policy=p, timeout=t)
            for m in self.sizes(n_sizes)
            for p in (policies or list(self.policies))
            for t in (timeouts or list(self.timeouts))
        ]

    def contains(self, cfg: RedisConfig) -> bool:
        return self.min_bytes <= cfg.maxmemory <= self.max_bytes and cfg.maxmemory_policy in self.policies
