"""One controller on one env for one episode: the loop every evaluation, training report and A/B run uses.

Each interval the env's public state becomes a :class:`~cachetuner.control.DecisionContext`, the
controller answers with a config, and :meth:`CacheTuningEnv.step_config` applies it under the same
bounds and charges it by the same cost function, learned or not.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from cachetuner.control.base import ClientTTLDecider, Controller, DecisionContext

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
    """One interval of one controller's episode (what the plots and the summary are built from)."""

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
    changed: bool = False  # the config differs from the one in force before (the initial one, for interval 0)


def context_from_env(
    env: Any, obs: Any, info: dict[str, Any], *, hindsight: bool = False, sample: bool = False
) -> DecisionContext:
    """The decision context of ``env`` after the interval that produced ``obs``/``info`` (public state only);
    ``sample``: include the interval's requests (controllers that set ``needs_sample``)."""
    base = env.unwrapped
    return DecisionContext(
        snapshot=info["snapshot"],
        config=info["config"],
        space=base.space,
        prices=base.prices,
        step=int(info.get("step", 0)),
        obs=None if obs is None else np.asarray(obs),
        curves=base.curves,
        whatif=dict(info.get("whatif") or {}),
        fork=base.fork if hindsight else None,
        info=info,
        client_ttl=getattr(base, "client_ttl", None),
        sample=base.backend.recent_requests() if sample else None,
    )


def wants_sample(controller: Any) -> bool:
    """Whether ``controller`` reads the interval's requests (``ctx.sample``; the ``needs_sample`` attribute)."""
    return bool(getattr(controller, "needs_sample", False))


def config_key(cfg: Any) -> tuple[int, str, int]:
    """What a config change is: ``maxmemory``, ``maxmemory-policy`` or ``timeout`` differ (other knobs follow them)."""
    return int(cfg.maxmemory), str(cfg.maxmemory_policy), int(cfg.timeout)


def record(i: int, info: dict[str, Any], slo_p95_ms: float, reward: float, previous: Any) -> IntervalRecord:
    """``previous``: the config in force before this interval (the reset's for the first one)."""
    snap = info["snapshot"]
    cfg = info["config"]
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
        cost={k: float(v) for k, v in info["cost"].items()},
        slo_violation=bool(snap.latency_p95_ms > slo_p95_ms),
        reward=float(reward),
        changed=config_key(cfg) != config_key(previous),
    )


def summarise(records: list[IntervalRecord]) -> dict[str, float]:
    """Episode figures: ``cost`` is the sum of per-interval total cost; ratios are over all requests of
    the episode; ``p95_latency_ms`` is the get-weighted mean of per-interval p95 (an approximation:
    per-interval histograms are not kept); ``config_changes`` counts intervals whose config differs
    from the one in force before, the first decision's move away from the initial config included (until
    2026-12-06 it was left out: only consecutive records were compared)."""
    if not records:
        return dict.fromkeys(SUMMARY_FIELDS, float("nan"))
    gets = sum(r.gets for r in records)
    byte_req = sum(r.byte_requests for r in records)
    weights = np.array([max(r.gets, 1) for r in records], dtype=float)
    changes = sum(r.changed for r in records)
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
    controller: Controller,
    *,
    seed: int,
    options: dict[str, Any] | None = None,
    on_interval: Callable[[int], None] | None = None,
) -> list[IntervalRecord]:
    """One episode of ``controller`` on ``env`` from ``env.reset(seed, options)`` to its end."""
    obs, info = env.reset(seed=seed, options=options)
    base = env.unwrapped
    hindsight = bool(getattr(controller, "hindsight", False))
    wants = wants_sample(controller)
    controller.reset(context_from_env(env, obs, info, hindsight=hindsight, sample=wants))
    records: list[IntervalRecord] = []
    previous = info["config"]
    done = False
    while not done:
        ctx = context_from_env(env, obs, info, hindsight=hindsight, sample=wants)
        cfg = controller.decide(ctx)
        ttl = controller.client_ttl(ctx) if isinstance(controller, ClientTTLDecider) else None
        obs, reward, terminated, truncated, info = base.step_config(cfg) if ttl is None else base.step_config(cfg, ttl)
        records.append(record(len(records), info, base.cfg.slo_p95_ms, reward, previous))
        previous = info["config"]
        if on_interval is not None:
            on_interval(len(records))
        done = bool(terminated or truncated)
    return records
