"""Fixtures for the hotness tests: a tiny TorchScript model, its Triton repository, a running server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from cachetuner.hotness_model.model import HotnessLSTM, LSTMConfig
from cachetuner.hotness_model.train import save_model
from cachetuner.serving.export import write_triton_repo
from cachetuner.serving.launcher import TritonServer

TINY = LSTMConfig(seq_len=64, hidden=16, layers=2)


@pytest.fixture(scope="session")
def tiny_model_pt(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch.manual_seed(7)
    model = HotnessLSTM(TINY)
    return save_model(model, tmp_path_factory.mktemp("hotness-model"), {"seq_len": TINY.seq_len})


@pytest.fixture(scope="session")
def triton_repo(tiny_model_pt: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_triton_repo(tiny_model_pt, tmp_path_factory.mktemp("triton-repo"), max_batch_size=512)


@pytest.fixture(scope="session")
def triton_server(triton_repo: Path) -> Iterator[TritonServer]:
    """A real tritonserver on free loopback ports, shared by the round-trip tests."""
    with TritonServer(triton_repo) as srv:
        yield srv
