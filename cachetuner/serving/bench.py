"""Side-by-side throughput/latency of hotness inference: Triton gRPC, Triton HTTP, in-process torch.

One run, one model, identical batches; the three paths are measured round-robin (one batch each in
turn) so that load from other processes on a shared machine hits all three alike. Keys/s counts
sequences (one key each). ``ratio`` = Triton gRPC keys/s / in-process keys/s.

The model is the given ``model.pt`` or, without one, a freshly initialised :class:`HotnessLSTM` of
the default architecture — inference cost does not depend on the weights, and the output says which.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from cachetuner.hotness_model.model import HotnessLSTM, LSTMConfig
from cachetuner.hotness_model.predictor import HotnessPredictor, InProcessPredictor, pick_device
from cachetuner.serving.client import TritonPredictor
from cachetuner.serving.export import write_triton_repo
from cachetuner.serving.launcher import TritonServer


def _stats(lat_s: list[float], batch: int) -> dict[str, float]:
    a = np.asarray(lat_s)
    return {
        "keys_per_s": batch * len(a) / float(a.sum()),
        "p50_ms": float(np.percentile(a, 50) * 1e3),
        "p99_ms": float(np.percentile(a, 99) * 1e3),
        "batches": len(a),
    }


def run_bench(
    model_pt: str | Path | None = None,
    *,
    batch: int = 256,
    batches: int = 40,
    warmup: int = 3,
    seed: int = 0,
    log: Callable[[str], None] = lambda s: None,
) -> dict[str, Any]:
    """Measure the three paths; returns the JSON-ready result."""
    torch.set_num_threads(1)
    device = pick_device("auto")
    with tempfile.TemporaryDirectory(prefix="cachetuner-bench-") as tmp:
        if model_pt is None:
            torch.manual_seed(seed)
            model_pt = Path(tmp) / "model.pt"
            torch.jit.script(HotnessLSTM(LSTMConfig()).eval()).save(str(model_pt))
            weights = "random-init (default architecture)"
        else:
            weights = str(model_pt)
        kind = "KIND_GPU" if device.type == "cuda" else "KIND_CPU"
        repo = write_triton_repo(model_pt, Path(tmp) / "repo", max_batch_size=max(batch, 256), kind=kind)
        local = InProcessPredictor(model_pt, batch_size=batch, device="auto")
        rng = np.random.default_rng(seed)
        xs = [np.log1p(rng.poisson(2.0, (batch, local.seq_len))).astype(np.float32) for _ in range(8)]
        log(f"starting tritonserver ({kind}) ...")
        with TritonServer(repo) as srv:
            paths: dict[str, HotnessPredictor] = {
                "triton_grpc": TritonPredictor(srv.grpc_url, protocol="grpc", batch_size=batch, timeout_s=30, retries=0),
                "triton_http": TritonPredictor(srv.http_url, protocol="http", batch_size=batch, timeout_s=30, retries=0),
                "in_process": local,
            }
            ref = local.predict(xs[0])
            max_diff = {n: float(np.abs(p.predict(xs[0]) - ref).max()) for n, p in paths.items() if n != "in_process"}
            for _ in range(warmup):
                for p in paths.values():
                    p.predict(xs[0])
            lat: dict[str, list[float]] = {n: [] for n in paths}
            log(f"measuring {batches} batches of {batch} per path ...")
            for i in range(batches):
                x = xs[i % len(xs)]
                for n, p in paths.items():
                    t0 = time.perf_counter()
                    p.predict(x)
                    lat[n].append(time.perf_counter() - t0)
            for p in paths.values():
                p.close()
    res = {n: _stats(v, batch) for n, v in lat.items()}
    return {
        "device": device.type,
        "gpu_available": bool(torch.cuda.is_available()),
        "torch_threads": torch.get_num_threads(),
        "batch": batch,
        "seq_len": local.seq_len,
        "weights": weights,
        **res,
        "ratio": res["triton_grpc"]["keys_per_s"] / res["in_process"]["keys_per_s"],
        "ratio_http": res["triton_http"]["keys_per_s"] / res["in_process"]["keys_per_s"],
        "max_abs_diff_vs_in_process": max_diff,
    }
