"""The rule-based TTL policies: ``trace``, ``fixed:SECONDS``, ``rules``, ``multi-factor``.

Every quantity below is computed causally, from requests strictly before the one being assigned,
vectorised over the whole trace (one stable sort per grouping). See docs/ttl.md for the tables.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cachetuner.traces.trace import Trace
from cachetuner.ttl.base import TTL_POLICIES
from cachetuner.ttl.keyspace import KeySpace


# ----------------------------------------------------------------------------- causal features
def previous_access(keys: np.ndarray, ts: np.ndarray) -> np.ndarray:
    """Time of the previous request of the same key (``-inf`` for its first request)."""
    order = np.argsort(keys, kind="stable")
    k = keys[order]
    prev = np.full(len(keys), -np.inf)
    same = np.zeros(len(keys), dtype=bool)
    same[1:] = k[1:] == k[:-1]
    p = np.full(len(keys), -np.inf)
    p[1:] = ts[order[:-1]]
    prev[order] = np.where(same, p, -np.inf)
    return prev


def recent_count(keys: np.ndarray, ts: np.ndarray, window_s: float) -> np.ndarray:
    """Number of earlier requests of the same key within the last ``window_s`` seconds."""
    order = np.argsort(keys, kind="stable")
    k = keys[order].astype(np.float64)
    t = ts[order] - ts[0] if len(ts) else ts
    span = (float(t.max()) if len(t) else 0.0) + window_s + 1.0
    axis = k * span + t
    first = np.searchsorted(axis, axis - window_s, side="left")
    out = np.empty(len(keys), dtype=np.int64)
    out[order] = np.arange(len(keys)) - first
    return out


def runs_before(labels: np.ndarray, flags: np.ndarray) -> np.ndarray:
    """For each request: how many consecutive earlier requests with the same label had ``flags`` set."""
    n = len(labels)
    order = np.argsort(labels, kind="stable")
    f = flags[order].astype(np.int64)
    lab = labels[order]
    start = np.ones(n, dtype=bool)
    start[1:] = lab[1:] != lab[:-1]
    c = np.cumsum(f)
    reset = (f == 0) | start
    # c - f at the last reset (a zero flag or a new label) is what the current run counts from
    run_incl = c - np.maximum.accumulate(np.where(reset, c - f, 0))
    before = np.zeros(n, dtype=np.int64)
    before[1:] = run_incl[:-1]
    before[start] = 0
    out = np.empty(n, dtype=np.int64)
    out[order] = before
    return out


def rate_ratio(labels: np.ndarray, ts: np.ndarray, short_s: float, long_s: float) -> np.ndarray:
    """Per request: (request rate of its label over the last ``short_s``) / (over the last ``long_s``)."""
    n_short = recent_count(labels, ts, short_s) + 1
    n_long = recent_count(labels, ts, long_s) + 1
    # the long window is shorter than long_s at the start of the trace: divide by the time really covered
    covered = np.clip(ts - ts[0], short_s, long_s) if len(ts) else ts
    return (n_short / short_s) / (n_long / covered)


# ----------------------------------------------------------------------------- policies
@dataclass
class TraceTTL:
    """Today's behaviour: the TTL the trace carries (0 = none)."""

    name: str = "trace"

    def assign(self, trace: Trace, keyspace: KeySpace) -> np.ndarray:
        return np.asarray(trace.ttls, dtype=np.float64)


@dataclass
class FixedTTL:
    """Every write gets the same TTL."""

    seconds: float
    name: str = "fixed"

    def __post_init__(self) -> None:
        if not self.seconds >= 0:
            raise ValueError("fixed:SECONDS needs SECONDS >= 0")
        self.name = f"fixed:{self.seconds:g}"

    def assign(self, trace: Trace, keyspace: KeySpace) -> np.ndarray:
        return np.full(len(trace), float(self.seconds))


@dataclass
class RulesTTL:
    """The LLM-cache design's table (§4.1).

    | class | when (causal) | TTL |
    |---|---|---|
    | time-sensitive | the key's group is time-sensitive (``KeySpace.volatile``) | 300 s, ×0.92 if the group had a source update in the last 300 s |
    | stable high-frequency | otherwise, >= ``hot_min`` earlier requests of the key in the last ``hot_window_s`` | 3600 s |
    | long-tail | otherwise | 180 s, ×0.75 after 3 consecutive misses in the key's group |

    A *miss* in the long-tail rule is approximated, identically in every tool, by the miss an
    unbounded cache would have under this rule: the key's first request, or one more than the
    long-tail TTL after its previous request (expired). Eviction misses are not seen by the rule (they
    depend on the cache size, and a rule that read them would not be a function of the trace).
    """

    stable_s: float = 3600.0
    sensitive_s: float = 300.0
    sensitive_update_factor: float = 0.92
    tail_s: float = 180.0
    tail_miss_factor: float = 0.75
    tail_misses: int = 3
    hot_min: int = 3
    hot_window_s: float = 600.0
    name: str = "rules"

    def classes(self, trace: Trace, keyspace: KeySpace) -> np.ndarray:
        """0 stable high-frequency, 1 time-sensitive, 2 long-tail, per request."""
        keys, ts = trace.keys.astype(np.int64), trace.timestamps.astype(np.float64)
        hot = recent_count(keys, ts, self.hot_window_s) >= self.hot_min
        sensitive = keyspace.volatile[keyspace.group[keys]]
        return np.where(sensitive, 1, np.where(hot, 0, 2))

    def assign(self, trace: Trace, keyspace: KeySpace) -> np.ndarray:
        keys, ts = trace.keys.astype(np.int64), trace.timestamps.astype(np.float64)
        cls = self.classes(trace, keyspace)
        group = keyspace.group[keys]
        recent_update = ts - keyspace.last_update(group, ts) <= self.sensitive_s
        miss = ts - previous_access(keys, ts) > self.tail_s
        tail_runs = runs_before(group, miss)
        ttl = np.where(cls == 0, self.stable_s, 0.0)
        ttl = np.where(cls == 1, self.sensitive_s * np.where(recent_update, self.sensitive_update_factor, 1.0), ttl)
        tail = self.tail_s * np.where(tail_runs >= self.tail_misses, self.tail_miss_factor, 1.0)
        return np.where(cls == 2, tail, ttl)


@dataclass
class MultiFactorTTL:
    """The design's formula (§4.2):
    ``TTL = base × max(0.3, 1/qps_ratio) × (0.8 + 0.2·gray) × [1.2, 1.0, 0.7, 0.4][sla_level]``.

    * ``qps_ratio``: the tenant's request rate over the last ``short_s`` / over the last ``long_s``
      (a burst shortens TTLs, down to 0.3×);
    * ``gray``: progress of the group's gray release, 0 right after a source update / model version
      of the key's group, rising linearly to 1 after ``gray_window_s`` (1 when there was none);
    * ``sla_level``: the tenant's QoS class (gold 0, silver 1, bronze 2; a single-tenant trace is silver).
    """

    base_s: float = 30.0
    short_s: float = 60.0
    long_s: float = 3600.0
    gray_window_s: float = 600.0
    name: str = "multi-factor"

    SLA_FACTORS = (1.2, 1.0, 0.7, 0.4)

    def assign(self, trace: Trace, keyspace: KeySpace) -> np.ndarray:
        keys, ts = trace.keys.astype(np.int64), trace.timestamps.astype(np.float64)
        tenant = keyspace.tenant[keys]
        qps = rate_ratio(tenant, ts, self.short_s, self.long_s)
        since = ts - keyspace.last_update(keyspace.group[keys], ts)
        gray = np.clip(since / self.gray_window_s, 0.0, 1.0)
        sla = np.asarray(self.SLA_FACTORS)[np.minimum(keyspace.sla_level()[tenant], 3)]
        return self.base_s * np.maximum(0.3, 1.0 / qps) * (0.8 + 0.2 * gray) * sla


def _no_arg(cls: type, name: str):  # type: ignore[no-untyped-def]
    def make(arg: str | None, **settings: float) -> object:
        if arg is not None:
            raise ValueError(f"{name} takes no ':ARG' (settings go after a comma, e.g. {name},key=value)")
        return cls(**settings)

    return make


def _fixed(arg: str | None, **settings: object) -> FixedTTL:
    if arg is None:
        raise ValueError("fixed needs seconds, e.g. fixed:300")
    if settings:
        raise ValueError(f"fixed takes no settings, got {', '.join(settings)}")
    return FixedTTL(float(arg))


TTL_POLICIES.add("trace", _no_arg(TraceTTL, "trace"))
TTL_POLICIES.add("fixed", _fixed)
TTL_POLICIES.add("rules", _no_arg(RulesTTL, "rules"))
TTL_POLICIES.add("multi-factor", _no_arg(MultiFactorTTL, "multi-factor"))


def _hotness(arg: str | None, **settings: object) -> object:
    # torch (the LSTM) is imported only when a hotness policy is built: the replayer, the A/B runner
    # and every other importer of cachetuner.ttl stay free of it
    from cachetuner.ttl.hotness import make_hotness

    return make_hotness(arg, **settings)  # type: ignore[arg-type]


TTL_POLICIES.add("hotness", _hotness)
