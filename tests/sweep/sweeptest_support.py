"""What the sweep tests share: the venv's binaries, a tiny env (seconds a trial) and a sweep file over an env."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml

BIN = Path(sys.executable).parent

TINY_ENV = {
    "interval_s": 10, "episode_intervals": 12, "warmup_intervals": 1,
    "workloads": [{"trace": "synthetic:zipf", "name": "zipf", "rate": 200, "seed": 1,
                   "params": {"n_requests": 30000, "n_keys": 3000, "alpha": 0.9}}],
    "bounds": {"min_fraction": 0.05, "max_fraction": 1.0, "initial_fraction": 0.25},
    "actions": {"space": "discrete12"}, "whatif": {"enabled": False},
}  # fmt: skip


def sweep_yaml(tmp_path: Path, env: dict[str, Any], **over: object) -> Path:
    """A two-trial sweep file over ``env`` (one search key), with ``over``'s top-level fields replacing its own."""
    doc = {"name": "t", "num_trials": 2, "search": {"ppo.learning_rate": {"loguniform": [1e-4, 1e-3]}},
           "train": {"total_timesteps": 1024, "env": env, "eval": {"eval_freq": 512}}}
    doc.update(over)
    p = tmp_path / "sweep.yaml"
    p.write_text(yaml.safe_dump(doc))
    return p
