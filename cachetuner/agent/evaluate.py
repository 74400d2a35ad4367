"""Run several tuners on the same traffic and compare them.

Every tuner gets a fresh env built from the same :class:`~cachetuner.env.EnvConfig`, reset with the
same seed and ``options={"workload": w, "start": "begin"}``, so all of them see identical requests
from an identical cold start; each interval is applied with ``env.unwrapped.step_config`` and
charged by the env's own cost function. Used by ``cachetuner evaluate``, by training (the plots of
the final evaluation episode), by the demo and by the A/B harness.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from cachetuner.baselines.base import Tuner
from cachetuner.env import CacheTuningEnv, EnvConfig

SUMMARY_FIELDS = (
    "cost",
    "hit_ratio",
    "byte_hit_ratio",
    "p95_latency_ms",
    "mean_maxmemory_bytes",
    "slo_violations",
    "config_changes",
)


@dataclass
class IntervalRecord:
    """One interval of one tuner's episode (what the plots and the summary are built from)."""

    interval: int
    gets: int
    hits: int
    byte_requests: int
    byte_hits: int
    hit_ratio: float
    maxmemory: int
    used_memory: int
    policy: str
    timeout: int
    p95_latency_ms: float
    cost: dict[str, float]
    slo_violation: bool  # p95 above the env's ``slo_p95_ms``
    reward: float = 0.0


@dataclass
class TunerResult:
    """A tuner's whole episode and its summary figures (see :func:`summarise`)."""

    name: str
    summary: dict[str, float]
    records: list[IntervalRecord] = field(default_factory=list)
    seconds: float = 0.0


@dataclass
class EvalReport:
    workload: str
    results: dict[str, TunerResult]
    gap_closed: float | None
    env_cfg: EnvConfig | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "workload": self.workload,
            "tuners": {k: {**r.summary, "seconds": round(r.seconds, 3)} for k, r in self.results.items()},
            "gap_closed": self.gap_closed,
        }

    def records_json(self) -> dict[str, list[dict[str, Any]]]:
        return {k: [asdict(x) for x in r.records] for k, r in self.results.items()}


def _record(i: int, info: dict[str, Any], slo_p95_ms: float, reward: float) -> IntervalRecord:
    snap = info["snapshot"]
    cfg = info["config"]
    cost = {k: float(v) for k, v in info["cost"].items()}
    return IntervalRecord(
        interval=i,
        gets=int(snap.gets),
        hits=int(snap.hits),
        byte_requests=int(snap.byte_requests),
        byte_hits=int(snap.byte_hits),
        hit_ratio=float(snap.hit_ratio),
        maxmemory=int(cfg.maxmemory),
        used_memory=int(snap.used_memory),
        policy=str(cfg.maxmemory_policy),
        timeout=int(cfg.timeout),
        p95_latency_ms=float(snap.latency_p95_ms),
        cost=cost,
        slo_violation=bool(snap.latency_p95_ms > slo_p95_ms),
        reward=float(reward),
    )


def summarise(records: list[IntervalRecord]) -> dict[str, float]:
    """Episode figures: ``cost`` is the sum of per-interval total cost; ratios are over all requests of
    the episode; ``p95_latency_ms`` is the get-weighted mean of per-interval p95 (an approximation:
    per-interval histograms are not kept); ``config_changes`` counts intervals whose config differs from
    the previous one."""
    if not records:
        return dict.fromkeys(SUMMARY_FIELDS, float("nan"))
    gets = sum(r.gets for r in records)
    byte_req = sum(r.byte_requests for r in records)
    weights = np.array([max(r.gets, 1) for r in records], dtype=float)
    changes = sum(
        1
        for a, b in zip(records, records[1:], strict=False)
        if (a.maxmemory, a.policy, a.timeout) != (b.maxmemory, b.policy, b.timeout)
    )
    return {
        "cost": float(sum(r.cost.get("total", 0.0) for r in records)),
        "hit_ratio": sum(r.hits for r in records) / gets if gets else 0.0,
        "byte_hit_ratio": sum(r.byte_hits for r in records) / byte_req if byte_req else 0.0,
        "p95_latency_ms": float(np.average([r.p95_latency_ms for r in records], weights=weights)),
        "mean_maxmemory_bytes": float(np.mean([r.maxmemory for r in records])),
        "slo_violations": int(sum(r.slo_violation for r in records)),
        "config_changes": int(changes),
        "intervals": len(records),
    }


def run_episode(
    env: Any,
    tuner: Tuner,
    *,
    seed: int,
    options: dict[str, Any] | None = None,
    on_interval: Callable[[int], None] | None = None,
) -> list[IntervalRecord]:
    """One episode of ``tuner`` on ``env`` from ``env.reset(seed, options)`` to its end."""
    obs, info = env.reset(seed=seed, options=options)
    tuner.reset(env)
    base = env.unwrapped
    records: list[IntervalRecord] = []
    done = False
    while not done:
        cfg = tuner.decide(obs, info)
        obs, reward, terminated, truncated, info = base.step_config(cfg)
        records.append(_record(len(records), info, base.cfg.slo_p95_ms, reward))
        if on_interval is not None:
            on_interval(len(records))
        done = bool(terminated or truncated)
    return records


def gap_closed(summaries: dict[str, dict[str, float]], learned: str = "ppo") -> float | None:
    """(best_static.cost - ppo.cost) / (best_static.cost - oracle.cost); None when a term is missing or
    the oracle is not better than best-static (the gap is empty)."""
    try:
        bs, pp, orc = (summaries[k]["cost"] for k in ("best-static", learned, "oracle"))
    except KeyError:
        return None
    if not bs - orc > 1e-12:
        return None
    return float((bs - pp) / (bs - orc))


def evaluate_tuners(
    env_cfg: EnvConfig,
    tuners: dict[str, Tuner],
    *,
    seed: int = 0,
    workload: int = 0,
    on_interval: Callable[[str, int], None] | None = None,
) -> EvalReport:
    """Run every tuner on ``env_cfg``'s workload ``workload`` from its beginning, each on a fresh env."""
    import time

    results: dict[str, TunerResult] = {}
    wl_name = ""
    for name, tuner in tuners.items():
        env = CacheTuningEnv(env_cfg)
        try:
            t0 = time.perf_counter()
            cb = (lambda n, _name=name: on_interval(_name, n)) if on_interval is not None else None
            recs = run_episode(env, tuner, seed=seed, options={"workload": workload, "start": "begin"}, on_interval=cb)
            results[name] = TunerResult(name, summarise(recs), recs, time.perf_counter() - t0)
            wl_name = wl_name or str(env.workload)
        finally:
            env.close()
    return EvalReport(wl_name, results, gap_closed({k: r.summary for k, r in results.items()}), env_cfg)
