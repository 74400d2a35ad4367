"""Hotness features for the tuning env: what the *next* interval's hot set will need.

:class:`HotnessFeatures` keeps, for up to ``max_keys`` recently seen keys, the counts of the last
``seq_len`` intervals (one env step = one bucket), read from
``env.unwrapped.backend.recent_requests()`` after every reset/step. A :class:`HotnessPredictor`
turns them into predicted next-interval counts, and four features are appended to the Box
observation:

| feature | meaning | range |
|---|---|---|
| ``hot_bytes_p80/p90/p99`` | bytes of the predicted-hottest keys that cover 80/90/99 % of the predicted requests, / current maxmemory | [0, ``max_ratio``] |
| ``hot_churn`` | Jaccard distance between this and the previous interval's predicted top-k | [0, 1] |

Approximations (stated, not hidden): keys are tracked in a bounded table (the least-accessed are
dropped beyond ``max_keys``); with a sampled ``RequestSample`` (rate < 1) counts and bytes are
scaled by 1/rate; history starts empty at every reset (the env's warm-up intervals run before the
wrapper sees traffic); the model was trained with the trace's bucket width, not necessarily the
env's interval, and is used as a rate-agnostic ranker of log-counts.
"""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import numpy as np

from cachetuner.backend import RequestSample
from cachetuner.errors import ConfigError
from cachetuner.hotness_model.predictor import HotnessPredictor

FEATURE_NAMES = ("hot_bytes_p80", "hot_bytes_p90", "hot_bytes_p99", "hot_churn")
COVERAGE = (0.80, 0.90, 0.99)


class KeyHistory:
    """Bounded per-key counts of the last ``seq_len`` intervals (sorted key ids, dense rows)."""

    def __init__(self, seq_len: int, max_keys: int) -> None:
        self.seq_len = seq_len
        self.max_keys = max_keys
        self.clear()

    def clear(self) -> None:
        self.keys = np.zeros(0, np.int64)
        self.counts = np.zeros((0, self.seq_len), np.float32)
        self.sizes = np.zeros(0, np.float64)

    def push(self, sample: RequestSample) -> None:
        """Shift every row one interval left and add the new interval's counts in the last column."""
        scale = 1.0 / sample.rate if sample.rate > 0 else 1.0
        uk, first, cnt = np.unique(sample.keys.astype(np.int64), return_index=True, return_counts=True)
        # last seen size per key: unique over the reversed array gives last occurrences
        rev_keys = sample.keys[::-1].astype(np.int64)
        _, last_rev = np.unique(rev_keys, return_index=True)
        new_sizes = sample.sizes[::-1][last_rev].astype(np.float64) if len(uk) else np.zeros(0)
        keys = np.union1d(self.keys, uk)
        counts = np.zeros((len(keys), self.seq_len), np.float32)
        sizes = np.zeros(len(keys), np.float64)
        old = np.searchsorted(keys, self.keys)
        counts[old, :-1] = self.counts[:, 1:]
        sizes[old] = self.sizes
        new = np.searchsorted(keys, uk)
        counts[new, -1] = cnt * scale
        sizes[new] = new_sizes
        alive = counts.sum(axis=1) > 0
        keys, counts, sizes = keys[alive], counts[alive], sizes[alive]
        if len(keys) > self.max_keys:
            keep = np.sort(np.argpartition(-counts.sum(axis=1), self.max_keys - 1)[: self.max_keys])
            keys, counts, sizes = keys[keep], counts[keep], sizes[keep]
        self.keys, self.counts, self.sizes = keys, counts, sizes


def coverage_bytes(pred_counts: np.ndarray, sizes: np.ndarray, shares: tuple[float, ...] = COVERAGE) -> list[float]:
    """Bytes of the hottest keys (by predicted count) needed to cover each share of predicted requests."""
    total = float(pred_counts.sum())
    if total <= 0:
        return [0.0 for _ in shares]
    order = np.argsort(-pred_counts, kind="stable")
    frac = np.cumsum(pred_counts[order]) / total
    cum_bytes = np.cumsum(sizes[order])
    idx = np.minimum(np.searchsorted(frac, np.asarray(shares) - 1e-12, side="left"), len(order) - 1)
    return [float(b) for b in cum_bytes[idx]]


def jaccard_distance(a: np.ndarray, b: np.ndarray) -> float:
    union = len(np.union1d(a, b))
    return 1.0 - len(np.intersect1d(a, b)) / union if union else 0.0


class HotnessTracker:
    """The features' state outside any env: key history, predictor and the previous hot set.

    :class:`HotnessFeatures` (training) and the ``ppo`` controller (evaluation, from the decision
    context's request sample) both call :meth:`update` once per interval, so a policy sees the same
    features in both. :meth:`reset` starts an episode (empty history, no previous hot set)."""

    def __init__(
        self, predictor: HotnessPredictor, *, max_keys: int = 1024, top_k_share: float = 0.1, max_ratio: float = 8.0
    ) -> None:
        self.predictor = predictor
        self.history = KeyHistory(predictor.seq_len, max_keys)
        self.top_k_share = top_k_share
        self.max_ratio = max_ratio
        self._prev_top: np.ndarray | None = None

    def reset(self) -> None:
        self.history.clear()
        self._prev_top = None

    def update(self, sample: RequestSample, maxmemory: float) -> list[float]:
        """Push the interval's requests; the four features (unclipped) in :data:`FEATURE_NAMES` order."""
        self.history.push(sample)
        return self._features(maxmemory, sample.rate)

    def _features(self, maxmemory: float, rate: float) -> list[float]:
        h = self.history
        if len(h.keys) == 0:
            self._prev_top = None
            return [0.0, 0.0, 0.0, 0.0]
        pred = np.expm1(self.predictor.predict(np.log1p(h.counts))).clip(min=0.0).astype(np.float64)
        scale = 1.0 / rate if rate > 0 else 1.0
        cover = coverage_bytes(pred, h.sizes * scale)
        ratios = [c / maxmemory if maxmemory > 0 else 0.0 for c in cover]
        k = max(1, math.ceil(self.top_k_share * len(pred)))
        top = h.keys[np.argpartition(-pred, k - 1)[:k]]
        churn = jaccard_distance(top, self._prev_top) if self._prev_top is not None else 0.0
        self._prev_top = top
        return [*ratios, churn]

    def clipped(self, feats: list[float]) -> np.ndarray:
        """The features as appended to an observation: clipped to ``[0, max_ratio]`` (bytes) and ``[0, 1]`` (churn)."""
        return np.clip(np.asarray(feats, np.float64), 0.0, np.array([self.max_ratio] * 3 + [1.0]))


class HotnessFeatures(gym.Wrapper):
    """Append predicted hot-set size and churn to a :class:`CacheTuningEnv` Box observation.

    Args:
        env: an env whose ``unwrapped.backend`` has ``recent_requests()`` and whose observation
            space is a 1-D ``Box``.
        predictor: any :class:`HotnessPredictor` (in-process for training and tests; Triton with
            in-process fallback in the daemon).
        max_keys: keys tracked (and predicted per step).
        top_k_share: share of tracked keys forming the "hot set" for churn.
        max_ratio: clip of the bytes / maxmemory features.
    """

    def __init__(
        self,
        env: gym.Env,
        predictor: HotnessPredictor,
        *,
        max_keys: int = 1024,
        top_k_share: float = 0.1,
        max_ratio: float = 8.0,
    ) -> None:
        super().__init__(env)
        space = env.observation_space
        if not isinstance(space, gym.spaces.Box) or len(space.shape) != 1:
            raise ConfigError(f"HotnessFeatures needs a 1-D Box observation space, got {space}")
        self.tracker = HotnessTracker(predictor, max_keys=max_keys, top_k_share=top_k_share, max_ratio=max_ratio)
        self.predictor = predictor
        self.history = self.tracker.history
        self.max_ratio = max_ratio
        low = np.concatenate([space.low, np.zeros(4, space.dtype)]).astype(space.dtype)
        high = np.concatenate([space.high, np.array([max_ratio] * 3 + [1.0], space.dtype)]).astype(space.dtype)
        self.observation_space = gym.spaces.Box(low, high, dtype=space.dtype)
        self.last_features: dict[str, float] = dict.fromkeys(FEATURE_NAMES, 0.0)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        obs, info = self.env.reset(seed=seed, options=options)
        self.tracker.reset()
        return self._extend(obs, info), info

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        return self._extend(obs, info), float(reward), terminated, truncated, info

    # -- internals ----------------------------------------------------------------------------------------
    def _maxmemory(self, info: dict) -> float:
        snap = info.get("snapshot")
        mm = getattr(snap, "maxmemory", 0) if snap is not None else 0
        if not mm:
            mm = getattr(getattr(self.env.unwrapped, "backend", None), "config", None)
            mm = getattr(mm, "maxmemory", 0)
        return float(mm or 0)

    def _extend(self, obs: np.ndarray, info: dict) -> np.ndarray:
        backend = self.env.unwrapped.backend  # type: ignore[attr-defined]
        feats = self.tracker.update(backend.recent_requests(), self._maxmemory(info))
        self.last_features = dict(zip(FEATURE_NAMES, feats, strict=True))
        info["hotness"] = dict(self.last_features)
        return np.concatenate([obs, self.tracker.clipped(feats).astype(obs.dtype)])
