"""``cachetuner bench daemon-costs``: how close the daemon's *estimated* saving comes to the *measured* one.

The daemon's ``estimated_saving`` (daemon/costs.py) prices the config in force and the baseline on the curves; it
is what an operator reads on the dashboard. Whether it can be trusted is a measurement: run an ``mrc`` (or ``ppo``)
daemon and a ``static-default`` daemon (the baseline held) on the same simulated traffic, and compare the estimate
with ``1 - cost(tuned) / cost(static-default)`` from the two daemons' measured costs. Simulated targets only (a live pair
would need two Redis servers fed the same traffic; the live path's cost terms are the same code).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from cachetuner.daemon.config import DaemonConfig
from cachetuner.daemon.loop import Daemon

MB = 1_000_000
#: (name, workload spec relative to the shared traces folder where it is a file)
WORKLOADS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("synthetic zipf 0.9, llm sizes, 500 req/s",
     {"trace": "synthetic:zipf", "params": {"n_requests": 600_000, "n_keys": 50_000, "rate": 500, "alpha": 0.9},
      "size_model": "llm"}),
    ("synthetic shifting, llm sizes, 500 req/s",
     {"trace": "synthetic:shifting", "params": {"n_requests": 600_000, "rate": 500}, "size_model": "llm"}),
    ("cache2k web12, 4 KiB, 100 req/s",
     {"trace": "cache2k/web12.trace", "format": "raw-be-i4", "size_model": "fixed:4096", "rate": 100}),
    ("CloudPhysics, 4 KiB, 100 req/s",
     {"trace": "cloudphysics/cloudPhysicsIO.oracleGeneral.bin", "size_model": "fixed:4096", "rate": 100}),
    ("ARC P3, 4 KiB, 300 req/s", {"trace": "arc/P3.lis", "format": "arc", "size_model": "fixed:4096", "rate": 300}),
)
BOUNDS = (4 * MB, 400 * MB)
BASELINE = 100 * MB


def _summary(policy: str, workload: dict[str, Any], prices: str, intervals: int, work: Path) -> dict[str, Any]:
    """One daemon on a simulated target over ``intervals`` intervals of 60 s; its cost meter's summary. ``ppo`` runs
    the shipped policy over its own env config at ``prices`` (``policy.prices``); the others over the target's env."""
    env = {"workloads": [workload], "interval_s": 60, "episode_intervals": None, "warmup_intervals": 0,
           "bounds": {"min_bytes": BOUNDS[0], "max_bytes": BOUNDS[1], "initial_bytes": BASELINE},
           "whatif": {"enabled": False}, "prices": {"preset": prices}}
    env_yaml = work / f"{policy}-env.yaml"
    env_yaml.write_text(yaml.safe_dump({"env": env}))
    decider: dict[str, Any] = ({"name": "ppo", "model": "default", "prices": {"preset": prices}} if policy == "ppo"
                               else {"name": policy, "env_config": str(env_yaml)})
    cfg = DaemonConfig.model_validate({
        "interval_s": 0.001, "state_dir": str(work / policy), "http": {"enabled": False},
        "tracking": {"enabled": False}, "hotness": {"enabled": False},
        "policy": decider, "max_iterations": intervals,
        "targets": [{"name": "t", "backend": "sim", "backend_options": {"env": env},
                     "bounds": {"maxmemory_min": BOUNDS[0], "maxmemory_max": BOUNDS[1],
                                "policies": ["allkeys-lru", "allkeys-lfu"], "timeouts": [0]}}],
    })
    d = Daemon(cfg)
    d.run()
    costs = d.runners[0].costs
    assert costs is not None
    return costs.summary()


def bench_daemon_costs(
    traces_dir: Path,
    *,
    prices: tuple[str, ...] = ("scaled", "cheap-backend"),
    intervals: int = 80,
    policy: str = "mrc",
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Estimated vs measured saving of a ``policy`` daemon (``mrc``, or ``ppo``: the shipped policy, the daemon's
    default) for every workload x price preset; a workload whose trace file is missing is reported as such (not
    dropped)."""
    rows: list[dict[str, Any]] = []
    for name, spec in WORKLOADS:
        wl = dict(spec)
        if not wl["trace"].startswith("synthetic:"):
            path = traces_dir / wl["trace"]
            if not path.is_file():
                rows.append({"workload": name, "missing": str(path)})
                continue
            wl["trace"] = str(path)
        for p in prices:
            if progress is not None:
                progress(f"{name} at {p} prices")
            with tempfile.TemporaryDirectory(prefix="cachetuner-bench-") as tmp:
                tuned = _summary(policy, wl, p, intervals, Path(tmp))
                held = _summary("static-default", wl, p, intervals, Path(tmp))
            measured = 1.0 - tuned["measured_cost"] / held["measured_cost"] if held["measured_cost"] > 0 else None
            est = tuned["estimated_saving"]
            rows.append({"workload": name, "prices": p, "intervals": intervals, "estimated_saving": est,
                         "measured_saving": measured,
                         "error_pp": None if est is None or measured is None else 100.0 * (est - measured)})
    errs = [abs(r["error_pp"]) for r in rows if r.get("error_pp") is not None]
    return {"rows": rows, "summary": {
        "cells": len([r for r in rows if "missing" not in r]), "estimated": len(errs),
        "mean_abs_error_pp": sum(errs) / len(errs) if errs else None, "max_abs_error_pp": max(errs, default=None),
        "bounds_bytes": list(BOUNDS), "baseline_bytes": BASELINE, "interval_s": 60, "policy": policy}}


__all__ = ["WORKLOADS", "bench_daemon_costs"]
