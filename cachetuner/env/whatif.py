"""What-if hit ratios at other sizes and policies from miniature simulations (SHARDS).

Why: the agent (and the A/B harness's shadow estimates) need to know what *another* configuration
would have done on the traffic just seen, without running it. Following SHARDS (Waldspurger et al.,
FAST'15), a key is kept iff ``splitmix64(key) mod P < R*P``; the kept keys are a uniform random
sample of the key space (rate R), and a cache of size ``R * M`` fed only with their requests has
about the hit ratio of a size-``M`` cache fed with everything. One persistent mini
:class:`~cachetuner.sim.TieredCacheSim` per (size factor, policy) keeps its state across intervals,
so estimates include warm-cache effects at very small cost (R = 1% of the requests, a few mini
caches).

SHARDS-adj (same paper): a 1:R sample of a skewed stream holds more (or fewer) references than
``R * N`` when a very hot key is (or is not) sampled, which biases every size alike; the
difference between expected and sampled GETs is added to (taken from) the hits. It needs the
interval's total GET count, which the full stream (simulator) or the live snapshot provides.

Approximations (stated, and measured in docs/env.md and tests/env):
- sampling noise: with few sampled keys the estimate is noisy; ``min_keys`` raises the rate so that
  about that many keys are sampled (needs ``n_keys_hint``);
- Redis's fixed memory (empty instance + client buffers) does not scale with the key sample: it is
  subtracted before scaling (``(M * factor - fixed) * R``) and the mini caches have none; they run
  without a second tier, and only their hit ratios are used;
- every sampled key is charged the stream's mean key-name length (the simulator fixes key lengths
  when a cache is built, before the sampled keys are known);
- when more distinct keys arrive than the mini caches were sized for, they are rebuilt with twice
  the capacity (warm state is lost once; only live backends without a key-count hint hit this).
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass

import numpy as np

from cachetuner.backend import RequestSample
from cachetuner.config import RedisConfig
from cachetuner.env.config import WhatIfConfig
from cachetuner.keysample import LocalIds, grown, hash_sample_mask, splitmix64
from cachetuner.mrc.estimator import mini_params
from cachetuner.sim.params import SimParams
from cachetuner.traces.trace import Op, Trace

#: Label of the mini cache that mirrors the current configuration (size x1.0, current policy).
MIRROR = "current"


def whatif_label(policy: str, factor: float) -> str:
    """``"allkeys-lru@1.25"``: the key used in ``info["whatif"]`` and by the A/B harness."""
    return f"{policy}@{factor:.2f}"


@dataclass
class _Mini:
    label: str
    policy: str | None  # None: follows the current policy (mirror)
    factor: float
    sim: object
    hits: int = 0
    gets: int = 0
    hits_adj: float = 0.0
    expected: float = 0.0


class WhatIfEstimator:
    """Hit-ratio estimates for a grid of (size factor x policy) plus a mirror of the current config.

    Usage: construct with the current config, call :meth:`set_config` whenever the real cache is
    reconfigured and :meth:`update` with each interval's :class:`RequestSample`. ``update`` returns
    ``{label: hit ratio of that interval}`` (NaN when no sampled gets); :meth:`cumulative` gives
    hits/gets summed since the last :meth:`reset`.

    Args:
        cfg: grid, sampling rate and modulus.
        config: the real cache's current configuration (sizes are factors of its maxmemory).
        n_keys_hint: expected distinct keys of the full stream (sizes the mini caches; raises the
            rate to reach ``cfg.min_keys`` sampled keys). ``None`` for unknown (live).
        key_bytes: key-name lengths of the stream (per key id, or one value); the mini caches charge
            every sampled key their mean (``None``: ``params.memory.default_key_bytes``).
        read_only: the stream is read-through (a GET miss fills the cache).
        sim_params: ``SimParams`` for the mini caches (second tier is switched off).
        seed: seeds the mini caches' sampled-eviction RNGs.
    """

    def __init__(
        self,
        cfg: WhatIfConfig,
        config: RedisConfig,
        *,
        n_keys_hint: int | None = None,
        key_bytes: np.ndarray | int | None = None,
        read_only: bool = True,
        sim_params: SimParams | None = None,
        seed: int = 0,
    ) -> None:
        self.cfg = cfg
        self._config = config
        if key_bytes is None:
            self._key_len = None
        else:
            kb = np.asarray(key_bytes)
            self._key_len = int(round(float(kb.mean()))) if kb.size else None
        self._read_only = read_only
        self._sim_params = sim_params
        self._seed = seed
        rate = cfg.rate
        if n_keys_hint and cfg.min_keys:
            rate = max(rate, min(1.0, cfg.min_keys / n_keys_hint))
        self.rate = float(rate)
        self._n_keys_hint = int(n_keys_hint) if n_keys_hint else 0
        self._make_lut()
        self._build(self._base + 1024 if self._lut is not None else 1 << 14)

    # -- public -------------------------------------------------------------------------------------------
    @property
    def labels(self) -> list[str]:
        return [m.label for m in self._minis]

    @property
    def sampled_keys(self) -> int:
        """Distinct sampled keys seen so far (every sampled key of the space when it is known)."""
        return self._ids.next_id

    def set_config(self, config: RedisConfig) -> None:
        """Follow the real cache: mini sizes are factors of ``config.maxmemory``; the mirror takes its policy."""
        self._config = config
        for m in self._minis:
            new = self._mini_config(m)
            if new != m.sim.config:  # type: ignore[attr-defined]  # e.g. a timeout-only change touches none
                m.sim.apply_config(new)  # type: ignore[attr-defined]

    def update(self, sample: RequestSample, total_gets: int | None = None) -> dict[str, float]:
        """Feed one interval's requests; return each mini cache's hit-ratio estimate for that interval.

        ``total_gets``: GETs of the *whole* interval, needed for the SHARDS-adj correction when
        ``sample`` is already a sample (live); for a full stream (``sample.rate == 1``) it is counted
        here. Without it the raw sampled hit ratio is returned.
        """
        if sample.coarser_than(self.rate):
            # The stream is already a (coarser) sample by the same hash: use it as is.
            self.rate = float(sample.rate)
            self._make_lut()
            self._build(self._base + 1024 if self._lut is not None else self._capacity)
        keys = np.asarray(sample.keys, dtype=np.int64)
        all_ops = np.asarray(sample.ops, dtype=np.uint8) if len(sample.ops) else np.zeros(len(keys), np.uint8)
        if total_gets is None and sample.rate >= 1.0:
            total_gets = int(np.count_nonzero(all_ops == Op.GET))
        lut = self._lut
        local: np.ndarray | None = None
        if lut is not None and (len(keys) == 0 or (keys.min() >= 0 and keys.max() < len(lut))):
            loc = lut[keys]  # dense key ids (simulator): one table lookup instead of hashing
            keep: np.ndarray | None = loc >= 0
            local = loc[keep]
        else:
            keep = hash_sample_mask(keys, self.rate, self.cfg.modulus) if self.rate < sample.rate else None

        def sel(a: np.ndarray) -> np.ndarray:
            return np.asarray(a)[keep] if keep is not None else np.asarray(a)

        keys = sel(keys)
        expected = self.rate * total_gets if (total_gets is not None and self.cfg.adjust) else None
        out: dict[str, float] = {}
        if len(keys) == 0:
            for m in self._minis:
                if expected:  # nothing sampled although gets were expected: SHARDS-adj counts them as hits
                    m.hits_adj += expected
                    m.expected += expected
                out[m.label] = 1.0 if expected else float("nan")
            self._last = out
            return out
        if local is None:
            local = self._local_ids(keys)
        trace = Trace(
            name="whatif",
            timestamps=sel(sample.timestamps).astype(np.float64),
            keys=local,
            sizes=sel(sample.sizes).astype(np.int64),
            ops=sel(all_ops),
            ttls=sel(sample.ttls).astype(np.float64) if len(sample.ttls) else np.zeros(len(keys)),
            n_keys=self._capacity,
            key_bytes=self._key_bytes,
            read_only=self._read_only,
        )
        n = len(trace)
        for m in self._minis:
            # run_counts: hit/get counters only; a full MetricsSnapshot (latency quantiles) per mini cache
            # would cost several times the kernel on these few hundred sampled requests.
            snap = m.sim.run_counts(trace, 0, n)  # type: ignore[attr-defined]
            m.hits += snap.hits
            m.gets += snap.gets
            if expected:
                # SHARDS-adj: the sample saw (gets - expected) more gets than a perfect 1:R sample would;
                # those extra (or missing) references are taken off (or added to) the hits.
                adj = snap.hits + (expected - snap.gets)
                m.hits_adj += adj
                m.expected += expected
                out[m.label] = min(max(adj / expected, 0.0), 1.0)
            else:
                out[m.label] = snap.hits / snap.gets if snap.gets else float("nan")
        self._last = out
        return out

    @property
    def last(self) -> dict[str, float]:
        """Estimates of the last :meth:`update` (NaN before the first)."""
        return dict(self._last)

    def cumulative(self, adjusted: bool = True) -> dict[str, float]:
        """Hit ratio per label over every interval since construction or :meth:`reset_counters`
        (SHARDS-adj when ``adjusted`` and the totals were known, else the raw sampled ratio)."""
        out = {}
        for m in self._minis:
            if adjusted and m.expected > 0:
                out[m.label] = min(max(m.hits_adj / m.expected, 0.0), 1.0)
            else:
                out[m.label] = m.hits / m.gets if m.gets else float("nan")
        return out

    def reset_counters(self) -> None:
        for m in self._minis:
            m.hits = m.gets = 0
            m.hits_adj = m.expected = 0.0

    def reset(self, config: RedisConfig | None = None) -> None:
        """Empty the mini caches (new episode) and optionally take a new current config."""
        if config is not None:
            self._config = config
        self._build(self._capacity)

    def clone(self) -> WhatIfEstimator:
        """Independent deep copy, mini-cache state included (each mini cache via ``TieredCacheSim.clone``)."""
        new = copy.copy(self)
        new._ids, new._last = self._ids.copy(), dict(self._last)
        # the key table is never modified in place, so sharing it is safe
        new._minis = [dataclasses.replace(m, sim=m.sim.clone()) for m in self._minis]  # type: ignore[attr-defined]
        return new

    # -- internals ----------------------------------------------------------------------------------------
    def _mini_config(self, m: _Mini) -> RedisConfig:
        policy = m.policy or self._config.maxmemory_policy
        data_bytes = self._config.maxmemory * m.factor - self._fixed_bytes
        size = max(1, int(round(data_bytes * self.rate)))
        return self._config.evolve(maxmemory=size, maxmemory_policy=policy, timeout=0)

    def _make_lut(self) -> None:
        """For a known dense key space ``0..n_keys_hint-1``: sampled key -> local id, others -1."""
        if not self._n_keys_hint:
            self._lut, self._base = None, 0
            return
        sampled = np.flatnonzero(hash_sample_mask(np.arange(self._n_keys_hint), self.rate, self.cfg.modulus))
        self._lut = np.full(self._n_keys_hint, -1, dtype=np.int64)
        self._lut[sampled] = np.arange(len(sampled), dtype=np.int64)
        self._base = len(sampled)  # ids below are the table's; keys outside it get ids from here on

    def _build(self, capacity: int) -> None:
        from cachetuner.sim import TieredCacheSim

        self._capacity = int(capacity)
        self._ids = LocalIds(start=self._base)  # keys outside the dense table's sample
        params = self._sim_params if self._sim_params is not None else SimParams()
        key_len = self._key_len if self._key_len is not None else params.memory.default_key_bytes
        self._key_bytes = np.full(self._capacity, key_len, dtype=np.int64)
        self._fixed_bytes = params.fixed_bytes
        params = mini_params(params)
        grid: list[tuple[str | None, float, str]] = [
            (p, f, whatif_label(p, f)) for p in self.cfg.policies for f in self.cfg.sizes
        ]
        if self.cfg.mirror:
            grid.append((None, 1.0, whatif_label(MIRROR, 1.0)))
        self._minis = []
        for i, (policy, factor, label) in enumerate(grid):
            m = _Mini(label=label, policy=policy, factor=factor, sim=None)
            m.sim = TieredCacheSim(
                n_keys=self._capacity,
                config=self._mini_config(m),
                params=params,
                seed=self._seed * 1009 + i,
                key_bytes=self._key_bytes,
            )
            self._minis.append(m)
        self._last = {m.label: float("nan") for m in self._minis}

    def _local_ids(self, keys: np.ndarray) -> np.ndarray:
        """Map global key ids to dense local ids ``0..capacity-1``, assigning new ids in sorted order."""
        new = self._ids.unseen(keys)
        need = self._ids.next_id + len(new)
        if need > self._capacity:
            self._grow(need)  # forgets every mapping: map this interval afresh
            return self._local_ids(keys)
        self._ids.add(new)
        return self._ids.lookup(keys)

    def _grow(self, need: int) -> None:
        self._build(grown(self._capacity, need))


__all__ = ["MIRROR", "WhatIfEstimator", "hash_sample_mask", "splitmix64", "whatif_label"]
