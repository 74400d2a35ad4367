"""Load shapes for re-timing a trace: ``diurnal:PERIOD_S,AMPLITUDE``.

Why: a trace without timestamps (or re-timed with ``rate``) arrives at one steady rate, and every suite re-times its
traces that way, while the traffic in front of an inference cache rises and falls over the day. A controller that
reads its load from the last intervals (``mrc``'s load estimate, the policy's price feature) can be misled by a
trough, as CloudPhysics on its own clock showed (docs/results.md, "On a trace's own clock"). A profile keeps the
trace's request order and its mean rate and moves only the arrival times, so the same keys can be replayed under a
swinging load.

``diurnal:P,A``: the rate at time ``t`` is ``rate * (1 + A * sin(2 pi t / P))``, ``0 <= A < 1``, starting at the mean
and rising. Real days are 24 h; the shared traces last minutes to hours at the rates the suites use, so a profile's
period is usually compressed (``diurnal:1800,0.8``: a half-hour "day"). The arrival times invert the cumulative
count ``N(t) = rate * (t + A P / (2 pi) * (1 - cos(2 pi t / P)))``: interpolated on a grid, then refined by Newton
steps (``N`` rises at least at ``rate * (1 - A) > 0``, so each step is well defined); the request order is kept.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from cachetuner.errors import TraceError

#: Grid points for the first guess of the inversion of the cumulative count (Newton steps refine it).
GRID_POINTS = 1 << 20
NEWTON_STEPS = 4


@dataclass(frozen=True)
class RateProfile:
    """A diurnal load shape: period in seconds and relative amplitude (0 = steady)."""

    period_s: float
    amplitude: float

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
        """Arrival times of ``n`` requests at mean ``rate`` under this shape (non-decreasing, from 0)."""
        if n == 0:
            return np.zeros(0, dtype=np.float64)
        horizon = n / rate  # N(t) >= rate * t: the n-th request arrives by n / rate
        grid = np.linspace(0.0, horizon, GRID_POINTS)
        want = np.arange(n, dtype=np.float64)
        t = np.interp(want, self.count_until(rate, grid), grid)
        for _ in range(NEWTON_STEPS):
            t = np.clip(t - (self.count_until(rate, t) - want) / self.rate_at(rate, t), 0.0, horizon)
        return np.maximum.accumulate(t)


def parse_rate_profile(spec: str) -> RateProfile:
    """``diurnal:PERIOD_S,AMPLITUDE`` -> :class:`RateProfile`; a one-line :class:`TraceError` naming the spec."""
    kind, _, args = spec.partition(":")
    if kind.strip().lower() != "diurnal":
        raise TraceError(f"rate profile {spec!r}: expected diurnal:PERIOD_S,AMPLITUDE (e.g. diurnal:1800,0.8)")
    parts = [p.strip() for p in args.split(",")]
    if len(parts) != 2:
        raise TraceError(f"rate profile {spec!r}: diurnal takes PERIOD_S,AMPLITUDE (e.g. diurnal:1800,0.8)")
    try:
        period, amplitude = float(parts[0]), float(parts[1])
    except ValueError:
        raise TraceError(f"rate profile {spec!r}: PERIOD_S and AMPLITUDE must be numbers") from None
    if not (math.isfinite(period) and period > 0):
        raise TraceError(f"rate profile {spec!r}: the period must be a finite number of seconds > 0")
    if not (math.isfinite(amplitude) and 0.0 <= amplitude < 1.0):
        raise TraceError(f"rate profile {spec!r}: the amplitude must be in [0, 1) (1 would stop the traffic)")
    return RateProfile(period, amplitude)
