"""``hotness``: TTLs from the LSTM's predicted accesses of each key in the next horizon.

Time is cut into buckets of ``bucket_s`` (the horizon). For every key requested in bucket ``b``, the
predictor (Triton with the in-process fallback when ``triton_url`` is given, else in-process, the
same :class:`~cachetuner.hotness_model.predictor.HotnessPredictor` the daemon uses) reads the key's
counts in buckets ``[b - seq_len, b)`` (complete buckets only: causal) and predicts ``p``, its
accesses in the next horizon. The TTL is

    TTL = clip(ttl_ref × (p / p_ref) ** alpha, ttl_min, ttl_max)

* long for keys predicted hot (they are re-read often: each expiry costs a miss), short for keys
  predicted cold, so their bytes return to hot keys instead of waiting for eviction;
* **calibrated**: ``p_ref`` is the request-weighted geometric mean of ``p`` over the previous bucket's
  requests, so a request of typical predicted hotness gets ``ttl_ref`` (default 300 s, the fixed
  policy it is compared with) and the policy redistributes lifetime rather than adding it;
* **bounded** to ``[ttl_min, ttl_max]`` (default 30 s to 3600 s).

Keys never seen before get the model's prediction for an empty history (usually cold).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from cachetuner.errors import ConfigError
from cachetuner.hotness_model.config import load_experiment
from cachetuner.hotness_model.dataset import bucket_counts
from cachetuner.hotness_model.predictor import HotnessPredictor, InProcessPredictor
from cachetuner.hotness_model.train import run_experiment
from cachetuner.serving.client import FallbackPredictor, TritonPredictor
from cachetuner.traces.trace import Trace
from cachetuner.ttl.keyspace import KeySpace

#: Where ``hotness`` looks for its model unless told (trained by ``cachetuner ttl train-model``).
DEFAULT_MODEL = "runs/hotness/ttl/model.pt"
#: The hotness experiment that trains it (synthetic traffic: never the traces it is evaluated on).
DEFAULT_MODEL_CONFIG = "experiments/hotness-small.yaml"


def make_predictor(
    model: str, triton_url: str | None = None, protocol: Literal["grpc", "http"] = "grpc"
) -> HotnessPredictor:
    """Triton with the in-process fallback (``triton_url``), else the in-process model."""
    if not Path(model).is_file():
        raise ConfigError(
            f"ttl: hotness model {model} not found; train it with "
            "`cachetuner ttl train-model` (or `cachetuner hotness train` and pass model=PATH/model.pt)"
        )
    local = InProcessPredictor(model, device="cpu")
    if not triton_url:
        return local
    remote = TritonPredictor(triton_url, protocol=protocol, timeout_s=2.0, retries=0, seq_len=local.seq_len)
    return FallbackPredictor(remote, local)


def train_default_model(
    out: str | Path = DEFAULT_MODEL, config: str | Path = DEFAULT_MODEL_CONFIG, log: Callable[[str], None] = print
) -> Path:
    """Train the hotness experiment ``config`` (tracked in MLflow like any) and copy its model to ``out``."""
    res = run_experiment(load_experiment(config), log=log)
    dst = Path(out)
    dst.parent.mkdir(parents=True, exist_ok=True)
    src = Path(res["model_path"])
    shutil.copyfile(src, dst)
    if (src.parent / "hotness.json").is_file():
        shutil.copyfile(src.parent / "hotness.json", dst.parent / "hotness.json")
    return dst


@dataclass
class HotnessTTL:
    """TTL = clip(ttl_ref × (p / p_ref) ** alpha, ttl_min, ttl_max) from the predicted accesses ``p``
    (module docstring); every setting can follow the spec, e.g. ``hotness,ttl_max=7200,alpha=0.5``."""

    model: str = DEFAULT_MODEL
    bucket_s: float = 60.0
    ttl_ref: float = 300.0
    ttl_min: float = 30.0
    ttl_max: float = 3600.0
    alpha: float = 1.0
    triton_url: str | None = None
    name: str = "hotness"
    predictor: Any = field(default=None, repr=False)
    last_backend: str = ""

    def __post_init__(self) -> None:
        if not 0 < self.ttl_min <= self.ttl_ref <= self.ttl_max:
            raise ValueError("need 0 < ttl_min <= ttl_ref <= ttl_max")

    def _predictor(self) -> HotnessPredictor:
        if self.predictor is None:
            self.predictor = make_predictor(self.model, self.triton_url)
        return self.predictor

    def predicted(self, trace: Trace) -> np.ndarray:
        """Predicted next-horizon accesses ``p`` of each request's key, from complete past buckets."""
        pred = self._predictor()
        seq = int(pred.seq_len)
        bc = bucket_counts(trace, self.bucket_s)
        b = np.floor((trace.timestamps - bc.t0) / bc.bucket_s).astype(np.int64)
        keys = trace.keys.astype(np.int64)
        out = np.zeros(len(trace), dtype=np.float64)
        bounds = np.searchsorted(b, np.arange(bc.n_buckets + 1), side="left")
        for j in range(bc.n_buckets):
            lo, hi = bounds[j], bounds[j + 1]
            if hi <= lo:
                continue
            uk, inv = np.unique(keys[lo:hi], return_inverse=True)
            hist = np.log1p(bc.window(uk, j - seq, j))
            p = np.expm1(np.maximum(pred.predict(hist).astype(np.float64), 0.0))
            out[lo:hi] = p[inv]
        self.last_backend = pred.backend
        return out

    def assign(self, trace: Trace, keyspace: KeySpace) -> np.ndarray:
        p = np.maximum(self.predicted(trace), 1e-3)
        b = np.floor((trace.timestamps - trace.timestamps[0]) / self.bucket_s).astype(np.int64)
        logp = np.log(p)
        n_b = int(b[-1]) + 1 if len(b) else 0
        mean_log = np.bincount(b, weights=logp, minlength=n_b) / np.maximum(np.bincount(b, minlength=n_b), 1)
        # p_ref of bucket j = geometric mean over bucket j-1's requests (bucket 0: its own, the only causal-free
        # choice is 1 request/horizon; we take p_ref = 1 there)
        ref = np.zeros(n_b)
        ref[1:] = mean_log[:-1]
        ttl = self.ttl_ref * np.exp(self.alpha * (logp - ref[b]))
        return np.clip(ttl, self.ttl_min, self.ttl_max)


def make_hotness(arg: str | None, **settings: Any) -> HotnessTTL:
    """The registry's factory for ``hotness`` (registered in :mod:`cachetuner.ttl.policies`)."""
    if arg is not None:
        raise ValueError("hotness takes settings after a comma, e.g. hotness,model=PATH,ttl_max=7200")
    return HotnessTTL(**settings)
