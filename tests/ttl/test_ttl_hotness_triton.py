"""The hotness TTL policy served by a real tritonserver, and its in-process fallback."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cachetuner.serving.export import write_triton_repo
from cachetuner.serving.launcher import TritonServer, free_port
from cachetuner.traces.trace import Trace
from cachetuner.ttl import keyspace_for, make_ttl_policy


@pytest.fixture(scope="module")
def triton(tiny_hotness_pt: Path, tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    repo = write_triton_repo(tiny_hotness_pt, tmp_path_factory.mktemp("triton-ttl"), max_batch_size=512)
    with TritonServer(repo) as srv:
        yield srv


def test_triton_and_fallback_give_the_in_process_ttls(triton: TritonServer, tiny_hotness_pt: Path, web07: Trace) -> None:
    tr = web07.slice(0, 6000)
    ks = keyspace_for(tr)
    local = make_ttl_policy(f"hotness,model={tiny_hotness_pt},bucket_s=20")
    remote = make_ttl_policy(f"hotness,model={tiny_hotness_pt},bucket_s=20,triton_url={triton.grpc_url}")
    down = make_ttl_policy(f"hotness,model={tiny_hotness_pt},bucket_s=20,triton_url=127.0.0.1:{free_port()}")
    want = local.assign(tr, ks)
    np.testing.assert_allclose(remote.assign(tr, ks), want, rtol=1e-5)
    assert remote.last_backend == "triton_grpc"  # type: ignore[attr-defined]
    np.testing.assert_allclose(down.assign(tr, ks), want, rtol=1e-5)
    assert down.last_backend == "in_process"  # type: ignore[attr-defined]
