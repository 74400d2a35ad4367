"""``cachetuner bench mrc``: miss-ratio-curve error against full simulation, and what it costs.

For each trace: replay it once per draw of the key sample through the estimator (whole-trace window, as
the curve a controller reads at the end), and once per (policy, size) through a full
:class:`~cachetuner.sim.TieredCacheSim` at that ``maxmemory``; report the mean and max absolute hit-ratio
error in percentage points and the estimator's cost per request relative to one full simulation's (both
timed in this run, side by side).

Why several draws: the sampling hash is fixed, so one run measures one key sample per trace, and its luck
is shared by every size and every run. Measured 2026-12-05 over eight draws of the 17 shared traces (first
300k requests): for LRU the shipped hash was the luckiest draw, with 4096-byte values (0.74 pp, the others 0.74
to 1.06) and with AI-inference sizes (1.01 pp, the others 1.02 to 1.24); an error figure for traffic the hash has
not seen is the mean over draws.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from cachetuner.backend import RequestSample
from cachetuner.config import RedisConfig
from cachetuner.mrc.config import MRCConfig
from cachetuner.mrc.estimator import MRCEstimator
from cachetuner.mrc.offline import default_bounds, whole_trace_curves
from cachetuner.sim.params import SimParams
from cachetuner.traces.trace import Trace


def shared_traces_dir() -> Path:
    """``$CACHETUNER_SHARED_TRACES``, else ``../shared/traces`` next to the checkout."""
    env = os.environ.get("CACHETUNER_SHARED_TRACES")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[3] / "shared" / "traces"


#: (relative path, format) of every shared trace long enough to evaluate on (the 99/100-row format
#: fixtures of Meta and Twitter are left out).
SHARED_TRACES: tuple[tuple[str, str], ...] = (
    ("cloudphysics/cloudPhysicsIO.csv", "auto"),
    ("cache2k/orm-night.trace.zst", "raw-be-i4"),
    ("cache2k/web07.trace", "raw-be-i4"),
    ("cache2k/web12.trace", "raw-be-i4"),
    ("arc/P3.lis", "arc"),
    ("arc/P6.lis", "arc"),
    ("arc/P2.lis.zst", "arc"),
    ("corda/trace_vaultservice.trace", "raw-be-i8"),
    ("adaptsize/request.trace", "adaptsize"),
    ("lirs/cpp.trace", "lirs"),
    ("lirs/cs.trace", "lirs"),
    ("lirs/gli.trace", "lirs"),
    ("lirs/ps.trace", "lirs"),
    ("lirs/sprite.trace", "lirs"),
    ("lirs/multi1.trace", "lirs"),
    ("lirs/multi2.trace", "lirs"),
    ("lirs/multi3.trace", "lirs"),
)


def read_shared(
    traces: list[tuple[str, str]] | None,
    *,
    size_model: str | None,
    limit: int | None,
    rate: float | None = None,
    on_trace: Callable[[str], None] | None = None,
) -> Iterator[tuple[str, Trace]]:
    """``(name, trace)`` for each of ``traces`` (default: every shared trace), read one at a time: a path relative to
    the shared traces folder, or ``bundled:`` / ``synthetic:``. ``on_trace(name)`` before each read (progress)."""
    from cachetuner.traces import read_trace

    root = shared_traces_dir()
    for rel, fmt in traces or list(SHARED_TRACES):
        if on_trace is not None:
            on_trace(rel)
        spec = rel if rel.startswith(("bundled:", "synthetic:")) else str(root / rel)
        yield rel, read_trace(spec, format=fmt, size_model=size_model, rate=rate, limit=limit)


def choose_shared(traces: str | None) -> list[tuple[str, str]] | None:
    """``--traces a,b``: (path, format) pairs, the format known for the shared traces (else "auto"); None = all."""
    if traces is None:
        return None
    fmts = dict(SHARED_TRACES)
    chosen = [(t.strip(), fmts.get(t.strip(), "auto")) for t in traces.split(",") if t.strip()]
    if not chosen:
        from cachetuner.errors import ConfigError

        raise ConfigError("--traces: give at least one trace path (omit --traces for all)")
    return chosen


@dataclass
class TraceResult:
    trace: str
    requests: int
    keys: int
    errors_pp: dict[str, dict[str, float]]
    signed_pp: dict[str, list[float]]  # predicted - true hit ratio (pp) per size, smallest first: a bias shows here
    gaps: dict[str, tuple[list[float], list[float]]]  # "B - A": (predicted, true) hit-ratio gap per size (all draws)
    estimator_seconds: float
    full_sim_seconds: float  # one full simulation of the trace (mean over sizes and policies)
    sampled_share: float
    by_draw: dict[str, list[float]] = field(default_factory=dict)  # mean |error| (pp) of each draw of the key sample

    def to_json(self) -> dict[str, Any]:
        return {
            "trace": self.trace,
            "requests": self.requests,
            "keys": self.keys,
            "error_pp": self.errors_pp,
            "error_pp_by_draw": self.by_draw,
            "signed_error_pp_by_size": self.signed_pp,
            "estimator_cost_vs_one_simulation": round(self.estimator_seconds / max(self.full_sim_seconds, 1e-9), 3),
            "estimator_cost_vs_full_curve": round(
                self.estimator_seconds / max(self.full_sim_seconds * self._points, 1e-9), 4
            ),
            "sampled_share": round(self.sampled_share, 3),
            "policy_gap_error_pp": {
                k: {"mean": round(100 * float(np.mean(np.abs(np.subtract(p, t)))), 3),
                    "max": round(100 * float(np.max(np.abs(np.subtract(p, t)))), 3)}
                for k, (p, t) in self.gaps.items()
            },
        }

    _points: int = 1


def bench_trace(trace: Trace, cfg: MRCConfig, params: SimParams, *, interval: int = 20_000, draws: int = 1) -> TraceResult:
    """The curves of ``draws`` draws of the key sample against one full simulation per (policy, size)."""
    warm_up(trace, cfg, params)
    bounds = default_bounds(trace, params)
    n = len(trace)
    runs: list[tuple[Any, float, float]] = []  # (curves, seconds, sampled share) per draw
    for d in range(draws):
        t0 = time.perf_counter()
        curves, est = whole_trace_curves(trace.relabelled(d), cfg, params, bounds, chunk=interval)
        runs.append((curves, time.perf_counter() - t0, est.sampled_share))
    from cachetuner.sim import TieredCacheSim

    sizes = runs[0][0].sizes
    full_params = params.model_copy(update={"model_latency": False})
    errors: dict[str, dict[str, float]] = {}
    signed: dict[str, list[float]] = {}
    by_draw: dict[str, list[float]] = {}
    truths: dict[str, np.ndarray] = {}
    t_full, n_full = 0.0, 0
    for pol in cfg.policies:
        truth = np.zeros(len(sizes))
        for k, size in enumerate(sizes.tolist()):
            t1 = time.perf_counter()
            sim = TieredCacheSim.for_trace(trace, RedisConfig(maxmemory=int(size), maxmemory_policy=pol), full_params)
            truth[k] = sim.run_counts(trace, 0, n).hit_ratio
            t_full += time.perf_counter() - t1
            n_full += 1
        truths[pol] = truth
        diff = np.array([np.asarray(c.hit[pol], float) - truth for c, _, _ in runs])  # draws x sizes
        signed[pol] = [round(100 * float(d), 3) for d in diff.mean(axis=0)]
        errs = np.abs(diff)
        by_draw[pol] = [round(100 * float(e), 3) for e in errs.mean(axis=1)]
        errors[pol] = {"mean": round(100 * float(np.mean(errs)), 3), "max": round(100 * float(np.max(errs)), 3)}
    ref = cfg.policies[0]
    gaps = {f"{pol} - {ref}": (
        [g for c, _, _ in runs for g in (np.asarray(c.hit[pol], float) - np.asarray(c.hit[ref], float)).tolist()],
        (truths[pol] - truths[ref]).tolist() * draws) for pol in cfg.policies[1:]}
    t_est = float(np.mean([t for _, t, _ in runs]))
    share = float(np.mean([s for _, _, s in runs]))
    res = TraceResult(trace.name, n, trace.n_keys, errors, signed, gaps, t_est, t_full / max(n_full, 1), share, by_draw)
    res._points = len(sizes) * len(cfg.policies)
    return res


def warm_up(trace: Trace, cfg: MRCConfig, params: SimParams) -> None:
    """Load numba's compiled kernels and the latency tables before anything is timed."""
    n = min(len(trace), 2000)
    est = MRCEstimator(cfg.model_copy(update={"n_sizes": 4}), (1 << 20, 1 << 24), n_keys_hint=trace.n_keys,
                       sim_params=params)
    est.update(RequestSample(keys=trace.keys[:n], sizes=trace.sizes[:n], timestamps=trace.timestamps[:n],
                             ops=trace.ops[:n], ttls=trace.ttls[:n]))
    from cachetuner.sim import TieredCacheSim

    TieredCacheSim.for_trace(trace, RedisConfig(maxmemory=1 << 22), params).run_counts(trace, 0, n)


def bench_mrc(
    traces: list[tuple[str, str]] | None = None,
    *,
    cfg: MRCConfig | None = None,
    limit: int | None = 1_000_000,
    size_model: str | None = "fixed:4096",
    on_trace: Callable[[str], None] | None = None,
    draws: int = 1,
) -> dict[str, Any]:
    """Error and cost of the estimator on ``traces`` (default: every shared trace); one JSON-ready dict.
    ``size_model`` replaces every trace's value sizes (drawn once per key, seed 0); None keeps a trace's own
    (``fixed:4096`` for traces without sizes). Why more than one: the curves of a byte-limited cache with
    variable sizes have one more source of sampling error (a few large sampled values), and the product's
    values (embeddings, generated answers) vary. ``draws``: draws of the key sample per trace (:meth:`Trace.relabelled`);
    the errors are means over them, and the summary gives each draw's mean too (the spread is the hash's luck)."""
    cfg = cfg or MRCConfig()
    params = SimParams()
    out: list[dict[str, Any]] = []
    gaps: dict[str, tuple[list[float], list[float]]] = {}
    for rel, trace in read_shared(traces, size_model=size_model, limit=limit, on_trace=on_trace):
        r = bench_trace(trace, cfg, params, draws=draws)
        out.append({**r.to_json(), "trace": rel})
        for k, (p, t) in r.gaps.items():
            gaps.setdefault(k, ([], []))[0].extend(p)
            gaps[k][1].extend(t)
    summary: dict[str, Any] = {}
    for pol in cfg.policies:
        means = [t["error_pp"][pol]["mean"] for t in out]
        maxes = [t["error_pp"][pol]["max"] for t in out]
        by_size = np.mean([t["signed_error_pp_by_size"][pol] for t in out], axis=0)
        per_draw = np.mean([t["error_pp_by_draw"][pol] for t in out], axis=0)  # each draw's mean over the traces
        summary[pol] = {"mean_error_pp": round(float(np.mean(means)), 3), "max_error_pp": round(float(np.max(maxes)), 3),
                        "mean_error_pp_by_draw": [round(float(x), 3) for x in per_draw],
                        "draw_sd_pp": round(float(np.std(per_draw, ddof=1)), 3) if draws > 1 else 0.0,
                        # the mean over traces of the signed error at each size: noise averages out, a bias stays
                        "mean_signed_error_pp_by_size": [round(float(x), 3) for x in by_size]}
    return {
        "rate": cfg.rate,
        "draws": draws,
        "min_keys": cfg.min_keys,
        "min_objects": cfg.min_objects,
        "n_sizes": cfg.n_sizes,
        "size_model": size_model or "native",
        "size_correction": cfg.size_correction,
        "traces": out,
        "summary": summary,
        "policy_gap": {k: policy_gap_summary(np.asarray(p), np.asarray(t)) for k, (p, t) in gaps.items()},
        "estimator_cost_vs_one_simulation_mean": round(
            float(np.mean([t["estimator_cost_vs_one_simulation"] for t in out])), 3),
    }


#: predicted policy gaps (pp) at which ``policy_gap_summary`` reports how often a switch would pay
GAP_THRESHOLDS_PP: tuple[float, ...] = (0.5, 1.0, 2.0, 3.0)


def policy_gap_summary(predicted: np.ndarray, true: np.ndarray) -> dict[str, Any]:
    """How far the curves' *difference* between two policies can be trusted, over every (trace, size) point.

    A policy switch is decided on a predicted gap, not on one curve, and the two curves share their key
    sample, so their errors may cancel or add. For each threshold ``g`` (pp), among the points whose
    predicted gap is at least ``g`` in either direction: how many there are, the share where the true gap
    points the other way or is zero (a switch that loses), and the realised / predicted gap ratio (how much
    of a predicted gain arrives). This is the evidence for ``mrc.policy_min_gain``."""
    err = np.abs(predicted - true)
    out: dict[str, Any] = {"points": int(len(predicted)), "mean_error_pp": round(100 * float(np.mean(err)), 3),
                           "max_error_pp": round(100 * float(np.max(err)), 3), "by_predicted_gap": {}}
    for g in GAP_THRESHOLDS_PP:
        sel = np.abs(predicted) >= g / 100.0
        n = int(sel.sum())
        if not n:
            out["by_predicted_gap"][f">={g}pp"] = {"points": 0}
            continue
        realised = true[sel] * np.sign(predicted[sel])  # the true gap in the predicted direction
        out["by_predicted_gap"][f">={g}pp"] = {
            "points": n,
            "wrong_direction_share": round(float(np.mean(realised <= 0)), 3),
            "realised_over_predicted": round(float(realised.sum() / np.abs(predicted[sel]).sum()), 3),
        }
    return out


__all__ = ["GAP_THRESHOLDS_PP", "SHARED_TRACES", "bench_mrc", "bench_trace", "policy_gap_summary", "read_shared",
           "shared_traces_dir"]
