"""Name registry of synthetic workloads: adding one is a generator function plus ``@register_workload``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from cachetuner.errors import UnknownTraceNameError
from cachetuner.registry import Registry
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
SYNTHETIC_WORKLOADS: Registry[Workload] = Registry("synthetic workload", error=UnknownTraceNameError)


def register_workload(name: str, params_model: type[WorkloadParams]) -> Callable[[Generator], Generator]:
    """Decorator: register ``fn(params, rng) -> Requests`` as ``synthetic:name`` (description from its docstring)."""

    def deco(fn: Generator) -> Generator:
        doc = (fn.__doc__ or "").strip().splitlines()
        SYNTHETIC_WORKLOADS.add(name, Workload(name, params_model, fn, doc[0] if doc else ""))
        return fn

    return deco


def get_workload(name: str, *, field: str | None = None) -> Workload:
    """The workload ``synthetic:name``; an unknown name raises a one-line ``UnknownTraceNameError``
    (a ``TraceError``) listing the valid names, prefixed with ``field`` when given."""
    return SYNTHETIC_WORKLOADS.get(name, field=field)
