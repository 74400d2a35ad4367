"""Static client-TTL references: one Redis config and one :class:`ClientTTL` held for a whole episode.

The static baseline of the TTL dimension (what ``static-default``/``fixed`` run when ``env.client_ttl``
sets multipliers), and its hindsight grid: every combination of per-class multipliers replayed on the
same pinned window, the cheapest one being the best static TTL setting a tuner has to beat. Run as
``python -m cachetuner.env.ttl_grid CONFIG.yaml --multipliers 0.5,1,2`` to print the JSON report.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Sequence
from typing import Any

from cachetuner.config import RedisConfig
from cachetuner.env.cache_env import CacheTuningEnv
from cachetuner.env.config import EnvConfig
from cachetuner.env.sim_backend import SimBackend
from cachetuner.errors import ConfigError
from cachetuner.ttl.knobs import QOS_ORDER, ClientTTL


def hold_episode(
    env: CacheTuningEnv,
    client_ttl: ClientTTL,
    config: RedisConfig | None = None,
    *,
    seed: int = 0,
    options: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Totals of one episode holding ``config`` (``None``: the reset's) and ``client_ttl`` from the first step.

    ``cost`` sums ``info["cost"]["total"]``; ``stale_share`` is stale hits / hits; ``tenants`` has each
    tenant's hit ratio and stale share (multi-tenant workloads)."""
    _obs, info = env.reset(seed=seed, options=options)
    held = config or info["config"]
    gets = hits = stale = expirations = evictions = 0
    cost: dict[str, float] = {}
    per: dict[str, list[int]] = {}
    done = False
    while not done:
        _obs, _r, _te, done, info = env.step_config(held, client_ttl)
        snap = info["snapshot"]
        for k, v in info["cost"].items():
            cost[k] = cost.get(k, 0.0) + float(v)
        gets, hits, stale = gets + snap.gets, hits + snap.hits, stale + snap.stale_hits
        expirations, evictions = expirations + snap.expirations, evictions + snap.evictions
        for name, t in snap.tenants.items():
            acc = per.setdefault(name, [0, 0, 0])
            acc[0], acc[1], acc[2] = acc[0] + t.gets, acc[1] + t.hits, acc[2] + t.stale_hits
    return {
        "client_ttl": client_ttl.model_dump(),
        "cost": round(cost.get("total", 0.0), 1),
        "cost_terms": {k: round(v, 1) for k, v in cost.items()},
        "hit_ratio": round(hits / gets, 4) if gets else 0.0,
        "stale_hits": stale,
        "stale_share": round(stale / hits, 4) if hits else 0.0,
        "expirations": expirations,
        "evictions": evictions,
        "tenants": {
            n: {"hit_ratio": round(h / g, 4) if g else 0.0, "stale_share": round(s / h, 4) if h else 0.0}
            for n, (g, h, s) in per.items()
        },
    }


def class_grid(multipliers: Sequence[float], classes: Sequence[str] = QOS_ORDER) -> list[ClientTTL]:
    """Every combination of ``multipliers`` over ``classes`` (the other classes stay at 1)."""
    if not multipliers:
        raise ConfigError("multipliers: need at least one TTL multiplier")
    return [ClientTTL(**dict(zip(classes, combo, strict=True))) for combo in itertools.product(multipliers, repeat=len(classes))]


def ttl_grid(
    cfg: EnvConfig,
    candidates: Sequence[ClientTTL],
    config: RedisConfig | None = None,
    *,
    stale_costs: Sequence[float] = (0.0, 1.0),
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Each candidate held over the first workload's window from its beginning, warm-up included;
    ``best`` per stale price (cost + ``stale_cost x stale hits``: what a stale answer costs in miss units
    is the user's call)."""
    rows = []
    for ttl in candidates:
        held = cfg.model_copy(update={"client_ttl": ttl})
        env = CacheTuningEnv(held, SimBackend(held, freshness=True))
        try:
            row = hold_episode(env, ttl, config, options={"workload": 0, "start": "begin"})
        finally:
            env.close()
        rows.append(row)
        if progress is not None:
            progress(json.dumps(row))
    best = {}
    for c in stale_costs:
        b = min(rows, key=lambda r: r["cost"] + c * r["stale_hits"])
        best[f"stale_cost={c:g}"] = b["client_ttl"]
    return {"workload": cfg.workloads[0].label, "rows": rows, "best": best}


def main(config: str, multipliers: str = "0.5,1,2") -> None:
    cfg = EnvConfig.from_yaml(config, key="env")
    grid = class_grid([float(x) for x in multipliers.split(",")])
    print(json.dumps(ttl_grid(cfg, grid), indent=1))


if __name__ == "__main__":
    import typer

    typer.run(main)


__all__ = ["class_grid", "hold_episode", "ttl_grid"]
