"""Decayed counts of one miniature cache, and the two-window shift test over them.

Why two windows: one exponential window has to trade stability against speed. A half-life long
enough to see long reuse distances (and to average out a 1 % sample) keeps a finished regime in the
curve for several half-lives: measured on a workload that turns from Zipf 0.6 to Zipf 1.3, the
single window told ``mrc`` to keep a 4x oversized cache for ~60 intervals after the change. A second,
shorter window sees the new regime within a few intervals; when the two disagree by more than noise
can explain, the long window restarts from the short one (the old regime is dropped, and the
readiness gates make the controller wait until the restarted window has enough evidence again).
This is the classical two-window change test (as in ADWIN, Bifet & Gavaldà, SDM'07), applied to the
whole curve rather than one statistic.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace


@dataclass
class Counts:
    """Exponentially decayed (SHARDS-adj corrected) hits and expected GETs of one miniature cache.

    ``expected`` is what the point *accounts for* (``rate x all GETs`` with SHARDS-adj), ``weight``
    what was actually simulated (sampled GETs)."""

    hits: float = 0.0
    byte_hits: float = 0.0
    expected: float = 0.0
    expected_bytes: float = 0.0
    weight: float = 0.0

    def decay(self, d: float) -> None:
        self.hits *= d
        self.byte_hits *= d
        self.expected *= d
        self.expected_bytes *= d
        self.weight *= d

    def add(self, hits: float, byte_hits: float, expected: float, expected_bytes: float, weight: float) -> None:
        self.hits += hits
        self.byte_hits += byte_hits
        self.expected += expected
        self.expected_bytes += expected_bytes
        self.weight += weight

    def copy(self) -> Counts:
        return replace(self)

    @property
    def hit_ratio(self) -> float:
        return ratio(self.hits, self.expected)

    @property
    def byte_hit_ratio(self) -> float:
        return ratio(self.byte_hits, self.expected_bytes)


def ratio(a: float, b: float) -> float:
    """``a / b`` clipped to [0, 1] (SHARDS-adj can push a ratio slightly out); NaN without evidence."""
    if b <= 0:
        return math.nan
    return float(min(max(a / b, 0.0), 1.0))


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


__all__ = ["Counts", "ratio", "shifted"]
