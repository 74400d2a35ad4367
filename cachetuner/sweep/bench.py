"""``cachetuner bench sweep``: the same evaluation suite serially and as Ray tasks, side by side.

Both runs happen in one invocation on the same machine and the same suite, so the ratio is the
comparison (absolute seconds move with load). ``speedup`` counts starting Ray locally with N workers
(what a user pays for ``--ray-address local``), ``speedup_after_startup`` does not (a cluster that is
already up); the workers' first imports count in both. The cells' results are compared too (they
must be identical, per-controller timings aside).
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console

from cachetuner.cluster import connected
from cachetuner.reports.suite import run_suite


def comparable(cells: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Cells without the per-controller wall times (the only field that differs between runs)."""
    return [{**c, "tuners": {t: {k: v for k, v in s.items() if k != "seconds"} for t, s in c["tuners"].items()}}
            for c in cells]


def bench_suite(suite: Path, *, workers: int = 2, console: Console | None = None) -> dict[str, Any]:
    console = console or Console(stderr=True)
    with tempfile.TemporaryDirectory() as d:
        uri = f"sqlite:///{Path(d) / 'mlflow.db'}"
        t0 = time.perf_counter()
        serial = run_suite(suite, tracking_uri=uri, console=console)
        t_serial = time.perf_counter() - t0
        t0 = time.perf_counter()
        with connected("local", num_cpus=workers):
            t_start = time.perf_counter() - t0
            ray = run_suite(suite, tracking_uri=uri, console=console, ray_address="local", num_cpus=workers)
            t_ray = time.perf_counter() - t0
    return {
        "suite": serial["suite"],
        "cells": len(serial["cells"]),
        "workers": workers,
        "cpus": os.cpu_count(),
        "serial_seconds": round(t_serial, 2),
        "ray_seconds": round(t_ray, 2),
        "ray_startup_seconds": round(t_start, 2),
        "speedup": round(t_serial / t_ray, 3),
        "speedup_after_startup": round(t_serial / max(t_ray - t_start, 1e-9), 3),
        "identical": comparable(serial["cells"]) == comparable(ray["cells"]),
        "load_average_1m": round(os.getloadavg()[0], 2),
    }
