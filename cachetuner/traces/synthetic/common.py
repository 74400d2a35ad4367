"""Vectorised building blocks for synthetic workloads: Zipf ranks, arrival processes, base params."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from cachetuner.errors import TraceError
from cachetuner.resources import format_bytes, memory_available
from cachetuner.traces.sizes import parse_size_model
from cachetuner.traces.streams import READ_BYTES_PER_REQUEST, READ_MEMORY_SHARE

#: Peak bytes per key of the Zipf universe while generating (weights, CDF, permutation, sizes, key names).
GEN_BYTES_PER_KEY = 48


@dataclass
class Requests:
    """What a workload generator returns; sizes are drawn per key afterwards from ``params.sizes``.

    ``keys`` are raw ids: ``0..n_keys-1`` for the Zipf universe, ``>= n_keys`` for keys outside it
    (scan keys). ``ops`` / ``ttls`` are ``None`` for all-GET / no TTL.
    """

    timestamps: np.ndarray
    keys: np.ndarray
    ops: np.ndarray | None = None
    ttls: np.ndarray | None = None


def no_bools(model: type[BaseModel], v: object, info: ValidationInfo) -> object:
    """Refuse ``true``/``false`` (and lists holding them) for a field that is not a bool: pydantic reads True as
    1, so ``n_requests: true`` would be one request, without a word."""
    field = model.model_fields.get(info.field_name or "")
    if field is None or field.annotation is bool:
        return v
    if isinstance(v, bool) or (isinstance(v, list | tuple) and any(isinstance(x, bool) for x in v)):
        raise ValueError(f"must be a number, not {str(v).lower()}")
    return v


class WorkloadParams(BaseModel):
    """Parameters every workload shares. Floats must be finite (``.inf`` / ``.nan`` in YAML are refused: an
    infinite alpha is one hot key, an infinite rate a trace of zero duration) and numbers are not bools."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    n_requests: int = Field(1_000_000, gt=0, description="requests to generate")
    n_keys: int = Field(100_000, gt=0, description="size of the Zipf key universe")
    alpha: float = Field(1.0, ge=0.0, description="Zipf exponent (0 = uniform)")
    rate: float = Field(1000.0, gt=0.0, description="mean requests per second (Poisson arrivals)")
    sizes: str = Field("fixed:4096", description="size model spec, drawn once per key")

    @field_validator("*", mode="before")
    @classmethod
    def _no_bools(cls, v: object, info: ValidationInfo) -> object:
        return no_bools(cls, v, info)

    @field_validator("sizes")
    @classmethod
    def _valid_sizes(cls, v: str) -> str:
        try:
            parse_size_model(v)
        except TraceError as e:
            raise ValueError(str(e)) from None
        return v


def ensure_fits(p: WorkloadParams, source: str, available: int | None = None) -> None:
    """Stop, with one line naming the parameter, before generating a workload that would not fit in the memory
    available (``available``: bytes, default :func:`cachetuner.resources.memory_available`). Why: the arrays are
    allocated whole up front, so ``n_requests: 1000000000000`` is otherwise numpy's multi-line allocation error
    (or the kernel's OOM kill). The same budget as a trace file's read (:class:`MemoryGuard`)."""
    avail = memory_available() if available is None else available
    if avail is None:
        return
    budget = int(avail * READ_MEMORY_SHARE)
    per_request, per_key = p.n_requests * READ_BYTES_PER_REQUEST, p.n_keys * GEN_BYTES_PER_KEY
    if per_request + per_key <= budget:
        return
    if per_request >= per_key:
        what, fits = f"param 'n_requests': {p.n_requests:,} requests", budget // READ_BYTES_PER_REQUEST
    else:
        what, fits = f"param 'n_keys': {p.n_keys:,} keys", budget // GEN_BYTES_PER_KEY
    raise TraceError(
        f"{source}: {what} need ~{format_bytes(per_request + per_key)} of memory to generate, more than the "
        f"{format_bytes(budget)} available here; lower it (at most ~{fits:,})"
    )


def zipf_ranks(rng: np.random.Generator, n: int, n_keys: int, alpha: float) -> np.ndarray:
    """``n`` popularity ranks in ``0..n_keys-1`` with P(r) proportional to (r+1)^-alpha (inverse CDF)."""
    weights = np.arange(1, n_keys + 1, dtype=np.float64) ** -alpha
    cdf = np.cumsum(weights)
    cdf /= cdf[-1]
    ranks = np.searchsorted(cdf, rng.random(n), side="right")
    return np.minimum(ranks, n_keys - 1).astype(np.int64)


def poisson_times(rng: np.random.Generator, n: int, rate: float) -> np.ndarray:
    """Arrival times of a Poisson process at ``rate``/s, first arrival at 0."""
    gaps = rng.exponential(1.0 / rate, n)
    gaps[0] = 0.0
    return np.cumsum(gaps)


def sinusoidal_times(
    rng: np.random.Generator, n: int, rate: float, amplitude: float, period_s: float
) -> np.ndarray:
    """Non-homogeneous Poisson arrivals with rate ``rate * (1 + amplitude * sin(2 pi t / period))``.

    Unit-rate arrivals are mapped through the inverse of the cumulative intensity, tabulated on a
    grid and interpolated (approximate to well below one inter-arrival gap).
    """
    unit = np.cumsum(rng.exponential(1.0, n))
    unit -= unit[0]
    horizon = unit[-1] / (rate * (1.0 - amplitude)) + period_s
    steps = int(min(max(horizon / period_s * 512, 4096), 4_000_000))
    grid = np.linspace(0.0, horizon, steps)
    w = 2.0 * np.pi / period_s
    cumulative = rate * (grid + amplitude / w * (1.0 - np.cos(w * grid)))
    return np.interp(unit, cumulative, grid)
