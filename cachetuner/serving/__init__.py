"""Serving the hotness model: export (TorchScript, Triton repository), a local Triton launcher,
clients with in-process fallback, and the serving benchmark."""

from cachetuner.serving.client import FallbackPredictor, TritonPredictor, hotness_metrics
from cachetuner.serving.export import MODEL_NAME, export_all, write_triton_repo
from cachetuner.serving.launcher import TritonServer, free_port

__all__ = [
    "MODEL_NAME",
    "FallbackPredictor",
    "TritonPredictor",
    "TritonServer",
    "export_all",
    "free_port",
    "hotness_metrics",
    "write_triton_repo",
]
