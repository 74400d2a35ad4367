"""Hotness inference through Triton, with an in-process fallback that never stalls the tuning loop.

* :class:`TritonPredictor` — tritonclient gRPC (default) or HTTP; splits the key set into batches of
  ``batch_size`` sequences, bounds every call by ``timeout_s``, retries ``retries`` times.
* :class:`FallbackPredictor` — tries the primary (Triton); on any failure it answers from the
  fallback (in-process TorchScript, same weights), logs a warning, increments
  ``cachetuner_hotness_fallback_total`` and flips ``cachetuner_hotness_backend{backend=...}``. A circuit
  breaker then skips the primary for ``retry_after_s`` seconds, so an unreachable server costs one
  short timeout per ``retry_after_s``, not one per step.

:class:`~cachetuner.hotness_model.predictor.HotnessPredictor` and
:class:`~cachetuner.hotness_model.predictor.InProcessPredictor` are re-exported here.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import time
from typing import Any, Literal

import numpy as np
from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge

from cachetuner.errors import ServiceError
from cachetuner.hotness_model.predictor import HotnessPredictor, InProcessPredictor
from cachetuner.registry import Registry
from cachetuner.serving.export import INPUT_NAME, MODEL_NAME, OUTPUT_NAME

__all__ = [
    "FallbackPredictor",
    "HotnessPredictor",
    "InProcessPredictor",
    "TritonPredictor",
    "hotness_metrics",
]

log = logging.getLogger("cachetuner.serving")

_METRICS: dict[int, tuple[Counter, Gauge]] = {}

#: ``protocol`` -> tritonclient module (imported lazily by :class:`TritonPredictor`).
TRITON_PROTOCOLS: Registry[str] = Registry("Triton protocol", "protocol")
TRITON_PROTOCOLS.add("grpc", "tritonclient.grpc")
TRITON_PROTOCOLS.add("http", "tritonclient.http")


def hotness_metrics(registry: CollectorRegistry = REGISTRY) -> tuple[Counter, Gauge]:
    """The fallback counter and backend gauge, created once per registry."""
    key = id(registry)
    if key not in _METRICS:
        counter = Counter(
            "cachetuner_hotness_fallback", "Hotness predictions answered by the in-process fallback "
            "because Triton failed or its circuit was open", registry=registry,
        )
        gauge = Gauge(
            "cachetuner_hotness_backend", "1 for the backend that answered the last hotness prediction",
            ["backend"], registry=registry,
        )
        _METRICS[key] = (counter, gauge)
    return _METRICS[key]


class TritonPredictor:
    """Remote :class:`HotnessPredictor` against a Triton server serving the ``hotness`` model.

    Args:
        url: ``host:port`` of the gRPC (or HTTP) endpoint.
        protocol: ``grpc`` or ``http``.
        batch_size: sequences per request (must not exceed the model's ``max_batch_size``).
        timeout_s: per-request timeout.
        retries: extra attempts after a failed request (0 = fail fast).
        model_name / seq_len: model to call and its input length (read from the server when None).
    """

    def __init__(
        self,
        url: str,
        *,
        protocol: Literal["grpc", "http"] = "grpc",
        batch_size: int = 256,
        timeout_s: float = 2.0,
        retries: int = 1,
        model_name: str = MODEL_NAME,
        seq_len: int | None = None,
    ) -> None:
        self.url = url
        self.protocol = protocol
        self.batch_size = batch_size
        self.timeout_s = timeout_s
        self.retries = retries
        self.model_name = model_name
        tc = importlib.import_module(TRITON_PROTOCOLS.get(protocol))  # imported only when used
        self._tc: Any = tc
        kwargs: dict[str, Any] = {}
        if protocol == "http":
            kwargs = {"connection_timeout": timeout_s, "network_timeout": timeout_s}
        self._client: Any = tc.InferenceServerClient(url, **kwargs)
        self._seq_len = seq_len

    @property
    def backend(self) -> str:
        return f"triton_{self.protocol}"

    @property
    def seq_len(self) -> int:
        if self._seq_len is None:
            self._seq_len = self._read_seq_len()
        return self._seq_len

    def _read_seq_len(self) -> int:
        try:
            if self.protocol == "grpc":
                meta = self._client.get_model_metadata(self.model_name, as_json=True, client_timeout=self.timeout_s)
            else:
                meta = self._client.get_model_metadata(self.model_name)
        except Exception as e:
            raise ServiceError(f"Triton at {self.url}: cannot read metadata of model {self.model_name!r} ({e})") from None
        shape = meta["inputs"][0]["shape"]
        return int(shape[-1])

    def is_ready(self) -> bool:
        """Server live and ready, and the model ready (short timeout, never raises)."""
        try:
            if self.protocol == "grpc":
                t = self.timeout_s
                return bool(
                    self._client.is_server_ready(client_timeout=t)
                    and self._client.is_model_ready(self.model_name, client_timeout=t)
                )
            return bool(self._client.is_server_ready() and self._client.is_model_ready(self.model_name))
        except Exception:
            return False

    def _infer_batch(self, x: np.ndarray) -> np.ndarray:
        tc = self._tc
        inp = tc.InferInput(INPUT_NAME, list(x.shape), "FP32")
        inp.set_data_from_numpy(x)
        out = tc.InferRequestedOutput(OUTPUT_NAME)
        last: Exception | None = None
        for attempt in range(self.retries + 1):
            try:
                if self.protocol == "grpc":
                    res = self._client.infer(self.model_name, [inp], outputs=[out], client_timeout=self.timeout_s)
                else:
                    res = self._client.infer(self.model_name, [inp], outputs=[out], timeout=int(self.timeout_s * 1e6))
                return res.as_numpy(OUTPUT_NAME).reshape(-1)
            except Exception as e:
                last = e
                if attempt < self.retries:
                    time.sleep(min(0.05 * 2**attempt, 0.5))
        raise ServiceError(f"Triton {self.protocol} at {self.url}: inference failed after {self.retries + 1} attempts ({last})")

    def predict(self, history: np.ndarray) -> np.ndarray:
        x = np.ascontiguousarray(history, dtype=np.float32)
        if len(x) == 0:
            return np.zeros(0, np.float32)
        parts = [self._infer_batch(x[i : i + self.batch_size]) for i in range(0, len(x), self.batch_size)]
        return np.concatenate(parts).astype(np.float32, copy=False)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._client.close()


class FallbackPredictor:
    """Primary predictor (Triton) with an in-process fallback and a circuit breaker.

    Args:
        primary: usually a :class:`TritonPredictor` with a short ``timeout_s`` and ``retries=0``.
        fallback: usually an :class:`InProcessPredictor` loading the same ``model.pt``.
        retry_after_s: how long the circuit stays open after a primary failure.
        registry: prometheus registry for the counter and gauge.
    """

    def __init__(
        self,
        primary: HotnessPredictor,
        fallback: HotnessPredictor,
        *,
        retry_after_s: float = 30.0,
        registry: CollectorRegistry = REGISTRY,
    ) -> None:
        self.primary = primary
        self.fallback = fallback
        self.retry_after_s = retry_after_s
        self.seq_len = fallback.seq_len
        self._open_until = 0.0
        self._last = primary.backend
        self.fallbacks = 0
        self._counter, self._gauge = hotness_metrics(registry)

    @property
    def backend(self) -> str:
        return self._last

    @property
    def circuit_open(self) -> bool:
        return time.monotonic() < self._open_until

    def _mark(self, backend: str) -> None:
        for name in {self.primary.backend, self.fallback.backend}:
            self._gauge.labels(backend=name).set(1.0 if name == backend else 0.0)
        self._last = backend

    def predict(self, history: np.ndarray) -> np.ndarray:
        if not self.circuit_open:
            try:
                out = self.primary.predict(history)
                if self._last != self.primary.backend:
                    log.warning("hotness: %s reachable again, leaving the in-process fallback", self.primary.backend)
                self._mark(self.primary.backend)
                return out
            except Exception as e:
                self._open_until = time.monotonic() + self.retry_after_s
                log.warning(
                    "hotness: %s failed (%s); answering in-process, retrying Triton in %.0fs",
                    self.primary.backend, str(e).splitlines()[0][:200], self.retry_after_s,
                )
        self.fallbacks += 1
        self._counter.inc()
        self._mark(self.fallback.backend)
        return self.fallback.predict(history)

    def close(self) -> None:
        self.primary.close()
        self.fallback.close()
