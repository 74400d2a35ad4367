"""Prices in dollars, with presets: what memory and a miss cost, and the memory-budget regime.

Why presets: whether a bigger cache pays depends only on the ratio of the memory price to the miss
price times the request rate per byte of working set. At list prices (RAM ~$0.016/GiB-hour, one LLM
call ~$0.002) the largest allowed cache almost always wins, so sizing is interesting only with cheap
backends or huge key spaces — and under a memory budget the levers are the eviction policy and its
knobs. ``scaled`` keeps this project's small synthetic working sets in the interesting regime.

| preset | memory $/GiB-hour | $ per miss | stands for |
|---|---|---|---|
| ``list`` | 0.016 | 0.002 | cloud RAM list price, one LLM API call |
| ``scaled`` | 1000 | 0.002 | the same call, memory priced as if the working set were ~10^5x larger (this project's default ratio) |
| ``cheap-backend`` | 0.016 | 0.00002 | RAM list price, a small embedding model: 0.02 GPU-s at $3.6/GPU-hour |
| ``budget`` | 0 | 0.002 | memory capped at ``budget_bytes`` (or ``budget_fraction`` of the working set) and free below it: reward = misses + SLO |
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

PRESETS: dict[str, tuple[float, float]] = {
    "list": (0.016, 0.002),
    "scaled": (1000.0, 0.002),
    "cheap-backend": (0.016, 0.00002),
    "budget": (0.0, 0.002),
}


class PricesConfig(BaseModel):
    """``prices:`` of an env config, in dollars. Explicit fields override the preset's.

    Every cost term of the reward is then in dollars: a config change costs ``switch`` (default: one
    miss) and an interval over the p95 SLO ``slo_penalty`` (default 0: a miss is a ~1 s model call, so
    p95 breaches any cache-level SLO whenever more than 5 % of requests miss; breaches are still
    reported). A miss costs ``per_miss``, or ``gpu_seconds_per_miss * gpu_per_hour / 3600`` when both are given
    (a self-hosted model). ``randomize_memory`` multiplies the memory price by a log-uniform factor
    drawn per episode (training only: a policy that has seen many price ratios generalises to the one
    it is deployed at).
    """

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    preset: Literal["list", "scaled", "cheap-backend", "budget"] = "scaled"
    memory_per_gib_hour: float | None = Field(None, ge=0, description="$ per GiB of maxmemory per hour")
    per_miss: float | None = Field(None, gt=0, description="$ per backend (inference) call")
    gpu_seconds_per_miss: float | None = Field(None, gt=0)
    gpu_per_hour: float | None = Field(None, gt=0, description="$ per GPU-hour")
    budget_bytes: int | None = Field(None, ge=1, description="budget regime: the maxmemory cap")
    budget_fraction: float | None = Field(
        None, gt=0, description="budget regime: the maxmemory cap as a share of the workload's working set"
    )
    switch: float | None = Field(None, ge=0, description="$ per config change; None = the price of one miss")
    slo_penalty: float = Field(0.0, ge=0, description="$ per interval whose p95 exceeds the SLO")
    randomize_memory: tuple[float, float] | None = Field(
        None, description="[low, high] factor on the memory price, log-uniform per episode (training)"
    )

    @model_validator(mode="after")
    def _check(self) -> PricesConfig:
        if self.budget_bytes is not None and self.budget_fraction is not None:
            raise ValueError("budget_bytes and budget_fraction: set one")
        if self.preset == "budget" and self.budget is None:
            raise ValueError("preset 'budget' needs budget_bytes or budget_fraction")
        if (self.gpu_seconds_per_miss is None) != (self.gpu_per_hour is None):
            raise ValueError("gpu_seconds_per_miss and gpu_per_hour go together")
        if self.randomize_memory is not None and not 0 < self.randomize_memory[0] <= self.randomize_memory[1]:
            raise ValueError("randomize_memory must be [low, high] with 0 < low <= high")
        return self

    def resolve_all(self) -> dict[str, float]:
        """The reward fields these prices set: memory, miss, switch and SLO penalty, all in dollars."""
        mem, miss = self.resolve()
        return {"memory_cost_per_gb_hour": mem, "miss_cost": miss,
                "switch_cost": miss if self.switch is None else self.switch, "slo_penalty": self.slo_penalty}

    def resolve(self) -> tuple[float, float]:
        """``(memory $/GiB-hour, $ per miss)``."""
        mem, miss = PRESETS[self.preset]
        if self.memory_per_gib_hour is not None:
            mem = self.memory_per_gib_hour
        if self.gpu_seconds_per_miss is not None and self.gpu_per_hour is not None:
            miss = self.gpu_seconds_per_miss * self.gpu_per_hour / 3600.0
        if self.per_miss is not None:
            miss = self.per_miss
        if self.budget is not None:
            mem = 0.0
        return float(mem), float(miss)

    def budget_cap(self, working_set_bytes: int) -> int | None:
        """The budget in bytes for a workload of ``working_set_bytes`` (a share is of it); None outside the regime."""
        if self.budget_bytes is not None:
            return self.budget_bytes
        return int(self.budget_fraction * working_set_bytes) if self.budget_fraction is not None else None

    @property
    def budget(self) -> int | float | None:
        """The memory budget as given (bytes, or a share of the working set), None outside the regime."""
        return self.budget_bytes if self.budget_bytes is not None else self.budget_fraction


__all__ = ["PRESETS", "PricesConfig"]
