"""What the sweep tests that train real trials share: the venv's binaries and a tiny env (seconds a trial)."""

from __future__ import annotations

import sys
from pathlib import Path

BIN = Path(sys.executable).parent

TINY_ENV = {
    "interval_s": 10, "episode_intervals": 12, "warmup_intervals": 1,
    "workloads": [{"trace": "synthetic:zipf", "name": "zipf", "rate": 200, "seed": 1,
                   "params": {"n_requests": 30000, "n_keys": 3000, "alpha": 0.9}}],
    "bounds": {"min_fraction": 0.05, "max_fraction": 1.0, "initial_fraction": 0.25},
    "actions": {"space": "discrete12"}, "whatif": {"enabled": False},
}  # fmt: skip
