"""The ``HotnessPredictor`` protocol and its in-process implementation.

A predictor maps ``[N, seq_len]`` log1p bucket counts to ``[N]`` predicted log1p next-horizon
counts. The env features, the benchmark and the Triton client all speak this one interface, so the
tuning loop never asks whether the model runs in-process or behind Triton
(:mod:`cachetuner.serving.client` holds the remote and fallback implementations).
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np
import torch

from cachetuner.hotness_model.model import load_hotness_script


@runtime_checkable
class HotnessPredictor(Protocol):
    """Batch hotness inference. ``backend`` names where it ran last (for logs and gauges)."""

    @property
    def seq_len(self) -> int:
        """History buckets per input row."""
        ...

    @property
    def backend(self) -> str: ...

    def predict(self, history: np.ndarray) -> np.ndarray:
        """``[N, seq_len]`` float32 log1p counts -> ``[N]`` float32 log1p predicted counts."""
        ...

    def close(self) -> None: ...


def pick_device(device: str = "auto") -> torch.device:
    """``auto`` = CUDA when torch sees a GPU, else CPU."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


class InProcessPredictor:
    """TorchScript model in this process (one torch thread on CPU), batched.

    Args:
        model: path to a ``model.pt`` written by :func:`cachetuner.hotness_model.train.save_model`,
            or an ``nn.Module`` / ScriptModule with a ``seq_len`` attribute.
        batch_size: rows per forward pass (bounds peak memory for large key sets).
        device: ``auto`` | ``cpu`` | ``cuda``.
    """

    def __init__(self, model: str | Path | torch.nn.Module, *, batch_size: int = 1024, device: str = "auto") -> None:
        torch.set_num_threads(1)
        self.device = pick_device(device)
        module: torch.nn.Module = (
            load_hotness_script(model, map_location=self.device) if isinstance(model, str | Path) else model
        )
        self.model = module.to(self.device).eval()
        self.seq_len = int(module.seq_len)  # type: ignore[arg-type]
        self.batch_size = batch_size

    @property
    def backend(self) -> str:
        return "in_process"

    @torch.inference_mode()
    def predict(self, history: np.ndarray) -> np.ndarray:
        x = np.ascontiguousarray(history, dtype=np.float32)
        if x.ndim != 2 or x.shape[1] != self.seq_len:
            raise ValueError(f"history must be [N, {self.seq_len}], got {list(x.shape)}")
        if len(x) == 0:
            return np.zeros(0, np.float32)
        outs = []
        for i in range(0, len(x), self.batch_size):
            xb = torch.from_numpy(x[i : i + self.batch_size]).to(self.device)
            outs.append(self.model(xb).reshape(-1).float().cpu())
        return torch.cat(outs).numpy()

    def close(self) -> None:
        pass
