"""The built-in synthetic workloads. Each is seeded (only ``rng`` draws) and vectorised numpy.

Raw key ids are popularity ranks passed through a random permutation, so key id carries no
popularity information once the trace is renumbered by first appearance.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field, model_validator

from cachetuner.traces.synthetic.common import (
    Requests,
    WorkloadParams,
    poisson_times,
    sinusoidal_times,
    zipf_ranks,
)
from cachetuner.traces.synthetic.registry import register_workload
from cachetuner.traces.trace import Op


class ZipfParams(WorkloadParams):
    pass


@register_workload("zipf", ZipfParams)
def zipf(p: WorkloadParams, rng: np.random.Generator) -> Requests:
    """Independent requests, Zipf(alpha) popularity over n_keys, Poisson arrivals; read-only."""
    ranks = zipf_ranks(rng, p.n_requests, p.n_keys, p.alpha)
    perm = rng.permutation(p.n_keys)
    return Requests(timestamps=poisson_times(rng, p.n_requests, p.rate), keys=perm[ranks])


class DriftParams(WorkloadParams):
    drift_per_1k: float = Field(1.0, ge=0.0, description="popularity ranks shifted per 1000 requests")


@register_workload("zipf-drift", DriftParams)
def zipf_drift(p: WorkloadParams, rng: np.random.Generator) -> Requests:
    """Zipf whose ranking slides gradually: new keys enter at the top, every key cools one rank at a time."""
    assert isinstance(p, DriftParams)
    ranks = zipf_ranks(rng, p.n_requests, p.n_keys, p.alpha)
    shift = np.floor(np.arange(p.n_requests) * (p.drift_per_1k / 1000.0)).astype(np.int64)
    perm = rng.permutation(p.n_keys)
    return Requests(
        timestamps=poisson_times(rng, p.n_requests, p.rate), keys=perm[(ranks - shift) % p.n_keys]
    )


class DiurnalParams(WorkloadParams):
    period_s: float = Field(600.0, gt=0.0, description="period of the request-rate cycle (s)")
    amplitude: float = Field(0.6, ge=0.0, lt=1.0, description="relative swing of the rate around its mean")


@register_workload("diurnal", DiurnalParams)
def diurnal(p: WorkloadParams, rng: np.random.Generator) -> Requests:
    """Zipf popularity with a sinusoidal request rate: rate * (1 + amplitude * sin(2 pi t / period_s))."""
    assert isinstance(p, DiurnalParams)
    ranks = zipf_ranks(rng, p.n_requests, p.n_keys, p.alpha)
    perm = rng.permutation(p.n_keys)
    times = sinusoidal_times(rng, p.n_requests, p.rate, p.amplitude, p.period_s)
    return Requests(timestamps=times, keys=perm[ranks])


class ScanParams(WorkloadParams):
    scan_every: int = Field(50_000, gt=0, description="Zipf requests between two scans")
    scan_length: int = Field(10_000, gt=0, description="sequential cold keys read by one scan")
    cold_keys: int = Field(
        200_000, gt=0, description="cold keys (outside the Zipf universe) that scans walk through"
    )


@register_workload("scan", ScanParams)
def scan(p: WorkloadParams, rng: np.random.Generator) -> Requests:
    """Zipf traffic interrupted every scan_every requests by a sequential scan of scan_length cold keys."""
    assert isinstance(p, ScanParams)
    n = p.n_requests
    pos = np.arange(n, dtype=np.int64)
    in_scan = (pos % (p.scan_every + p.scan_length)) >= p.scan_every
    scan_idx = np.cumsum(in_scan) - 1
    perm = rng.permutation(p.n_keys)
    keys = perm[zipf_ranks(rng, n, p.n_keys, p.alpha)]
    keys = np.where(in_scan, p.n_keys + scan_idx % p.cold_keys, keys)
    return Requests(timestamps=poisson_times(rng, n, p.rate), keys=keys)


class PhaseShiftParams(WorkloadParams):
    shift_times: list[float] | None = Field(
        None,
        description="seconds from the start at which the hot set is replaced; default: n_phases equal parts",
    )
    n_phases: int = Field(
        4, gt=0, le=10_000, description="phases of equal length when shift_times is not given"
    )

    @model_validator(mode="after")
    def _sorted(self) -> PhaseShiftParams:
        if self.shift_times is not None and any(
            b <= a for a, b in zip(self.shift_times, self.shift_times[1:], strict=False)
        ):
            raise ValueError("shift_times must be strictly increasing")
        return self


@register_workload("phase-shift", PhaseShiftParams)
def phase_shift(p: WorkloadParams, rng: np.random.Generator) -> Requests:
    """Zipf whose rank-to-key mapping is redrawn at each shift: the hot set is replaced abruptly."""
    assert isinstance(p, PhaseShiftParams)
    n = p.n_requests
    times = poisson_times(rng, n, p.rate)
    if p.shift_times is not None:
        phase = np.searchsorted(np.asarray(p.shift_times, dtype=np.float64), times, side="right")
    else:
        phase = np.arange(n, dtype=np.int64) * p.n_phases // n
    ranks = zipf_ranks(rng, n, p.n_keys, p.alpha)
    keys = np.empty(n, dtype=np.int64)
    bounds = np.searchsorted(phase, np.arange(int(phase[-1]) + 2), side="left")
    for k in range(len(bounds) - 1):
        sl = slice(bounds[k], bounds[k + 1])
        keys[sl] = rng.permutation(p.n_keys)[ranks[sl]]
    return Requests(timestamps=times, keys=keys)


class MixedTtlParams(WorkloadParams):
    ttls: list[float] = Field(
        [0.0, 60.0, 600.0, 3600.0], min_length=1, description="TTL classes in seconds (0 = none)"
    )
    ttl_weights: list[float] = Field(
        [0.25, 0.25, 0.25, 0.25], min_length=1, description="share of keys per TTL class"
    )

    @model_validator(mode="after")
    def _consistent(self) -> MixedTtlParams:
        if len(self.ttls) != len(self.ttl_weights):
            raise ValueError(f"ttls has {len(self.ttls)} entries but ttl_weights has {len(self.ttl_weights)}")
        if (
            any(t < 0 for t in self.ttls)
            or any(w < 0 for w in self.ttl_weights)
            or sum(self.ttl_weights) <= 0
        ):
            raise ValueError("ttls and ttl_weights must be >= 0 and the weights must not all be 0")
        return self


@register_workload("mixed-ttl", MixedTtlParams)
def mixed_ttl(p: WorkloadParams, rng: np.random.Generator) -> Requests:
    """Zipf where each key belongs to a TTL class (e.g. 0/60/600/3600 s) applied on every fill."""
    assert isinstance(p, MixedTtlParams)
    base = zipf(p, rng)
    w = np.asarray(p.ttl_weights, dtype=np.float64)
    key_class = rng.choice(len(p.ttls), size=p.n_keys, p=w / w.sum())
    base.ttls = np.asarray(p.ttls, dtype=np.float64)[key_class][base.keys]
    return base


class ReadWriteParams(WorkloadParams):
    get_ratio: float = Field(0.8, ge=0.0, description="share of GET")
    set_ratio: float = Field(0.15, ge=0.0, description="share of SET")
    delete_ratio: float = Field(0.05, ge=0.0, description="share of DELETE")
    ttl: float = Field(0.0, ge=0.0, description="TTL in seconds on every SET / fill (0 = none)")

    @model_validator(mode="after")
    def _sum(self) -> ReadWriteParams:
        if abs(self.get_ratio + self.set_ratio + self.delete_ratio - 1.0) > 1e-6:
            raise ValueError("get_ratio + set_ratio + delete_ratio must be 1")
        return self


@register_workload("read-write", ReadWriteParams)
def read_write(p: WorkloadParams, rng: np.random.Generator) -> Requests:
    """Zipf keys with a GET/SET/DELETE mix drawn independently per request."""
    assert isinstance(p, ReadWriteParams)
    base = zipf(p, rng)
    probs = np.array([p.get_ratio, p.set_ratio, p.delete_ratio])
    base.ops = rng.choice(
        np.array([Op.GET, Op.SET, Op.DELETE], dtype=np.uint8), size=p.n_requests, p=probs / probs.sum()
    )
    base.ttls = np.full(p.n_requests, p.ttl, dtype=np.float64)
    return base
