"""A workload whose hot set rotates periodically: the case a history model should win.

``groups`` groups of keys take turns being hot, each for ``on_buckets`` buckets, so the rotation
period is ``groups * on_buckets`` buckets. A key's own history shows its previous hot phase as long
as the period fits in the model's input (``seq_len``), so the next hot group is predictable from
history alone — while recency baselines (last value, EWMA) rank the *currently* hot group first and
are wrong each time the hot set moves. Background Zipf traffic over a larger cold population keeps
the ranking problem non-trivial.
"""

from __future__ import annotations

import numpy as np

from cachetuner.traces.trace import Op, Trace


def periodic_rotation_trace(
    *,
    groups: int = 4,
    keys_per_group: int = 64,
    on_buckets: int = 4,
    n_buckets: int = 320,
    bucket_s: float = 60.0,
    hot_rate: float = 10.0,
    cold_keys: int = 256,
    cold_requests_per_bucket: float = 200.0,
    zipf_alpha: float = 0.9,
    seed: int = 0,
) -> Trace:
    """Build the trace (request counts are Poisson per key and bucket; sizes lognormal per key)."""
    rng = np.random.default_rng(seed)
    n_hot = groups * keys_per_group
    n_keys = n_hot + cold_keys
    rates = hot_rate * rng.lognormal(0.0, 0.5, n_hot)
    group = np.arange(n_hot) // keys_per_group
    phase = (np.arange(n_buckets) // on_buckets) % groups
    lam = np.where(group[None, :] == phase[:, None], rates[None, :], 0.05)  # [bucket, hot key]
    hot_counts = rng.poisson(lam)
    cold_p = 1.0 / np.arange(1, cold_keys + 1) ** zipf_alpha
    cold_p /= cold_p.sum()
    cold_counts = rng.multinomial(rng.poisson(cold_requests_per_bucket, n_buckets), cold_p)
    counts = np.concatenate([hot_counts, cold_counts], axis=1)  # [bucket, key]
    b_idx, k_idx = np.nonzero(counts)
    reps = counts[b_idx, k_idx]
    buckets = np.repeat(b_idx, reps)
    keys = np.repeat(k_idx, reps).astype(np.int64)
    ts = (buckets + rng.random(len(buckets))) * bucket_s
    order = np.argsort(ts, kind="stable")
    ts, keys = ts[order], keys[order]
    key_sizes = np.rint(rng.lognormal(np.log(2048), 1.0, n_keys)).clip(1).astype(np.int64)
    n = len(keys)
    return Trace(
        name="synthetic:periodic-rotation",
        timestamps=ts.astype(np.float64),
        keys=keys,
        sizes=key_sizes[keys],
        ops=np.full(n, Op.GET, np.uint8),
        ttls=np.zeros(n, np.float64),
        n_keys=n_keys,
        key_bytes=np.full(n_keys, 16, np.int32),
        read_only=True,
        meta={"groups": groups, "on_buckets": on_buckets, "bucket_s": bucket_s, "seed": seed},
    )
