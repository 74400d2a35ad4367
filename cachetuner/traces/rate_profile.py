"""Load shapes for re-timing a trace: ``diurnal:PERIOD_S,AMPLITUDE`` and ``bursts:PERIOD_S,DUTY[,LOW]``.

Why: a trace without timestamps (or re-timed with ``rate``) arrives at one steady rate, and every suite re-times its
traces that way, while the traffic in front of an inference cache rises and falls over the day, and some of it comes
in bursts with lulls between. A controller that reads its load from the last intervals (``mrc``'s load estimate, the
policy's price feature) can be misled by a trough or a lull, as CloudPhysics on its own clock showed (docs/results.md,
"On a trace's own clock"). A profile keeps the trace's request order and its mean rate over whole periods and moves
only the arrival times, so the same keys can be replayed under a swinging or bursty load.

Each kind is a small class registered in :data:`RATE_PROFILES` (the extension point): it parses its arguments and
maps request numbers to arrival times at a mean rate.

- ``diurnal:P,A``: the rate at time ``t`` is ``rate * (1 + A * sin(2 pi t / P))``, ``0 <= A < 1``, starting at the
  mean and rising. Real days are 24 h; the shared traces last minutes to hours at the rates the suites use, so a
  period is usually compressed (``diurnal:1800,0.8``: a half-hour "day"). Arrival times invert the cumulative count
  ``N(t) = rate * (t + A P / (2 pi) * (1 - cos(2 pi t / P)))``: interpolated on a grid, then refined by Newton steps
  (``N`` rises at least at ``rate * (1 - A) > 0``, so each step is well defined).
- ``bursts:P,D[,L]``: each period opens with a burst that lasts the share ``D`` of it, then a lull at ``L`` times the
  mean rate (default 0: no requests at all), the burst's rate set so that the mean over a period is ``rate``
  (``(1 - L (1 - D)) / D`` times it). The inversion is exact (the count is piecewise linear).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, Protocol

import numpy as np

from cachetuner.errors import TraceError, UnknownTraceNameError
from cachetuner.registry import Registry

#: Grid points for the first guess of the diurnal inversion (Newton steps refine it).
GRID_POINTS = 1 << 20
NEWTON_STEPS = 4


class RateProfile(Protocol):
    """A load shape: arrival times of ``n`` requests at a mean ``rate`` (non-decreasing, from 0, order kept)."""

    @property
    def spec(self) -> str: ...

    def timestamps(self, n: int, rate: float) -> np.ndarray: ...


def _numbers(spec: str, args: str, names: tuple[str, ...], optional: int = 0) -> list[float]:
    parts = [p.strip() for p in args.split(",")] if args.strip() else []
    if not len(names) - optional <= len(parts) <= len(names):
        want = ",".join(names[: len(names) - optional]) + "".join(f"[,{n}]" for n in names[len(names) - optional:])
        raise TraceError(f"rate profile {spec!r}: takes {want}")
    try:
        values = [float(p) for p in parts]
    except ValueError:
        raise TraceError(f"rate profile {spec!r}: {', '.join(names)} must be numbers") from None
    if not all(math.isfinite(v) for v in values):
        raise TraceError(f"rate profile {spec!r}: {', '.join(names)} must be finite numbers")
    return values


def _period(spec: str, period: float) -> float:
    if period <= 0:
        raise TraceError(f"rate profile {spec!r}: the period must be a number of seconds > 0")
    return period


@dataclass(frozen=True)
class Diurnal:
    """``rate * (1 + amplitude * sin(2 pi t / period_s))``."""

    period_s: float
    amplitude: float
    usage: ClassVar[str] = "diurnal:PERIOD_S,AMPLITUDE (e.g. diurnal:1800,0.8)"

    @classmethod
    def parse(cls, spec: str, args: str) -> Diurnal:
        period, amplitude = _numbers(spec, args, ("PERIOD_S", "AMPLITUDE"))
        if not 0.0 <= amplitude < 1.0:
            raise TraceError(f"rate profile {spec!r}: the amplitude must be in [0, 1) (1 would stop the traffic)")
        return cls(_period(spec, period), amplitude)

    @property
    def spec(self) -> str:
        return f"diurnal:{self.period_s:g},{self.amplitude:g}"

    def rate_at(self, rate: float, t: np.ndarray | float) -> np.ndarray:
        """The instantaneous request rate at ``t`` for a mean ``rate``."""
        return rate * (1.0 + self.amplitude * np.sin(2.0 * math.pi * np.asarray(t, dtype=np.float64) / self.period_s))

    def count_until(self, rate: float, t: np.ndarray) -> np.ndarray:
        """Requests expected in ``[0, t)``: the integral of :meth:`rate_at`."""
        w = 2.0 * math.pi / self.period_s
        return rate * (t + self.amplitude / w * (1.0 - np.cos(w * t)))

    def timestamps(self, n: int, rate: float) -> np.ndarray:
        if n == 0:
            return np.zeros(0, dtype=np.float64)
        horizon = n / rate  # N(t) >= rate * t: the n-th request arrives by n / rate
        grid = np.linspace(0.0, horizon, GRID_POINTS)
        want = np.arange(n, dtype=np.float64)
        t = np.interp(want, self.count_until(rate, grid), grid)
        for _ in range(NEWTON_STEPS):
            t = np.clip(t - (self.count_until(rate, t) - want) / self.rate_at(rate, t), 0.0, horizon)
        return np.maximum.accumulate(t)


@dataclass(frozen=True)
class Bursts:
    """A burst over the share ``duty`` of each period, then a lull at ``low`` times the mean rate."""

    period_s: float
    duty: float
    low: float = 0.0
    usage: ClassVar[str] = "bursts:PERIOD_S,DUTY[,LOW] (e.g. bursts:1800,0.25)"

    @classmethod
    def parse(cls, spec: str, args: str) -> Bursts:
        values = _numbers(spec, args, ("PERIOD_S", "DUTY", "LOW"), optional=1)
        period, duty = values[0], values[1]
        low = values[2] if len(values) > 2 else 0.0
        if not 0.0 < duty <= 1.0:
            raise TraceError(f"rate profile {spec!r}: the burst's share of a period (DUTY) must be in (0, 1]")
        if not 0.0 <= low < 1.0:
            raise TraceError(f"rate profile {spec!r}: the lull's rate (LOW, a share of the mean) must be in [0, 1)")
        return cls(_period(spec, period), duty, low)

    @property
    def spec(self) -> str:
        return f"bursts:{self.period_s:g},{self.duty:g}" + (f",{self.low:g}" if self.low else "")

    @property
    def high(self) -> float:
        """The burst's rate as a multiple of the mean (the mean over a period stays the mean)."""
        return (1.0 - self.low * (1.0 - self.duty)) / self.duty

    def timestamps(self, n: int, rate: float) -> np.ndarray:
        # in "mean time" (request number / rate) a period lasts P; its burst covers high * duty * P of it
        m = np.arange(n, dtype=np.float64) / rate
        k = np.floor(m / self.period_s)
        r = m - k * self.period_s
        burst = self.high * self.duty * self.period_s
        if self.low > 0.0:
            lull = self.duty * self.period_s + np.maximum(r - burst, 0.0) / self.low
            tau = np.where(r < burst, r / self.high, lull)
        else:  # the burst holds the whole period's requests (min: rounding must not spill them into the lull)
            tau = np.minimum(r / self.high, self.duty * self.period_s)
        t = k * self.period_s + tau
        return np.maximum.accumulate(t)


#: ``KIND`` of ``--rate-profile KIND:ARGS`` -> its parser (``(spec, args) -> RateProfile``).
RATE_PROFILES: Registry[Callable[[str, str], RateProfile]] = Registry(
    "rate profile kind", "--rate-profile", error=UnknownTraceNameError
)
RATE_PROFILES.add("diurnal", Diurnal.parse)
RATE_PROFILES.add("bursts", Bursts.parse)


def parse_rate_profile(spec: str) -> RateProfile:
    """``KIND:ARGS`` -> a :class:`RateProfile`; a one-line :class:`TraceError` naming the spec."""
    kind, sep, args = spec.partition(":")
    if not sep:
        raise TraceError(f"rate profile {spec!r}: expected KIND:ARGS, e.g. {Diurnal.usage} or {Bursts.usage}")
    try:
        parse = RATE_PROFILES.get(kind.strip().lower())
    except UnknownTraceNameError as e:
        raise TraceError(f"rate profile {spec!r}: {str(e).removeprefix('--rate-profile: ')}") from None
    return parse(spec, args)
