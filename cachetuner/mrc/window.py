"""Decayed counts of one miniature cache, the sampling correction, and the two-window shift test.

Why two windows: one exponential window has to trade stability against speed. A half-life long
enough to see long reuse distances (and to average out a 1 % sample) keeps a finished regime in the
curve for several half-lives: measured on a workload that turns from Zipf 0.6 to Zipf 1.3, the
single window told ``mrc`` to keep a 4x oversized cache for ~60 intervals after the change. A second,
shorter window sees the new regime within a few intervals; when the two disagree by more than noise
can explain, the long window restarts from the short one (the old regime is dropped, and the
readiness gates make the controller wait until the restarted window has enough evidence again).
This is the classical two-window change test (as in ADWIN, Bifet & Gavaldà, SDM'07), applied to the
whole curve rather than one statistic.

Why a regression correction rather than SHARDS-adj: a spatial sample of a ``1:r`` share of the keys
sees ``D = r x all GETs - sampled GETs`` more or fewer GETs than a perfect sample would; the hits
those GETs would have brought are unknown. SHARDS-adj (Waldspurger et al., FAST'15) counts all of
them as hits, which is right when ``D`` comes from one very hot key (always resident) and wrong when
it comes from many warm keys: on ARC and Corda traces it put the curve 3-5 pp too high at every
size. Under Bernoulli key sampling the best linear predictor of the missing hits from ``D`` is
``b x D`` with ``b = sum(g_i h_i) / sum(g_i^2)`` over keys (``g_i`` GETs, ``h_i`` hits of key ``i``): the
hit ratio of the keys whose sampling makes ``D`` large, i.e. the heaviest ones. ``b`` is estimated on
the sampled keys (a regression through the origin, the control-variate / GREG estimator); it is
close to 1 where a sampled hot key dominates (SHARDS-adj) and close to the plain ratio where no key
does. A hot key that was *not* sampled is invisible to ``b``; it shows as a deficit far beyond the
noise the sampled keys' spread explains (sd ``sqrt((1 - r) sum g^2)``); such a deficit is credited
as hits (slope 1), as SHARDS-adj would (linearly from slope ``b`` at ``outlier_sd`` sd to slope 1 at
twice that).
The two sums are kept per request, without a per-key hit array per miniature cache: a GET of a key
seen ``c`` times before adds ``2c + 1`` to ``sum(g^2)`` (exact), a hit adds ``2c`` to ``sum(g h)``
(exact in expectation when a key's first request misses and its later ones hit alike).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numba as nb
import numpy as np


@dataclass
class Counts:
    """Exponentially decayed counts of one miniature cache.

    ``expected`` is what the point *accounts for* (``rate x all GETs`` with the sampling correction,
    else the sampled GETs), ``gets`` the GETs it actually simulated, ``weight`` the same (infinite for a
    point that is ``empty``: smaller than Redis's fixed memory, it holds and hits nothing, exactly); ``p`` / ``q`` are ``sum(g h)`` / ``sum(g^2)`` of the correction's
    slope (``pb`` / ``qb`` the same in bytes). ``slope`` ``None`` reads ``p / q``, moving to slope 1 for
    a deficit beyond ``outlier_sd`` standard deviations of key-sampling noise at the key sample's
    ``rate``; a number fixes the slope (1.0 = SHARDS-adj).
    """

    hits: float = 0.0
    byte_hits: float = 0.0
    expected: float = 0.0
    expected_bytes: float = 0.0
    gets: float = 0.0
    get_bytes: float = 0.0
    p: float = 0.0
    q: float = 0.0
    pb: float = 0.0
    qb: float = 0.0
    slope: float | None = None
    rate: float = 1.0
    outlier_sd: float = 3.0
    empty: bool = False

    def decay(self, d: float) -> None:
        """Age by ``d`` (sums of squares age by ``d**2``)."""
        for f in ("hits", "byte_hits", "expected", "expected_bytes", "gets", "get_bytes"):
            setattr(self, f, getattr(self, f) * d)
        d2 = d * d
        self.p *= d2
        self.q *= d2
        self.pb *= d2
        self.qb *= d2

    def add(self, hits: float, byte_hits: float, expected: float, expected_bytes: float, gets: float,
            get_bytes: float, moments: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)) -> None:
        self.hits += hits
        self.byte_hits += byte_hits
        self.expected += expected
        self.expected_bytes += expected_bytes
        self.gets += gets
        self.get_bytes += get_bytes
        self.p += moments[0]
        self.q += moments[1]
        self.pb += moments[2]
        self.qb += moments[3]

    @property
    def weight(self) -> float:
        """Sampled GETs simulated (infinite for an exactly empty point): the readiness gates' evidence."""
        return math.inf if self.empty else self.gets

    def copy(self) -> Counts:
        return replace(self)

    def cleared(self) -> Counts:
        """No evidence, the same settings (slope, rate, outlier_sd, empty)."""
        return Counts(slope=self.slope, rate=self.rate, outlier_sd=self.outlier_sd, empty=self.empty)

    def _credit(self, missing: float, p: float, q: float) -> float:
        """Hits credited for ``missing`` GETs (negative: surplus) that a perfect sample would have held."""
        if self.slope is not None:
            return self.slope * missing
        b = regression_slope(p, q)
        # a deficit beyond what the sampled keys' spread explains (sd = sqrt((1 - r) sum g^2)) means an
        # unsampled hot key, whose GETs hit (SHARDS-adj's case): from outlier_sd to twice that many sd
        # the credit moves linearly from slope b to slope 1
        sd = math.sqrt(max((1.0 - self.rate) * q, 0.0))
        w = min(max(missing / (self.outlier_sd * sd) - 1.0, 0.0), 1.0) if sd > 0 else float(missing > 0)
        return (b + w * (1.0 - b)) * missing

    @property
    def size_factor(self) -> float:
        """How many times its nominal data a miniature cache fed by this sample stands for: ``f = expected_bytes /
        get_bytes`` (the sample's GETs carried ``1/f`` of the bytes its rate promised, so its working set is that
        much smaller), damped to ``f ** (1 - b)`` by the byte slope ``b``, the share of the discrepancy the heaviest
        keys explain (a hot key's GETs say nothing about space). 1 before any GET (see ``size_correction``)."""
        if self.get_bytes <= 0 or self.expected_bytes <= 0:
            return 1.0
        return float((self.expected_bytes / self.get_bytes) ** (1.0 - regression_slope(self.pb, self.qb)))

    @property
    def hit_ratio(self) -> float:
        return ratio(self.hits + self._credit(self.expected - self.gets, self.p, self.q), self.expected)

    @property
    def byte_hit_ratio(self) -> float:
        return ratio(self.byte_hits + self._credit(self.expected_bytes - self.get_bytes, self.pb, self.qb),
                     self.expected_bytes)


def regression_slope(p: float, q: float) -> float:
    """``sum(g h) / sum(g^2)`` clipped to [0, 1]; 1 (SHARDS-adj's slope) before any evidence."""
    return min(max(p / q, 0.0), 1.0) if q > 0 else 1.0


def ratio(a: float, b: float) -> float:
    """``a / b`` clipped to [0, 1] (the correction can push a ratio slightly out); NaN without evidence."""
    if b <= 0:
        return math.nan
    return float(min(max(a / b, 0.0), 1.0))


@nb.njit(cache=True, nogil=True)
def counts_before(keys, sizes, totals):  # pragma: no cover - numba
    """Per request (columns) and row of ``totals`` (long count, short count, long bytes, short bytes):
    its key's decayed total before it; then the request is added (``totals`` is updated in place)."""
    out = np.empty((4, len(keys)))
    for i in range(len(keys)):
        k = keys[i]
        s = float(sizes[i])
        for row in range(4):
            out[row, i] = totals[row, k]
        totals[0, k] += 1.0
        totals[1, k] += 1.0
        totals[2, k] += s
        totals[3, k] += s
    return out


def shifted(pairs: Sequence[tuple[Counts, Counts]], min_evidence: float, threshold: float) -> bool:
    """True when the short windows' hit ratios differ from the long windows' by more than ``threshold``
    on average over the points where both rest on ``min_evidence`` expected GETs (at least 4 points,
    so that one noisy miniature cache cannot trigger a restart)."""
    diffs = [
        abs(long.hit_ratio - short.hit_ratio)
        for long, short in pairs
        if long.expected >= min_evidence and short.expected >= min_evidence
    ]
    return len(diffs) >= 4 and sum(diffs) / len(diffs) > threshold


__all__ = ["Counts", "counts_before", "ratio", "regression_slope", "shifted"]
