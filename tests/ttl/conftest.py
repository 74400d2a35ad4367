"""Fixtures of the TTL-policy tests: a tiny untrained LSTM saved as model.pt, a small real trace."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from cachetuner.hotness_model.model import HotnessLSTM, LSTMConfig
from cachetuner.hotness_model.train import save_model
from cachetuner.traces import read_trace
from cachetuner.traces.trace import Trace


@pytest.fixture(scope="session")
def tiny_hotness_pt(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch.manual_seed(3)
    cfg = LSTMConfig(seq_len=16, hidden=8, layers=1)
    return save_model(HotnessLSTM(cfg), tmp_path_factory.mktemp("ttl-hotness"), {"seq_len": cfg.seq_len})


@pytest.fixture(scope="session")
def web07() -> Trace:
    """20k requests of the bundled web07 excerpt at 20 req/s (1000 s: TTLs of minutes matter)."""
    return read_trace("bundled:web07", size_model="fixed:2000", rate=20.0, limit=20_000)
