"""Value-size models for traces that carry no sizes (and for synthetic workloads).

Sizes are drawn once per key, not per request: a real object keeps its size, and the cache's
memory accounting would otherwise see one key change size on every access.

Spec strings (``--size-model``):
    ``fixed:BYTES``                    every key has BYTES.
    ``lognormal:MEDIAN,SIGMA``         ``exp(N(ln MEDIAN, SIGMA))`` rounded, at least 1.
    ``llm[:P_EMBED,EMBED,MEDIAN,SIGMA]`` bimodal "AI inference" mix: a share P_EMBED of keys hold an
        embedding of exactly EMBED bytes (default 0.4 and 1536 = 384 float32), the others a
        generated answer, lognormal with MEDIAN (default 8192) and SIGMA (default 0.9).
        Illustrative, not fitted to a measured trace.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from cachetuner.errors import TraceError, UnknownTraceNameError
from cachetuner.registry import Registry

#: Size for traces without sizes when no ``--size-model`` is given.
DEFAULT_SIZE_MODEL = "fixed:4096"
#: Largest size any model may produce (Redis strings are at most 512 MiB).
MAX_SIZE = 512 * 1024 * 1024
#: Largest lognormal SIGMA: wider, most draws would sit at the clip bounds (1 byte or MAX_SIZE), not the model asked for.
MAX_SIGMA = 10.0


@dataclass(frozen=True)
class SizeModel:
    """A parsed size model: ``sample(n_keys, rng)`` gives one int64 size >= 1 per key."""

    spec: str
    sampler: Callable[[int, np.random.Generator], np.ndarray]

    def sample(self, n_keys: int, rng: np.random.Generator) -> np.ndarray:
        return np.clip(self.sampler(n_keys, rng), 1, MAX_SIZE).astype(np.int64)

    def sample_seeded(self, n_keys: int, seed: int) -> np.ndarray:
        """Sizes from a generator used for nothing else, so they do not depend on other draws."""
        return self.sample(n_keys, np.random.default_rng([seed, 0x512E]))

    def __str__(self) -> str:
        return self.spec


def _bytes(name: str, value: float) -> None:
    """A size argument: 1 to MAX_SIZE bytes (a larger one was clipped to MAX_SIZE without a word)."""
    if not 1 <= value <= MAX_SIZE:
        raise ValueError(
            f"{name} must be a positive number of bytes, at most {MAX_SIZE:,} (512 MiB, the largest Redis value), "
            f"got {value:g}"
        )


def _sigma(value: float) -> None:
    if not 0 <= value <= MAX_SIGMA:
        raise ValueError(f"SIGMA must be 0 to {MAX_SIGMA:g}, got {value:g}")


def _fixed(args: list[float]) -> Callable[[int, np.random.Generator], np.ndarray]:
    (size,) = args
    _bytes("BYTES", size)
    if size != int(size):
        raise ValueError(f"BYTES must be a whole number of bytes, got {size:g}")
    return lambda n, rng: np.full(n, int(size), dtype=np.int64)


def _lognormal(args: list[float]) -> Callable[[int, np.random.Generator], np.ndarray]:
    median, sigma = args
    _bytes("MEDIAN", median)
    _sigma(sigma)
    return lambda n, rng: np.rint(rng.lognormal(np.log(median), sigma, n))


def _llm(args: list[float]) -> Callable[[int, np.random.Generator], np.ndarray]:
    p_embed, embed, median, sigma = args
    if not 0.0 <= p_embed <= 1.0:
        raise ValueError(f"P_EMBED must be 0 to 1, got {p_embed:g}")
    _bytes("EMBED", embed)
    _bytes("MEDIAN", median)
    _sigma(sigma)

    def sample(n: int, rng: np.random.Generator) -> np.ndarray:
        is_embed = rng.random(n) < p_embed
        answers = np.rint(rng.lognormal(np.log(median), sigma, n))
        return np.where(is_embed, float(embed), answers)

    return sample


SizeModelEntry = tuple[tuple[str, ...], tuple[float, ...] | None, Callable]

#: name -> (argument names, defaults or None when required, factory)
SIZE_MODELS: Registry[SizeModelEntry] = Registry("size model", error=UnknownTraceNameError)
SIZE_MODELS.add("fixed", (("BYTES",), None, _fixed))
SIZE_MODELS.add("lognormal", (("MEDIAN", "SIGMA"), None, _lognormal))
SIZE_MODELS.add("llm", (("P_EMBED", "EMBED", "MEDIAN", "SIGMA"), (0.4, 1536, 8192, 0.9), _llm))


def parse_size_model(spec: str) -> SizeModel:
    """Parse ``NAME[:ARG,ARG...]`` into a :class:`SizeModel`; bad specs raise a one-line :class:`TraceError`."""
    if not spec.strip():  # an empty --size-model is a mistake, not a request for the default
        raise TraceError(f"size model {spec!r}: empty; expected fixed:BYTES, lognormal:MEDIAN,SIGMA or "
                         f"llm[:P_EMBED,EMBED,MEDIAN,SIGMA] (leave it out for the default, {DEFAULT_SIZE_MODEL})")
    name, _, rest = spec.strip().partition(":")
    arg_names, defaults, factory = SIZE_MODELS.get(name, field=f"size model {spec!r}")
    usage = f"{name}:{','.join(arg_names)}"
    if not rest:
        if defaults is None:
            raise TraceError(f"size model {spec!r}: missing arguments, expected {usage}")
        args = list(defaults)
    else:
        try:
            args = [float(a) for a in rest.split(",")]
        except ValueError:
            raise TraceError(f"size model {spec!r}: arguments must be numbers, expected {usage}") from None
        if not all(math.isfinite(a) for a in args):  # float() reads nan and inf, and 1e400 as inf
            raise TraceError(f"size model {spec!r}: arguments must be finite numbers, expected {usage}")
        if len(args) != len(arg_names):
            raise TraceError(
                f"size model {spec!r}: expected {len(arg_names)} arguments ({usage}), got {len(args)}"
            )
    try:
        sampler = factory(args)
    except ValueError as e:
        raise TraceError(f"size model {spec!r}: {e}") from None
    return SizeModel(spec=f"{name}:{','.join(f'{a:g}' for a in args)}", sampler=sampler)
