"""Exponential backoff per target and per failure kind (unreachable Redis, refused CONFIG SET).

Deterministic (no jitter): one daemon per target set, so there is no herd to spread out, and
tests can reason about the schedule.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Backoff:
    initial_s: float = 1.0
    max_s: float = 60.0
    factor: float = 2.0
    failures: int = 0
    until: float = 0.0

    def ready(self, now: float) -> bool:
        return now >= self.until

    def fail(self, now: float) -> float:
        """Record a failure; returns the delay before the next attempt."""
        delay = min(self.initial_s * self.factor**self.failures, self.max_s)
        self.failures += 1
        self.until = now + delay
        return delay

    def succeed(self) -> None:
        self.failures = 0
        self.until = 0.0
