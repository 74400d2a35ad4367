"""Ranking metrics of predicted vs actual next-window counts, computed per anchor and averaged.

Per anchor because a cache ranks the keys it holds *now*; pooling anchors would reward a model
for knowing which time windows are busy rather than which keys are hot.

Hot sets are tie-aware: with ``k`` = ceil(share * n) the actual hot set is every key whose actual
count reaches the k-th largest count and is non-zero, so a predicted key tied with the k-th actual
key counts as a hit (traces have many equal counts; an arbitrary tie break would make precision
noisy) while a key that is not accessed at all never does. When fewer than ``k`` keys are accessed
in the horizon, even a perfect predictor scores below 1 on precision.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.stats import spearmanr

from cachetuner.hotness_model.dataset import Windows

METRIC_NAMES = ("spearman", "top1_precision", "top10_precision", "byte_recall")


def _topk(pred: np.ndarray, k: int) -> np.ndarray:
    return np.argpartition(-pred, k - 1)[:k]


def actual_hot(actual: np.ndarray, share: float) -> np.ndarray:
    """Tie-aware actual hot set: accessed keys whose count reaches the k-th largest count."""
    k = max(1, math.ceil(share * len(actual)))
    threshold = np.partition(actual, len(actual) - k)[len(actual) - k]
    return (actual >= threshold) & (actual > 0)


def hot_set_precision(pred: np.ndarray, actual: np.ndarray, share: float) -> float:
    """Share of the predicted top-``share`` keys that are in the actual hot set."""
    k = max(1, math.ceil(share * len(pred)))
    return float(np.mean(actual_hot(actual, share)[_topk(pred, k)]))


def byte_recall(pred: np.ndarray, actual: np.ndarray, sizes: np.ndarray, share: float = 0.10) -> float:
    """Bytes of the actual hot set (top ``share``) that the predicted top ``share`` captures."""
    k = max(1, math.ceil(share * len(pred)))
    hot = actual_hot(actual, share)
    picked = np.zeros(len(pred), bool)
    picked[_topk(pred, k)] = True
    total = float(sizes[hot].sum())
    return float(sizes[hot & picked].sum()) / total if total > 0 else float("nan")


def ranking_metrics(pred: np.ndarray, windows: Windows) -> dict[str, float]:
    """Mean over anchors of Spearman rho, top-1%/top-10% precision and top-10% byte recall."""
    rows: dict[str, list[float]] = {m: [] for m in METRIC_NAMES}
    for idx in windows.groups():
        if len(idx) < 10:
            continue
        p, a = pred[idx], windows.y[idx]
        if np.ptp(a) > 0 and np.ptp(p) > 0:
            rows["spearman"].append(float(spearmanr(p, a).statistic))
        else:
            rows["spearman"].append(0.0)  # a constant prediction (or target) ranks nothing
        rows["top1_precision"].append(hot_set_precision(p, a, 0.01))
        rows["top10_precision"].append(hot_set_precision(p, a, 0.10))
        rows["byte_recall"].append(byte_recall(p, a, windows.sizes[idx].astype(np.float64), 0.10))
    return {m: float(np.nanmean(v)) if v else float("nan") for m, v in rows.items()}
