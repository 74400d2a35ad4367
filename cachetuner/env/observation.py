"""The observation vector: one interval's metrics, the current config and the what-if estimates.

Every feature is scaled to a fixed range (mostly [0, 1], the request rate to [-1, 1]) so that one
policy network works across workloads of very different rates and sizes; missing or NaN values
(a live scrape gap, an interval without gets) become the neutral value 0, never NaN.
The table of features is in :class:`~cachetuner.env.cache_env.CacheTuningEnv`'s docstring and docs/env.md.
With TTL action dimensions (``actions.ttl_multipliers``) the client TTL multipliers in force come last,
one per dimension, so that every other feature keeps its index.
"""

from __future__ import annotations

import math
from collections import deque

import numpy as np
from gymnasium import spaces

from cachetuner.config import REDIS_POLICIES, RedisConfig
from cachetuner.env.config import EnvConfig
from cachetuner.metrics import LATENCY_BUCKETS_S, MetricsSnapshot
from cachetuner.ttl.knobs import ClientTTL

#: (name, low, high) of the fixed part of the observation, in order.
BASE_FEATURES: tuple[tuple[str, float, float], ...] = (
    ("hit_ratio", 0.0, 1.0),
    ("byte_hit_ratio", 0.0, 1.0),
    ("request_rate", -1.0, 1.0),
    ("rate_volatility", 0.0, 1.0),
    ("memory_utilisation", 0.0, 1.5),
    ("evictions_per_request", 0.0, 1.0),
    ("expirations_per_request", 0.0, 1.0),
    ("latency_p50", 0.0, 1.0),
    ("latency_p95", 0.0, 1.0),
    ("latency_p99", 0.0, 1.0),
    ("latency_p95_vs_slo", 0.0, 1.0),
    ("l2_hit_ratio", 0.0, 1.0),
    ("connected_clients", 0.0, 1.0),
    ("rejected_writes_per_request", 0.0, 1.0),
    ("maxmemory_position", 0.0, 1.0),
    *((f"policy={p}", 0.0, 1.0) for p in REDIS_POLICIES),
    ("timeout_index", 0.0, 1.0),
    ("maxmemory_samples", 0.0, 1.0),
    ("lfu_log_factor", 0.0, 1.0),
    ("lfu_decay_time", 0.0, 1.0),
)


def _f(x: float) -> float:
    return float(x) if math.isfinite(x) else 0.0


#: Latency quantiles are placed on a log scale over the shared histogram's range (0.1 ms .. 20 s):
#: hits (sub-millisecond) and model calls (seconds) differ by four orders of magnitude.
_LAT_LO_MS = LATENCY_BUCKETS_S[0] * 1000.0
_LAT_HI_MS = LATENCY_BUCKETS_S[-1] * 1000.0


def _log_latency(p_ms: float) -> float:
    p = _f(p_ms)
    if p <= _LAT_LO_MS:
        return 0.0
    return min(math.log(p / _LAT_LO_MS) / math.log(_LAT_HI_MS / _LAT_LO_MS), 1.0)


def _ratio(num: float, den: float) -> float:
    return min(max(num / den, 0.0), 1.0) if den > 0 else 0.0


def ttl_feature_names(cfg: EnvConfig) -> list[str]:
    """``ttl_multiplier`` (one shared dimension) or ``ttl_multiplier:CLASS`` per class; none when off."""
    a = cfg.actions
    if not a.ttl_multipliers:
        return []
    return [f"ttl_multiplier:{c}" for c in a.ttl_classes] or ["ttl_multiplier"]


def ttl_features(cfg: EnvConfig, ttl: ClientTTL) -> list[float]:
    """Each multiplier's position between the smallest and largest choice on a log scale, [0, 1]
    (log: 0.5 and 2 are as far from 1; a static value outside the choices is clipped)."""
    a = cfg.actions
    lo, hi = math.log(min(a.ttl_multipliers)), math.log(max(a.ttl_multipliers))
    values = [getattr(ttl, c) for c in a.ttl_classes] or [ttl.mean_factor()]
    return [_ratio(math.log(v) - lo, hi - lo) for v in values]


class ObservationBuilder:
    """Builds the vector and owns the short request-rate history used for volatility."""

    def __init__(self, cfg: EnvConfig, whatif_labels: list[str], extra_names: list[str] | None = None) -> None:
        self.cfg = cfg
        self.whatif_labels = list(whatif_labels)
        self.extra_names = list(extra_names or [])
        feats = list(BASE_FEATURES) + [(f"whatif:{lbl}", 0.0, 1.0) for lbl in self.whatif_labels]
        feats += [(n, 0.0, 1.0) for n in self.extra_names]
        self.ttl_names = ttl_feature_names(cfg)
        feats += [(n, 0.0, 1.0) for n in self.ttl_names]
        self.names = [n for n, _, _ in feats]
        self.low = np.array([lo for _, lo, _ in feats], dtype=np.float32)
        self.high = np.array([hi for _, _, hi in feats], dtype=np.float32)
        self.space = spaces.Box(self.low, self.high, dtype=np.float32)
        self._rates: deque[float] = deque(maxlen=cfg.observation.volatility_window)
        self.rate_reference = 1.0

    def reset(self, rate_reference: float | None) -> None:
        ref = self.cfg.observation.rate_reference_rps or rate_reference
        self.rate_reference = float(ref) if ref and ref > 0 else 0.0
        self._rates.clear()

    def build(
        self,
        snap: MetricsSnapshot,
        config: RedisConfig,
        bounds: tuple[int, int],
        whatif: dict[str, float] | None,
        appended: list[float] | None = None,
        client_ttl: ClientTTL | None = None,
    ) -> np.ndarray:
        """``appended``: the values of ``extra_names``; ``client_ttl``: the multipliers in force (TTL features)."""
        oc, slo = self.cfg.observation, self.cfg.slo_p95_ms
        rate = snap.request_rate
        if self.rate_reference <= 0 and rate > 0:  # no reference known: the first rate seen is the reference
            self.rate_reference = rate
        self._rates.append(rate)
        rel = math.log(max(rate, 1e-9) / self.rate_reference) / math.log(oc.rate_log_base) if rate > 0 else -1.0
        rates = np.asarray(self._rates)
        vol = float(rates.std() / rates.mean()) if len(rates) > 1 and rates.mean() > 0 else 0.0
        n = max(snap.requests, 1)
        lo, hi = bounds
        timeouts = self.cfg.actions.timeouts
        t_idx = int(np.argmin([abs(t - config.timeout) for t in timeouts]))
        base = [
            _f(snap.hit_ratio),
            _f(snap.byte_hit_ratio),
            rel,
            vol,
            _f(snap.memory_utilisation),
            snap.evictions / n,
            snap.expirations / n,
            *(_log_latency(p) for p in (snap.latency_p50_ms, snap.latency_p95_ms, snap.latency_p99_ms)),
            _f(snap.latency_p95_ms) / (_f(snap.latency_p95_ms) + slo),
            _f(snap.l2_hit_ratio),
            snap.connected_clients / (snap.connected_clients + oc.clients_reference),
            snap.rejected_writes / n,
            _ratio(config.maxmemory - lo, hi - lo),
            *(1.0 if config.maxmemory_policy == p else 0.0 for p in REDIS_POLICIES),
            t_idx / (len(timeouts) - 1) if len(timeouts) > 1 else 0.0,
            math.log2(config.maxmemory_samples) / 6.0,
            config.lfu_log_factor / 255.0,
            min(config.lfu_decay_time, 60) / 60.0,
        ]
        est = whatif or {}
        fallback = _f(snap.hit_ratio)
        extra = [_f(est.get(lbl, fallback)) if math.isfinite(est.get(lbl, math.nan)) else fallback
                 for lbl in self.whatif_labels]
        tail = [_f(x) for x in (appended or [0.0] * len(self.extra_names))]
        if self.ttl_names:
            tail += ttl_features(self.cfg, client_ttl or self.cfg.client_ttl)
        vec = np.asarray(base + extra + tail, dtype=np.float32)
        return np.clip(np.nan_to_num(vec, nan=0.0), self.low, self.high)
