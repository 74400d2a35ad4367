"""From a :class:`~cachetuner.traces.trace.Trace` to (history, next-horizon) training windows.

A trace becomes a sparse ``keys x buckets`` matrix of access counts (one ``np.bincount`` over
``key * n_buckets + bucket``). An *anchor* bucket ``t`` splits time: the input is the key's counts
in buckets ``[t - seq_len, t)`` (log1p), the target its total count in ``[t, t + horizon)`` (log1p).

Why the split is by time and not by rows: neighbouring windows of one key share almost all their
buckets, so a random row split would let the model see the test targets as training inputs. Train
anchors are placed so that every bucket a training window touches (input or target) lies before
``split_bucket``; test anchors start at ``split_bucket``. :func:`check_no_leakage` asserts it.

Keys per anchor are sampled stratified by their history frequency (log-spaced strata), because a
uniform sample of a Zipf key space is almost all one-hit keys and teaches nothing about hot keys.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from pydantic import BaseModel, ConfigDict, Field

from cachetuner.errors import ConfigError
from cachetuner.traces.trace import Trace


class DatasetConfig(BaseModel):
    """How windows are cut from a trace."""

    model_config = ConfigDict(extra="forbid")

    bucket_s: float | None = Field(
        None, gt=0, description="bucket width in trace seconds; null = trace duration / auto_buckets"
    )
    auto_buckets: int = Field(256, ge=16, description="number of buckets when bucket_s is null")
    seq_len: int = Field(64, ge=2, description="history buckets per input")
    horizon_buckets: int = Field(5, ge=1, description="target = accesses in the next this many buckets")
    min_history: int = Field(
        16, ge=1, description="earliest anchor; windows reaching before bucket 0 are zero-padded"
    )
    test_fraction: float = Field(0.3, gt=0, lt=1, description="last share of buckets whose targets are test")
    val_fraction: float = Field(0.15, ge=0, lt=1, description="last share of training anchors held out for validation")
    keys_per_anchor: int = Field(512, ge=8, description="training keys sampled per anchor (stratified)")
    strata: int = Field(6, ge=1, description="log-spaced frequency strata for key sampling")
    train_anchor_stride: int = Field(1, ge=1)
    eval_anchor_stride: int = Field(4, ge=1, description="test anchors every this many buckets")
    eval_keys_per_anchor: int = Field(2000, ge=10, description="uniform cap on evaluated keys per test anchor")
    seed: int = 0


@dataclass
class BucketCounts:
    """Per-key access counts in fixed time buckets (CSR, rows = key ids)."""

    counts: sp.csr_matrix
    bucket_s: float
    t0: float
    key_sizes: np.ndarray  # int64, last seen size of each key (0 if never seen)

    @property
    def n_buckets(self) -> int:
        return int(self.counts.shape[1])

    def window(self, keys: np.ndarray, start: int, stop: int) -> np.ndarray:
        """Dense float32 counts of ``keys`` in buckets ``[start, stop)``; buckets < 0 read as zero."""
        lo = max(start, 0)
        dense = self.counts[keys][:, lo:stop].toarray().astype(np.float32)
        if lo > start:
            dense = np.pad(dense, ((0, 0), (lo - start, 0)))
        return dense


def bucket_counts(trace: Trace, bucket_s: float | None = None, auto_buckets: int = 256) -> BucketCounts:
    """Count accesses per (key, bucket). ``bucket_s=None`` picks ``duration / auto_buckets``."""
    if len(trace) == 0:
        raise ConfigError(f"trace {trace.name}: no requests to build a hotness dataset from")
    t0 = float(trace.timestamps[0])
    if bucket_s is None:
        bucket_s = max(trace.duration, 1e-9) / auto_buckets
    b = np.floor((trace.timestamps - t0) / bucket_s).astype(np.int64)
    nb = int(b[-1]) + 1
    n_keys = int(trace.n_keys)
    codes, n = np.unique(trace.keys.astype(np.int64) * nb + b, return_counts=True)
    counts = sp.csr_matrix((n.astype(np.float32), (codes // nb, codes % nb)), shape=(n_keys, nb))
    sizes = np.zeros(n_keys, np.int64)
    sizes[trace.keys] = trace.sizes
    return BucketCounts(counts=counts, bucket_s=float(bucket_s), t0=t0, key_sizes=sizes)


@dataclass
class Split:
    """Anchor buckets of each part of the time split."""

    train: np.ndarray
    val: np.ndarray
    test: np.ndarray
    split_bucket: int


def time_split(n_buckets: int, cfg: DatasetConfig) -> Split:
    """Place anchors so no training or validation window touches a bucket >= ``split_bucket``."""
    h = cfg.horizon_buckets
    split = int(round(n_buckets * (1 - cfg.test_fraction)))
    split = min(split, n_buckets - h)
    fit = np.arange(cfg.min_history, split - h + 1, cfg.train_anchor_stride)
    test = np.arange(split, n_buckets - h + 1, cfg.eval_anchor_stride)
    if len(fit) < 2 or len(test) < 1:
        raise ConfigError(
            f"dataset: {n_buckets} buckets are too few for min_history={cfg.min_history}, "
            f"horizon_buckets={h}, test_fraction={cfg.test_fraction}; use a smaller bucket_s "
            f"or a larger auto_buckets"
        )
    n_val = int(round(len(fit) * cfg.val_fraction))
    n_val = min(n_val, len(fit) - 1)
    # validation windows must not overlap the training targets either: drop the gap anchors
    train = fit[: len(fit) - n_val]
    val = fit[len(fit) - n_val :]
    if n_val:
        val = val[val >= train[-1] + h]
    return Split(train=train, val=val, test=test, split_bucket=split)


def check_no_leakage(split: Split, cfg: DatasetConfig) -> None:
    """Raise if any training/validation window (input or target) reaches a test target bucket."""
    last_fit = max(int(split.train.max()), int(split.val.max()) if len(split.val) else 0)
    last_fit_bucket = last_fit + cfg.horizon_buckets - 1
    if last_fit_bucket >= int(split.test.min()):
        raise AssertionError(f"leakage: training window reaches bucket {last_fit_bucket} >= first test bucket")


def stratified_keys(totals: np.ndarray, candidates: np.ndarray, n: int, strata: int, rng: np.random.Generator) -> np.ndarray:
    """Up to ``n`` of ``candidates``, equally many from each log2-frequency stratum of ``totals``."""
    if len(candidates) <= n:
        return candidates
    lg = np.log2(totals[candidates])
    edges = np.linspace(0.0, lg.max() + 1e-9, strata + 1)[1:-1]
    stratum = np.searchsorted(edges, lg, side="right")
    per = max(1, n // strata)
    picked = []
    for s in range(strata):
        members = candidates[stratum == s]
        if len(members):
            picked.append(rng.choice(members, size=min(per, len(members)), replace=False))
    out = np.concatenate(picked)
    if len(out) < n:  # top up from what the small strata left over
        rest = np.setdiff1d(candidates, out, assume_unique=True)
        out = np.concatenate([out, rng.choice(rest, size=min(n - len(out), len(rest)), replace=False)])
    return out


@dataclass
class Windows:
    """Stacked windows: ``x`` log1p history ``[N, seq_len]``, ``y`` log1p target ``[N]``.

    ``anchor`` and ``key`` say where each row came from; ``sizes`` are the key's bytes.
    """

    x: np.ndarray
    y: np.ndarray
    anchor: np.ndarray
    key: np.ndarray
    sizes: np.ndarray

    def __len__(self) -> int:
        return len(self.y)

    def groups(self) -> list[np.ndarray]:
        """Row indices of each anchor (ranking metrics are computed per anchor)."""
        order = np.argsort(self.anchor, kind="stable")
        _, starts = np.unique(self.anchor[order], return_index=True)
        return np.split(order, starts[1:])


def _active(bc: BucketCounts, t: int, seq_len: int) -> tuple[np.ndarray, np.ndarray]:
    hist = bc.counts[:, max(t - seq_len, 0) : t]
    totals = np.asarray(hist.sum(axis=1)).ravel()
    return np.flatnonzero(totals > 0), totals


def build_windows(
    bc: BucketCounts, anchors: np.ndarray, cfg: DatasetConfig, *, stratified: bool, seed_offset: int = 0
) -> Windows:
    """Windows at ``anchors`` for keys active in the history (stratified sample or uniform cap)."""
    rng = np.random.default_rng([cfg.seed, seed_offset])
    L, h = cfg.seq_len, cfg.horizon_buckets
    xs, ys, an, ks = [], [], [], []
    for t in anchors:
        t = int(t)
        cand, totals = _active(bc, t, L)
        if len(cand) == 0:
            continue
        if stratified:
            keys = stratified_keys(totals, cand, cfg.keys_per_anchor, cfg.strata, rng)
        elif len(cand) > cfg.eval_keys_per_anchor:
            keys = np.sort(rng.choice(cand, size=cfg.eval_keys_per_anchor, replace=False))
        else:
            keys = cand
        xs.append(bc.window(keys, t - L, t))
        ys.append(np.asarray(bc.counts[keys][:, t : t + h].sum(axis=1)).ravel())
        an.append(np.full(len(keys), t, np.int64))
        ks.append(keys)
    if not xs:
        z = np.zeros(0, np.int64)
        return Windows(np.zeros((0, L), np.float32), np.zeros(0, np.float32), z, z, z)
    key = np.concatenate(ks)
    return Windows(
        x=np.log1p(np.concatenate(xs)).astype(np.float32),
        y=np.log1p(np.concatenate(ys)).astype(np.float32),
        anchor=np.concatenate(an),
        key=key,
        sizes=bc.key_sizes[key],
    )


@dataclass
class HotnessDataset:
    """Everything a training/evaluation run needs from one trace."""

    counts: BucketCounts
    split: Split
    train: Windows
    val: Windows
    test: Windows
    cfg: DatasetConfig


def build_dataset(trace: Trace, cfg: DatasetConfig) -> HotnessDataset:
    """Bucket the trace, split by time, and cut stratified training and full test windows."""
    bc = bucket_counts(trace, cfg.bucket_s, cfg.auto_buckets)
    split = time_split(bc.n_buckets, cfg)
    check_no_leakage(split, cfg)
    return HotnessDataset(
        counts=bc,
        split=split,
        train=build_windows(bc, split.train, cfg, stratified=True, seed_offset=1),
        val=build_windows(bc, split.val, cfg, stratified=True, seed_offset=2),
        test=build_windows(bc, split.test, cfg, stratified=False, seed_offset=3),
        cfg=cfg,
    )
