"""Hash-sampled requests published by the replayer to a Redis Stream, read back by the live backend.

Sampling is by key (SHARDS-style): a request is published when ``splitmix64(key) mod 2**24 <
round(rate * 2**24)`` (the same hash as :func:`cachetuner.env.whatif.hash_sample_mask`), so a sampled key is sampled on every request and a mini-simulation over the sample
with memory scaled by ``rate`` estimates the full cache (this is what the A/B shadow and what-if
features need). The default rate is 1 %.

Stream ``{prefix}sampled`` (default ``cachetuner:sampled``), one entry per sampled request, trimmed
with ``XADD ... MAXLEN ~ 10000``; fields (all ASCII integers / decimals):

| field | meaning |
|---|---|
| ``k`` | dense trace key id (the Redis key is ``ct:{k}``) |
| ``s`` | value size in bytes |
| ``o`` | op: 0 GET, 1 SET, 2 DELETE (:class:`cachetuner.traces.trace.Op`) |
| ``t`` | wall-clock send time, Unix seconds |
| ``ttl`` | TTL in seconds (0 = none) |
| ``h`` | 1 when the GET hit, 0 otherwise (written after the reply is known) |
| ``r`` | the sampling rate |

The stream lives in the tuned Redis itself, so it is subject to eviction under ``allkeys-*``
policies and its memory (~100 B an entry) counts in ``used_memory``; use ``--sample-rate 0`` when
that matters (fidelity runs do).
"""

from __future__ import annotations

import numpy as np

from cachetuner.backend import RequestSample

STREAM_SUFFIX = "sampled"
DEFAULT_SAMPLE_RATE = 0.01
DEFAULT_MAXLEN = 10_000
_SPACE = 1 << 24


def stream_key(prefix: str) -> str:
    return f"{prefix}{STREAM_SUFFIX}"


def splitmix64(x: np.ndarray) -> np.ndarray:
    """The splitmix64 finaliser on uint64 (well-mixed, deterministic across runs and machines)."""
    z = x.astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def sampled_mask(keys: np.ndarray, rate: float) -> np.ndarray:
    """Boolean mask of the requests whose key falls in the sample."""
    if rate <= 0:
        return np.zeros(len(keys), dtype=bool)
    if rate >= 1:
        return np.ones(len(keys), dtype=bool)
    threshold = np.uint64(int(round(rate * _SPACE)))
    return (splitmix64(keys) & np.uint64(_SPACE - 1)) < threshold


def entries_to_sample(entries: list[tuple[bytes, dict[bytes, bytes]]], empty_rate: float = DEFAULT_SAMPLE_RATE) -> RequestSample:
    """``XRANGE`` output (raw bytes) to a :class:`RequestSample` (``empty_rate`` when there are no entries)."""
    if not entries:
        return RequestSample(rate=empty_rate)
    n = len(entries)
    keys = np.empty(n, np.int64)
    sizes = np.empty(n, np.int64)
    ts = np.empty(n, np.float64)
    ops = np.empty(n, np.uint8)
    ttls = np.empty(n, np.float64)
    rate = 1.0
    for i, (_, f) in enumerate(entries):
        keys[i] = int(f[b"k"])
        sizes[i] = int(f[b"s"])
        ops[i] = int(f[b"o"])
        ts[i] = float(f[b"t"])
        ttls[i] = float(f.get(b"ttl", b"0"))
        rate = float(f.get(b"r", b"1"))
    return RequestSample(keys=keys, sizes=sizes, timestamps=ts, ops=ops, ttls=ttls, rate=rate)
