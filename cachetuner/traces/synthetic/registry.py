"""Name registry of synthetic workloads: adding one is a generator function plus ``@register_workload``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from cachetuner.errors import TraceError
from cachetuner.traces.synthetic.common import Requests, WorkloadParams

Generator = Callable[[WorkloadParams, np.random.Generator], Requests]


@dataclass(frozen=True)
class Workload:
    """A registered workload: its parameter model (extra="forbid") and a seeded, vectorised generator."""

    name: str
    params_model: type[WorkloadParams]
    generate: Generator
    description: str


#: ``synthetic:NAME`` -> workload.
SYNTHETIC_WORKLOADS: dict[str, Workload] = {}


def register_workload(name: str, params_model: type[WorkloadParams]) -> Callable[[Generator], Generator]:
    """Decorator: register ``fn(params, rng) -> Requests`` as ``synthetic:name`` (description from its docstring)."""

    def deco(fn: Generator) -> Generator:
        if name in SYNTHETIC_WORKLOADS:
            raise ValueError(f"synthetic workload {name!r} registered twice")
        doc = (fn.__doc__ or "").strip().splitlines()
        SYNTHETIC_WORKLOADS[name] = Workload(name, params_model, fn, doc[0] if doc else "")
        return fn

    return deco


def get_workload(name: str) -> Workload:
    try:
        return SYNTHETIC_WORKLOADS[name]
    except KeyError:
        valid = ", ".join(f"synthetic:{n}" for n in sorted(SYNTHETIC_WORKLOADS))
        raise TraceError(f"unknown synthetic workload {name!r}; valid: {valid}") from None
