"""Real tritonserver: exact round trip, health checks, fallback when the server goes away."""

from __future__ import annotations

import numpy as np
import pytest
from prometheus_client import CollectorRegistry

from cachetuner.errors import ServiceError
from cachetuner.hotness_model.predictor import InProcessPredictor
from cachetuner.serving.client import FallbackPredictor, TritonPredictor
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


def test_fallback_when_server_stops_mid_run(triton_repo, tiny_model_pt) -> None:
    reg = CollectorRegistry()
    local = InProcessPredictor(tiny_model_pt, device="cpu")
    x = _batch(300, seed=1)
    expected = local.predict(x)
    with TritonServer(triton_repo) as srv:
        fb = FallbackPredictor(
            TritonPredictor(srv.grpc_url, timeout_s=1.0, retries=0, seq_len=64), local,
            retry_after_s=0.2, registry=reg,
        )
        np.testing.assert_allclose(fb.predict(x), expected, atol=1e-6)
        assert fb.backend == "triton_grpc"
        assert reg.get_sample_value("cachetuner_hotness_fallback_total") == 0
        assert reg.get_sample_value("cachetuner_hotness_backend", {"backend": "triton_grpc"}) == 1
        srv.stop()
        assert not srv.is_alive()
        for _ in range(3):  # predictions continue, from the fallback
            np.testing.assert_allclose(fb.predict(x), expected, atol=1e-6)
        assert fb.backend == "in_process"
        assert reg.get_sample_value("cachetuner_hotness_fallback_total") == 3
        assert reg.get_sample_value("cachetuner_hotness_backend", {"backend": "in_process"}) == 1
        assert reg.get_sample_value("cachetuner_hotness_backend", {"backend": "triton_grpc"}) == 0
        assert fb.circuit_open
        # after retry_after_s the breaker probes Triton again, fails, and still answers
        import time

        time.sleep(0.3)
        assert not fb.circuit_open
        np.testing.assert_allclose(fb.predict(x), expected, atol=1e-6)
        assert reg.get_sample_value("cachetuner_hotness_fallback_total") == 4
