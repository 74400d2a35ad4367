"""Shared pytest fixtures.

Real public traces live in ``../shared/traces`` next to the repository (read-only); override with
``CACHETUNER_SHARED_TRACES``. Tests that need them fail loudly when they are missing — never skip.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_TRACES = Path(os.environ.get("CACHETUNER_SHARED_TRACES", REPO.parent / "shared" / "traces"))


@pytest.fixture(scope="session")
def shared_traces() -> Path:
    assert SHARED_TRACES.is_dir(), f"shared traces not found at {SHARED_TRACES} (set CACHETUNER_SHARED_TRACES)"
    return SHARED_TRACES


@pytest.fixture(autouse=True, scope="session")
def _one_torch_thread() -> None:
    """PPO and LSTM on 2 cores: one thread is 10-60x faster than two here."""
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:
        pass
