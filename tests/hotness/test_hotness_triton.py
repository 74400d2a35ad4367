"""Real tritonserver: exact round trip and health checks (the fallback when the server stops mid-run
is exercised through `serve hotness` in test_hotness_cli.py)."""

from __future__ import annotations

import numpy as np
import pytest

from cachetuner.errors import ServiceError
from cachetuner.hotness_model.predictor import InProcessPredictor
from cachetuner.serving.client import TritonPredictor
from cachetuner.serving.launcher import TritonServer


def _batch(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.log1p(rng.poisson(3.0, (n, 64))).astype(np.float32)


def test_repository_layout(triton_repo) -> None:
    cfg = (triton_repo / "hotness" / "config.pbtxt").read_text()
    for needle in ('backend: "python"', "dynamic_batching", "max_batch_size: 512", "TYPE_FP32", "dims: [ 64 ]", "KIND_CPU"):
        assert needle in cfg
    assert (triton_repo / "hotness" / "1" / "model.py").is_file()
    assert (triton_repo / "hotness" / "1" / "model.pt").is_file()


@pytest.mark.parametrize("protocol", ["grpc", "http"])
def test_round_trip_matches_in_process(triton_server: TritonServer, tiny_model_pt, protocol: str) -> None:
    url = triton_server.grpc_url if protocol == "grpc" else triton_server.http_url
    remote = TritonPredictor(url, protocol=protocol, batch_size=256, timeout_s=20)
    local = InProcessPredictor(tiny_model_pt, device="cpu")
    assert remote.is_ready()
    assert remote.seq_len == 64  # read from the server's model metadata
    x = _batch(700)  # three requests: 256 + 256 + 188
    np.testing.assert_allclose(remote.predict(x), local.predict(x), rtol=0, atol=1e-6)
    remote.close()


def test_unreachable_server_fails_fast() -> None:
    from cachetuner.serving.launcher import free_port

    p = TritonPredictor(f"127.0.0.1:{free_port()}", timeout_s=0.5, retries=1, seq_len=64)
    assert not p.is_ready()
    with pytest.raises(ServiceError, match="failed after 2 attempts"):
        p.predict(_batch(4))
