"""Windowed full-range miss-ratio curves from miniature simulations on a spatial key sample.

Why: a controller that minimises memory + miss cost needs the hit ratio at *every* size it may
choose, not just near the current one, and for the eviction policy Redis actually runs (sampled
LRU/LFU with its eviction pool), which a stack-distance pass cannot give. Following SHARDS
(Waldspurger et al., FAST'15) and miniature simulation (Waldspurger et al., ATC'17), each
(policy, size) pair is a persistent :class:`~cachetuner.sim.TieredCacheSim` that sees only the
requests of keys whose hash falls below a threshold (rate ``r``) and holds ``r`` times the data
bytes of the full cache. Small caches get a higher rate (``min_objects``): rates nest, so one stream
feeds every miniature cache.

Windowing: each interval's (SHARDS-adj corrected) hits and expected GETs are added to decayed sums
whose half-life is counted in sampled GETs (``half_life_gets``), not in intervals: a shift shows as
soon as enough new evidence has arrived, whatever the request rate, while one interval of a sparse
sample does not make the curve jump. For slow streams the base rate is raised
(``min_sampled_per_interval``) so that the window spans minutes, not hours.

The same estimator runs on the simulated path (the full request stream, keys dense ``0..N-1``) and
on the live path (the replayer's hash-sampled stream, sampled by the same hash, keys arbitrary).

Approximations (stated, measured by ``cachetuner bench mrc``):
- sampling noise, largest at the sizes with the lowest rate; SHARDS-adj removes the bias a very hot
  sampled (or unsampled) key would give every size, and ``size_correction`` (off by default) the shift along the size
  axis a sample carrying more or fewer bytes than its rate gives (:meth:`MRCEstimator._represented_sizes`);
- Redis's fixed memory (empty instance + client buffers) is subtracted before scaling, and the
  miniature caches have none, no second tier and no latency model (hit ratios only);
- every sampled key is charged the stream's mean key-name length;
- eviction candidates are drawn uniformly (not by walking Redis's hash table), because the local key
  numbering of a miniature cache is arbitrary.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numba as nb
import numpy as np

from cachetuner.backend import RequestSample
from cachetuner.config import RedisConfig
from cachetuner.keysample import LocalIds, grown, hash_sample_mask, hash_values, threshold
from cachetuner.mrc.config import MRCConfig
from cachetuner.mrc.curves import KnobPoint, MissRatioCurves
from cachetuner.mrc.knobs import KnobVariant
from cachetuner.mrc.window import Counts, counts_before, shifted
from cachetuner.sim.params import SimParams
from cachetuner.traces.trace import Op, Trace


def mini_params(params: SimParams) -> SimParams:
    """Miniature caches (what-if and miss-ratio curves) need hit ratios only: no second tier, no
    unscaled fixed memory, no latency model. They draw eviction candidates uniformly
    (``sampling="uniform"``) instead of walking the simulator's model of Redis's hash table: a
    miniature cache's keys carry local ids whose numbering depends on the order keys were first seen
    (dense table vs live hash path), and a table layout hashed from those ids would make the estimate
    depend on that numbering."""
    return params.model_copy(
        update={
            "sampling": "uniform",
            "model_latency": False,
            "memory": params.memory.model_copy(update={"base_used_memory": 0}),
            "clients": params.clients.model_copy(update={"client_buffer_bytes": 0}),
            "l2": params.l2.model_copy(update={"enabled": False}),
        }
    )


@dataclass
class _Mini:
    policy: str
    size: int  # full-cache maxmemory this miniature cache stands for
    rate: float
    thr: int
    sim: object = None
    long: Counts = field(default_factory=Counts)  # the window the curves are read from
    short: Counts = field(default_factory=Counts)  # the shift test's fast window (shift_threshold)
    variant: KnobVariant | None = None  # a knob variant's miniature cache at the cap (not part of the curves)


class MRCEstimator:
    """Hit-ratio curves of ``cfg.policies`` at ``cfg.n_sizes`` sizes spanning ``bounds``.

    Args:
        cfg: sizes, policies, sampling and window.
        bounds: ``(min, max)`` maxmemory in bytes the curves must span.
        n_keys_hint: size of a dense key space ``0..N-1`` (simulated path); ``None`` for arbitrary keys
            (live), which are mapped to local ids as they arrive.
        mean_object_bytes: average memory per cached key (value + key + Redis overhead), used to give
            small miniature caches enough objects; ``None`` = 4 KiB.
        requests_per_interval: expected requests of one interval (raises the base rate for slow streams).
        key_bytes: key-name length charged to every sampled key (the stream's mean).
        read_only: read-through stream (a GET miss fills the cache).
        sim_params: the world model; the miniature caches use :func:`mini_params` of it.
        base_config: knobs other than size and policy (samples, LFU factors) for the miniature caches.
        seed: seeds the miniature caches' eviction sampling.
        knob_size: a memory budget's cap: each of ``cfg.knob_variants`` gets a miniature cache there
            (:mod:`cachetuner.mrc.knobs`); ``None`` (no budget) = none.
    """

    def __init__(
        self,
        cfg: MRCConfig,
        bounds: tuple[int, int],
        *,
        n_keys_hint: int | None = None,
        mean_object_bytes: float | None = None,
        requests_per_interval: float | None = None,
        key_bytes: int | None = None,
        read_only: bool = True,
        sim_params: SimParams | None = None,
        base_config: RedisConfig | None = None,
        seed: int = 0,
        knob_size: int | None = None,
    ) -> None:
        self.cfg = cfg
        lo, hi = int(bounds[0]), int(bounds[1])
        self.sizes = np.unique(np.geomspace(max(lo, 1), max(hi, lo + 1), cfg.n_sizes).round().astype(np.int64))
        self._params = sim_params or SimParams()
        self._fixed = self._params.fixed_bytes
        self._mini_params = mini_params(self._params)
        self._key_len = int(key_bytes) if key_bytes else self._params.memory.default_key_bytes
        self._read_only = read_only
        self._base_config = (base_config or RedisConfig()).evolve(timeout=0)
        self._seed = int(seed)
        self._knob_size = int(knob_size) if knob_size is not None and cfg.knob_variants else None
        self._n_keys = int(n_keys_hint) if n_keys_hint else 0
        self._obj = float(mean_object_bytes) if mean_object_bytes else 4096.0 + 100.0
        base = cfg.rate
        if self._n_keys and cfg.min_keys:
            base = max(base, min(1.0, cfg.min_keys / self._n_keys))
        if requests_per_interval and cfg.min_sampled_per_interval:
            base = max(base, min(1.0, cfg.min_sampled_per_interval / requests_per_interval))
        self.base_rate = float(min(base, 1.0))
        self._stream_rate = 1.0
        self._rank: np.ndarray | None = None
        self._hv: np.ndarray | None = None
        if self._n_keys:
            hv = hash_values(np.arange(self._n_keys, dtype=np.int64), cfg.modulus)
            order = np.argsort(hv, kind="stable")
            rank = np.empty(self._n_keys, dtype=np.int64)
            rank[order] = np.arange(self._n_keys, dtype=np.int64)
            self._hv_sorted = hv[order]
            self._rank, self._hv = rank, hv
        self._regress = cfg.adjust_slope == "regression"
        self._curves: MissRatioCurves | None = None
        self.shifts = 0  # times the two-window test restarted the long window
        self._regime_gets = 0.0  # sampled-GET equivalents since the long window last (re)started
        self._build()

    # -- public -------------------------------------------------------------------------------------------
    @property
    def rates(self) -> dict[int, float]:
        """Sampling rate of the miniature caches of each size."""
        return {m.size: m.rate for m in self._minis if m.policy == self.cfg.policies[0] and m.variant is None}

    @property
    def short_half_life(self) -> float:
        """The shift test's short window's half-life, in sampled GETs at the base rate: ``short_half_life_share`` of
        ``half_life_gets``, or more where ``short_window_min_requests`` of the stream's requests come to more sampled
        GETs (a slow stream sampled at a raised rate), but never longer than the long window's."""
        h = self.cfg.half_life_gets * self.cfg.short_half_life_share
        floor = self.cfg.short_window_min_requests
        return h if floor is None else max(h, min(self.base_rate * floor, self.half_life))

    @property
    def half_life(self) -> float:
        """The long window's half-life now, in sampled GETs at the base rate (it grows with the regime's
        age when ``half_life_growth`` is set, and drops back when the shift test restarts the window)."""
        h0 = self.cfg.half_life_gets
        if self.cfg.half_life_growth is None:
            return h0
        return max(h0, self.cfg.half_life_growth * (self._regime_gets - self.cfg.half_life_growth_after * h0))

    @property
    def sampled_share(self) -> float:
        """Requests simulated per request of the stream, summed over every miniature cache (its cost)."""
        return float(sum(m.rate for m in self._minis if m.sim is not None))

    def update(self, sample: RequestSample, total_gets: int | None = None, total_get_bytes: int | None = None) -> None:
        """Feed one interval's requests (every request, or a hash sample at ``sample.rate``).

        ``total_gets`` / ``total_get_bytes``: GETs (and their bytes) of the *whole* interval, needed
        for SHARDS-adj when ``sample`` is already a sample; counted here for a full stream.
        """
        self._curves = None
        if sample.coarser_than(self._stream_rate):  # live: no miniature cache can sample finer than the stream
            self._stream_rate = float(sample.rate)
            self._build()
        keys = np.asarray(sample.keys, dtype=np.int64)
        ops = np.asarray(sample.ops, dtype=np.uint8) if len(sample.ops) else np.zeros(len(keys), np.uint8)
        sizes = np.asarray(sample.sizes, dtype=np.int64)
        is_get = ops == Op.GET
        if sample.rate >= 1.0:
            total_gets = int(np.count_nonzero(is_get))
            total_get_bytes = int(sizes[is_get].sum())
        seen = total_gets if total_gets is not None else int(np.count_nonzero(is_get)) / max(sample.rate, 1e-9)
        step = self.base_rate * seen  # sampled-GET equivalents this interval
        d_short = 0.5 ** (step / self.short_half_life)
        self._regime_gets += step
        d = 0.5 ** (step / self.half_life)
        for m in self._minis:
            m.long.decay(d)
            m.short.decay(d_short)
        if len(keys) == 0 and not total_gets:
            return
        if self._rank is not None and (len(keys) == 0 or (keys.min() >= 0 and keys.max() < self._n_keys)):
            hv, local = self._hv[keys], self._rank[keys]  # type: ignore[index]
        else:
            hv, local = hash_values(keys, self.cfg.modulus), self._dynamic_ids(keys)
        ts = np.asarray(sample.timestamps, dtype=np.float64)
        ttls = np.asarray(sample.ttls, dtype=np.float64) if len(sample.ttls) else np.zeros(len(keys))
        adjust = self.cfg.adjust and total_gets is not None
        before = self._counts_before(hv, local, is_get, sizes, d, d_short) if adjust and self._regress else None
        groups: dict[int, tuple[Trace, np.ndarray | None]] = {}
        for m in self._minis:
            if m.sim is None:  # smaller than Redis's fixed memory: holds nothing, hits nothing (exact)
                for w in (m.long, m.short):
                    w.add(0.0, 0.0, 1.0, 1.0, 1.0, 1.0)
                    w.empty = True
                continue
            group = groups.get(m.thr)
            if group is None:
                keep = hv < m.thr
                tr = Trace(
                    name="mrc", timestamps=ts[keep], keys=local[keep], sizes=sizes[keep], ops=ops[keep],
                    ttls=ttls[keep], n_keys=self._capacity(m), key_bytes=self._key_bytes(m), read_only=self._read_only,
                )
                group = groups[m.thr] = (tr, before[:, keep] if before is not None else None)
            tr, bf = group
            rec = np.zeros((len(tr), 2)) if bf is not None and len(tr) else None
            c = m.sim.run_counts(tr, 0, len(tr), rec) if len(tr) else None  # type: ignore[attr-defined]
            gets = c.gets if c else 0
            hits = c.hits if c else 0
            breq = c.byte_requests if c else 0
            bhit = c.byte_hits if c else 0
            if adjust:
                # a perfect 1:r sample of the interval holds r * total_gets GETs; the difference is
                # corrected at read time (Counts.hit_ratio; see cachetuner.mrc.window). The same
                # formula holds for a pre-sampled (live) stream.
                exp = m.rate * total_gets  # type: ignore[operator]
                expb = m.rate * total_get_bytes if total_get_bytes is not None else float(breq)
            else:
                exp, expb = gets, breq
            long_m = short_m = (0.0, 0.0, 0.0, 0.0)
            if bf is not None and rec is not None:
                mo = _moments(tr.ops, rec, tr.sizes, bf).tolist()
                long_m, short_m = tuple(mo[:4]), tuple(mo[4:])
            m.long.add(hits, bhit, exp, expb, gets, breq, long_m)
            m.short.add(hits, bhit, exp, expb, gets, breq, short_m)
        self._restart_on_shift()

    def watch(self, trace: Trace, interval_s: float, rate: float = 1.0) -> int:
        """Feed a stretch of past traffic, one ``interval_s`` of its timestamps at a time, as :meth:`update` would
        have seen it live; returns the intervals fed. Why: a controller that has been running through that traffic
        (a daemon that watched last week) decides from curves with that evidence, not from a cold window; only the
        estimator sees it, the cache it decides for starts as it is. ``rate`` < 1 feeds the hash sample a live
        stream at that rate would carry (the replayer's, the same hash), with each interval's totals, so that the
        live stream which follows does not rebuild the miniature caches at a coarser rate and lose what was fed."""
        if len(trace) == 0:
            return 0
        ts = trace.timestamps
        edges = np.searchsorted(ts, ts[0] + interval_s * np.arange(1, int((ts[-1] - ts[0]) // interval_s) + 2), side="left")
        keep = hash_sample_mask(trace.keys, rate, self.cfg.modulus) if rate < 1.0 else None
        start, fed = 0, 0
        for stop in [*edges.tolist(), len(trace)]:
            if stop > start:
                sl = slice(start, stop)
                if keep is None:
                    self.update(RequestSample(keys=trace.keys[sl], sizes=trace.sizes[sl], timestamps=ts[sl],
                                              ops=trace.ops[sl], ttls=trace.ttls[sl], rate=1.0))
                else:
                    k = keep[sl]
                    is_get = trace.ops[sl] == Op.GET
                    self.update(RequestSample(keys=trace.keys[sl][k], sizes=trace.sizes[sl][k], timestamps=ts[sl][k],
                                              ops=trace.ops[sl][k], ttls=trace.ttls[sl][k], rate=float(rate)),
                                total_gets=int(np.count_nonzero(is_get)),
                                total_get_bytes=int(trace.sizes[sl][is_get].sum()))
                fed += 1
            start = max(start, stop)
        return fed

    def curves(self) -> MissRatioCurves:
        """The current windowed curves (NaN where no sampled GET has been seen yet); computed once per
        :meth:`update` (the env, its features and the controllers all read them every interval)."""
        if self._curves is not None:
            return self._curves
        hit: dict[str, np.ndarray] = {}
        byte_hit: dict[str, np.ndarray] = {}
        weight: dict[str, np.ndarray] = {}
        evidence: dict[str, np.ndarray] = {}
        for p in self.cfg.policies:
            ms = [m for m in self._minis if m.policy == p and m.variant is None]
            hit[p] = np.array([m.long.hit_ratio for m in ms])
            byte_hit[p] = np.array([m.long.byte_hit_ratio for m in ms])
            if self.cfg.size_correction:
                x = self._represented_sizes(ms)
                hit[p], byte_hit[p] = _resample(x, hit[p], self.sizes), _resample(x, byte_hit[p], self.sizes)
            weight[p] = np.array([m.long.weight for m in ms])
            evidence[p] = np.array([math.inf if m.sim is None else m.long.expected for m in ms])
        knobs = [KnobPoint(m.variant.apply(self._base_config).evolve(maxmemory=m.size), m.long.hit_ratio,
                           math.inf if m.sim is None else m.long.expected)
                 for m in self._minis if m.variant is not None]
        self._curves = MissRatioCurves(self.sizes.copy(), hit, byte_hit, weight, self._obj, evidence, knobs,
                                       self._knob_size, self._base_config)
        return self._curves

    def clone(self) -> MRCEstimator:
        """Independent copy, miniature-cache state included."""
        import copy

        new = copy.copy(self)
        new._curves = None
        new._minis = [
            _Mini(**{**m.__dict__, "sim": m.sim.clone() if m.sim is not None else None,  # type: ignore[attr-defined]
                     "long": m.long.copy(), "short": m.short.copy()})
            for m in self._minis
        ]
        if self._rank is None:
            new._local = self._local.copy()
        new._g = self._g.copy()
        return new

    # -- internals ----------------------------------------------------------------------------------------
    def _represented_sizes(self, ms: list[_Mini]) -> np.ndarray:
        """The full-cache size each miniature cache stands for, given what its key sample turned out to hold.

        A miniature cache holds ``r`` times the data bytes of the full cache on the assumption that its key
        sample carries ``r`` of the stream's bytes. When the sample's GETs carry fewer bytes than ``r`` times
        the stream's (``expected_bytes / get_bytes = f > 1``), the sample's working set is that much smaller
        and the miniature cache behaves like a full cache of ``f`` times the data: its point belongs at
        ``fixed + f x data``. Measured (bench mrc, 2026-12-03): with AI-inference value sizes a sample of a
        few hundred hot keys put the curve 5-8 pp too high where it is steep, a size shift, not a hit-count
        bias. But a deficit or surplus of GETs that comes from one hot key (resident at any size, its bytes
        a sliver of the cache) says nothing about the space the sample needs; the byte regression's slope
        ``b`` (:mod:`cachetuner.mrc.window`: close to 1 where the heaviest keys dominate the discrepancy) is
        that share, so the shift uses ``f ** (1 - b)`` (:attr:`Counts.size_factor`). Without the sampling
        correction (``adjust`` off), or before any GET, ``f = 1``."""
        x = np.empty(len(ms))
        for i, m in enumerate(ms):
            data = m.size - self._fixed
            x[i] = self._fixed + data * m.long.size_factor if m.sim is not None and data > 0 else m.size
        return x

    def _restart_on_shift(self) -> None:
        """Two-window change test (:mod:`cachetuner.mrc.window`): when the short windows disagree with
        the long ones beyond noise, the long windows restart from the short ones."""
        thr = self.cfg.shift_threshold
        if thr is None:
            return
        live = [m for m in self._minis if m.sim is not None]
        # the test reads the curves' own points (a knob variant's cache would weigh the cap twice); all restart
        if shifted([(m.long, m.short) for m in live if m.variant is None], self.cfg.shift_min_evidence, thr):
            for m in live:
                m.long = m.short.copy()
            self._g[0], self._g[2] = self._g[1], self._g[3]
            self.shifts += 1
            self._regime_gets = 0.0

    def _counts_before(self, hv: np.ndarray, local: np.ndarray, is_get: np.ndarray, sizes: np.ndarray,
                       d: float, d_short: float) -> np.ndarray:
        """Rows (long count, short count, long bytes, short bytes) per request: its key's decayed GETs
        (GET bytes) before it, for the GETs any miniature cache samples (0 elsewhere)."""
        g = self._g
        g[0] *= d
        g[2] *= d
        g[1] *= d_short
        g[3] *= d_short
        out = np.zeros((4, len(hv)))
        sel = is_get & (hv < max(m.thr for m in self._minis))
        if np.any(sel):
            out[:, sel] = counts_before(local[sel], sizes[sel], g)
        return out

    def _rate_for(self, size: int) -> float:
        data = max(size - self._fixed, 1)
        want = self.cfg.min_objects * self._obj / data
        r = min(max(self.base_rate, want), max(self.cfg.max_rate, self.base_rate), 1.0)
        return float(min(r, self._stream_rate))

    def _build(self) -> None:
        self._local = LocalIds()
        self._dyn_cap = 1 << 12
        self._minis: list[_Mini] = []
        for p in self.cfg.policies:
            for s in self.sizes.tolist():
                self._add_mini(p, int(s))
        if self._knob_size is not None:  # after the curves' caches, so that theirs keep their seeds
            for v in self.cfg.knob_variants:
                self._add_mini(v.policy, self._knob_size, v)
        # decayed GET count and GET bytes of every key any miniature cache samples, in the long and
        # the short window (rows: long count, short count, long bytes, short bytes): the slope's input
        self._g = np.zeros((4, max((self._capacity(m) for m in self._minis), default=1)))

    def _add_mini(self, policy: str, size: int, variant: KnobVariant | None = None) -> None:
        """One more miniature cache standing for a full cache of ``size`` bytes: of a curve's ``policy``, or of a
        knob ``variant`` (its policy and knobs); none is simulated below Redis's fixed memory (it holds nothing). Its
        seed is its position in the list, so adding caches at the end leaves the others' as they were."""
        from cachetuner.sim import TieredCacheSim

        r = self._rate_for(size)
        slope = None if self._regress else 1.0
        m = _Mini(policy=policy, size=size, rate=r, thr=threshold(r, self.cfg.modulus), variant=variant,
                  long=Counts(slope=slope, rate=r, outlier_sd=self.cfg.adjust_outlier_sd),
                  short=Counts(slope=slope, rate=r, outlier_sd=self.cfg.adjust_outlier_sd))
        self._minis.append(m)
        data = size - self._fixed
        if data <= 0:
            return
        base = variant.apply(self._base_config) if variant is not None else self._base_config.evolve(maxmemory_policy=policy)
        m.sim = TieredCacheSim(n_keys=self._capacity(m), config=base.evolve(maxmemory=max(1, int(round(data * r)))),
                               params=self._mini_params, seed=self._seed * 1009 + len(self._minis),
                               key_bytes=self._key_bytes(m))

    def _capacity(self, m: _Mini) -> int:
        if self._rank is not None:
            return max(int(np.searchsorted(self._hv_sorted, m.thr)), 1)
        return self._dyn_cap

    def _key_bytes(self, m: _Mini) -> np.ndarray:
        return np.full(self._capacity(m), self._key_len, dtype=np.int64)

    def _dynamic_ids(self, keys: np.ndarray) -> np.ndarray:
        """Arbitrary (live) key ids -> dense local ids shared by every miniature cache."""
        new = self._local.unseen(keys)
        need = self._local.next_id + len(new)
        if need > self._dyn_cap:
            local = self._local
            self._rebuild_dynamic(grown(self._dyn_cap, need))  # warm state is lost once per doubling (stated in the docs)
            self._local = local
        self._local.add(new)
        return self._local.lookup(keys)

    def _rebuild_dynamic(self, cap: int) -> None:
        old, old_g = self._minis, self._g
        self._build()
        self._dyn_cap = cap
        self._g = np.zeros((4, cap))
        self._g[:, : old_g.shape[1]] = old_g
        from cachetuner.sim import TieredCacheSim

        for j, (m, o) in enumerate(zip(self._minis, old, strict=True)):
            if o.sim is None:
                continue
            m.sim = TieredCacheSim(n_keys=cap, config=o.sim.config, params=self._mini_params,  # type: ignore[attr-defined]
                                   seed=self._seed * 1009 + j, key_bytes=self._key_bytes(m))
            m.long, m.short = o.long, o.short


_GET = int(Op.GET)


def _resample(x: np.ndarray, y: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """``y`` measured at sizes ``x`` (any order), read at ``sizes``: linear in log size, flat beyond the
    ends; points without an estimate (NaN) stay NaN and are not used."""
    ok = np.isfinite(y)
    if ok.sum() < 2:
        return y
    o = np.argsort(x[ok], kind="stable")
    out = np.interp(np.log(np.maximum(sizes.astype(float), 1.0)), np.log(np.maximum(x[ok][o], 1.0)), y[ok][o])
    return np.where(ok, out, np.nan)


@nb.njit(cache=True, nogil=True)
def _moments(ops, rec, sizes, before):  # pragma: no cover - numba
    """``(sum g h, sum g^2, sum gb hb, sum gb^2)`` increments of one interval of a miniature cache, for
    the long window (``[0:4]``) and the short one (``[4:8]``) (see :mod:`cachetuner.mrc.window`)."""
    out = np.zeros(8)
    for i in range(len(ops)):
        if ops[i] != _GET:
            continue
        hit = (np.int64(rec[i, 0]) & 1) == 1
        s = float(sizes[i])
        for w in range(2):
            c, cb = before[w, i], before[2 + w, i]
            o = 4 * w
            out[o + 1] += 2.0 * c + 1.0
            out[o + 3] += 2.0 * cb * s + s * s
            if hit:
                out[o] += 2.0 * c
                out[o + 2] += 2.0 * cb * s
    return out


__all__ = ["MRCEstimator", "mini_params"]
