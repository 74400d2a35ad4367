"""Seeded synthetic workloads (``synthetic:NAME``), registered by name in :data:`SYNTHETIC_WORKLOADS`."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from cachetuner.errors import TraceError
from cachetuner.traces.assemble import Columns, ReadOptions, build_trace
from cachetuner.traces.base import validate_params
from cachetuner.traces.sizes import parse_size_model
from cachetuner.traces.synthetic import composite, workloads  # noqa: F401  (registers workloads)
from cachetuner.traces.synthetic.common import Requests, WorkloadParams, ensure_fits
from cachetuner.traces.synthetic.registry import (
    SYNTHETIC_WORKLOADS,
    Workload,
    get_workload,
    register_workload,
)
from cachetuner.traces.trace import Trace

PREFIX = "synthetic:"

__all__ = [
    "PREFIX",
    "SYNTHETIC_WORKLOADS",
    "Requests",
    "Workload",
    "WorkloadParams",
    "generate",
    "load_workload_file",
    "register_workload",
]


def generate(name: str, params: dict | None, opts: ReadOptions, *, source: str | None = None) -> Trace:
    """Generate ``synthetic:name``; ``opts.rate`` overrides the ``rate`` param, ``opts.size_model`` the sizes."""
    w = get_workload(name)
    source = source or f"{PREFIX}{name}"
    raw = dict(params or {})
    if opts.rate is not None:
        raw["rate"] = opts.rate
    p = validate_params(w.params_model, raw, source)
    assert isinstance(p, WorkloadParams)
    ensure_fits(p, source)
    try:
        req = w.generate(p, np.random.default_rng(opts.seed))
    except ValueError as e:  # a nested phase's bad params
        raise TraceError(f"{source}: {e}") from None
    model = opts.size_model or parse_size_model(p.sizes)
    cols = Columns(keys=req.keys, timestamps=req.timestamps, ops=req.ops, ttls=req.ttls)
    gen_opts = ReadOptions(size_model=model, rate=None, seed=opts.seed, limit=opts.limit, start=opts.start)
    meta = {"format": "synthetic", "workload": name, "params": p.model_dump(mode="json")}
    trace = build_trace(f"{PREFIX}{name}", cols, gen_opts, meta)
    trace.meta["size_model"] = model.spec
    return trace


def load_workload_file(path: Path) -> tuple[str, dict]:
    """Read ``{synthetic: NAME, params: {...}}`` from a YAML file."""
    from cachetuner.yamlconfig import field_error, load_yaml

    data = load_yaml(path)
    unknown = set(data) - {"synthetic", "params"}
    if unknown:
        raise TraceError(
            field_error(path, sorted(unknown)[0], "unknown field (a workload file has 'synthetic' and 'params')")
        )
    name = data.get("synthetic")
    if not isinstance(name, str):
        raise TraceError(
            field_error(path, "synthetic", f"must name a workload ({', '.join(sorted(SYNTHETIC_WORKLOADS))})")
        )
    params = data.get("params") or {}
    if not isinstance(params, dict):
        raise TraceError(field_error(path, "params", "must be a mapping"))
    get_workload(name, field=f"{path}: field 'synthetic'")
    return name, params
