"""``shifting``: phases of other workloads back to back — the RL training distribution.

The default run goes drift -> abrupt hot-set shift -> scans -> diurnal load, each phase with its
own Zipf alpha (drawn from ``alpha_range`` unless the phase sets one) and its own permutation of
the shared key universe, so the hot set also moves at every phase boundary. A tuner trained on it
sees slow change, sudden change, cache pollution and load swings in one episode stream.
"""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from cachetuner.errors import TraceError
from cachetuner.traces.base import validate_params
from cachetuner.traces.synthetic.common import Requests, WorkloadParams, no_bools
from cachetuner.traces.synthetic.registry import get_workload, register_workload
from cachetuner.traces.trace import Op


class PhaseSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    workload: str = Field(description="a registered workload name (not 'shifting')")
    fraction: float = Field(gt=0.0, description="share of n_requests in this phase (normalised over phases)")
    params: dict = Field(
        default_factory=dict, description="that workload's params (n_keys/n_requests/rate/sizes are set here)"
    )

    @field_validator("*", mode="before")
    @classmethod
    def _no_bools(cls, v: object, info: ValidationInfo) -> object:
        return no_bools(cls, v, info)


def _default_phases() -> list[PhaseSpec]:
    return [
        PhaseSpec(workload="zipf-drift", fraction=0.25, params={"drift_per_1k": 2.0}),
        PhaseSpec(workload="phase-shift", fraction=0.25, params={"n_phases": 3}),
        PhaseSpec(workload="scan", fraction=0.25, params={"scan_every": 40_000, "scan_length": 8_000}),
        PhaseSpec(workload="diurnal", fraction=0.25, params={"period_s": 200.0, "amplitude": 0.7}),
    ]


class ShiftingParams(WorkloadParams):
    n_requests: int = Field(2_000_000, gt=0, description="requests over all phases")
    sizes: str = Field("llm", description="size model spec, drawn once per key")
    phases: list[PhaseSpec] = Field(
        default_factory=_default_phases, min_length=1, description="phases in order"
    )
    alpha_range: tuple[float, float] | None = Field(
        (0.7, 1.2),
        description="Zipf alpha drawn per phase unless the phase sets it; null: every phase uses alpha",
    )

    @model_validator(mode="after")
    def _check(self) -> ShiftingParams:
        lo, hi = self.alpha_range or (self.alpha, self.alpha)
        if not 0.0 <= lo <= hi:
            raise ValueError("alpha_range must be [low, high] with 0 <= low <= high")
        for i, ph in enumerate(self.phases):
            if ph.workload == "shifting":
                raise ValueError(f"phases[{i}]: 'shifting' cannot be nested")
            try:
                w = get_workload(ph.workload, field=f"phases[{i}].workload")
            except TraceError as e:
                raise ValueError(str(e)) from None
            fixed = {"n_keys", "n_requests", "rate", "sizes"} & set(ph.params)
            if not fixed:
                try:
                    validate_params(w.params_model, ph.params, f"phases[{i}] ({ph.workload})")
                except TraceError as e:
                    raise ValueError(str(e)) from None
            if fixed:
                raise ValueError(
                    f"phases[{i}]: {', '.join(sorted(fixed))} cannot be set per phase (the composite sets them)"
                )
        return self


@register_workload("shifting", ShiftingParams)
def shifting(p: WorkloadParams, rng: np.random.Generator) -> Requests:
    """Composite: phases (drift, shifts, scans, diurnal by default) back to back on one key universe."""
    assert isinstance(p, ShiftingParams)
    weights = np.array([ph.fraction for ph in p.phases])
    counts = np.floor(weights / weights.sum() * p.n_requests).astype(np.int64)
    counts[-1] += p.n_requests - counts.sum()
    parts: list[Requests] = []
    t0 = 0.0
    for i, (ph, n) in enumerate(zip(p.phases, counts, strict=True)):
        if n <= 0:
            continue
        w = get_workload(ph.workload)
        alpha = float(rng.uniform(*p.alpha_range)) if p.alpha_range is not None else p.alpha
        sub = {"alpha": alpha, **ph.params, "n_keys": p.n_keys, "n_requests": int(n), "rate": p.rate}
        try:
            params = validate_params(w.params_model, sub, f"synthetic:shifting phases[{i}] ({ph.workload})")
        except TraceError as e:
            raise ValueError(str(e)) from None
        assert isinstance(params, WorkloadParams)
        req = w.generate(params, rng)
        perm = rng.permutation(p.n_keys)
        inside = req.keys < p.n_keys
        keys = np.where(inside, perm[np.minimum(req.keys, p.n_keys - 1)], req.keys)
        ts = req.timestamps - req.timestamps[0] + t0
        t0 = float(ts[-1]) + 1.0 / p.rate
        ops = req.ops if req.ops is not None else np.full(n, Op.GET, dtype=np.uint8)
        ttls = req.ttls if req.ttls is not None else np.zeros(n, dtype=np.float64)
        parts.append(Requests(timestamps=ts, keys=keys, ops=ops, ttls=ttls))
    return Requests(
        timestamps=np.concatenate([r.timestamps for r in parts]),
        keys=np.concatenate([r.keys for r in parts]),
        ops=np.concatenate([r.ops for r in parts if r.ops is not None]),
        ttls=np.concatenate([r.ttls for r in parts if r.ttls is not None]),
    )
