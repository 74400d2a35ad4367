"""Who a key belongs to and when its source changes: groups, tenants, QoS classes, source updates.

A TTL policy and the freshness report need three facts per key that a cache trace does not carry:

* its **group** (the business object the answer was computed from, the ``{biz}`` of
  ``t:{tenant}:{biz}:{key}``): a multi-tenant workload sets it; any other trace gets
  ``splitmix64(key) mod n_groups``, deterministic and independent of the trace order;
* its **tenant** and the tenant's **QoS class** (one tenant ``default`` of class ``silver`` unless
  the workload says otherwise);
* the **source updates** of each group (a document re-indexed, a model version rolled out): a
  workload may carry them (``trace.meta["source_updates"]``); otherwise a deterministic per-group
  process: a share ``volatile_share`` of the groups (chosen by hash) is *time-sensitive* and updates
  as a Poisson process of mean gap ``update_every_s``, the others are *stable* and update with mean
  gap ``stable_update_every_s``. Seeded by ``(seed, group)``, so every tool sees the same events.

A hit is **stale** when its item was written before the last source update of its group.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from cachetuner.keysample import splitmix64
from cachetuner.traces.trace import Trace

#: QoS classes of the cache-architecture design (§2.4): TTL multiplier, p95 threshold (ms), sla level.
QOS_CLASSES: dict[str, tuple[float, float, int]] = {
    "gold": (1.5, 80.0, 0),
    "silver": (1.0, 120.0, 1),
    "bronze": (0.7, 200.0, 2),
}


class FreshnessConfig(BaseModel):
    """The per-group source-update process used for traces that carry no events of their own."""

    model_config = ConfigDict(extra="forbid")

    n_groups: int = Field(64, ge=1, description="groups ({biz}) keys are hashed into")
    volatile_share: float = Field(0.3, ge=0, le=1, description="share of groups that are time-sensitive")
    update_every_s: float = Field(900.0, gt=0, description="mean gap between source updates of a time-sensitive group")
    stable_update_every_s: float = Field(
        21600.0, gt=0, description="mean gap between source updates of a stable group"
    )
    seed: int = Field(0, ge=0, le=2**32 - 1, description="seed of the source-update processes")


@dataclass(frozen=True)
class KeySpace:
    """Per-key group, tenant and the source-update times of every group (trace seconds, sorted)."""

    group: np.ndarray           # int64 per key id
    tenant: np.ndarray          # int64 per key id (index into tenants)
    tenants: tuple[str, ...]    # tenant names
    classes: tuple[str, ...]    # QoS class per tenant
    volatile: np.ndarray        # bool per group: time-sensitive
    update_ptr: np.ndarray      # int64, len n_groups + 1: updates of group g are update_t[ptr[g]:ptr[g+1]]
    update_t: np.ndarray        # float64 update times, sorted within each group

    @property
    def n_groups(self) -> int:
        return len(self.volatile)

    def ttl_multiplier(self) -> np.ndarray:
        """Per tenant: the QoS class's TTL multiplier."""
        return np.array([QOS_CLASSES[c][0] for c in self.classes], dtype=np.float64)

    def sla_level(self) -> np.ndarray:
        """Per tenant: 0 gold, 1 silver, 2 bronze."""
        return np.array([QOS_CLASSES[c][2] for c in self.classes], dtype=np.int64)

    def last_update(self, groups: np.ndarray, t: np.ndarray) -> np.ndarray:
        """For each (group, time): the time of the group's last source update at or before ``t``
        (``-inf`` when none)."""
        groups = np.asarray(groups, dtype=np.int64)
        t = np.asarray(t, dtype=np.float64)
        out = np.full(len(t), -np.inf)
        if len(self.update_t) == 0 or len(t) == 0:
            return out
        # one sorted axis: group * span + time, so a single searchsorted answers every group
        lo = min(float(self.update_t.min()), float(t.min()))
        span = max(float(self.update_t.max()), float(t.max())) - lo + 1.0
        gid = np.repeat(np.arange(self.n_groups), np.diff(self.update_ptr))
        axis = gid * span + (self.update_t - lo)
        q = groups * span + (t - lo)
        j = np.searchsorted(axis, q, side="right") - 1
        ok = j >= 0
        ok[ok] &= gid[j[ok]] == groups[ok]
        out[ok] = self.update_t[j[ok]]
        return out


def _poisson_times(rng: np.random.Generator, t0: float, t1: float, mean_gap: float) -> np.ndarray:
    n = int(rng.poisson((t1 - t0) / mean_gap)) if t1 > t0 else 0
    return np.sort(rng.uniform(t0, t1, size=n))


def keyspace_for(trace: Trace, cfg: FreshnessConfig | None = None) -> KeySpace:
    """The trace's own layout (``meta["key_group"]``, ``meta["key_tenant"]``, ``meta["tenants"]``,
    ``meta["tenant_classes"]``, ``meta["source_updates"]``) where it has one, else the defaults above."""
    cfg = cfg or FreshnessConfig()
    meta = trace.meta
    ids = np.arange(trace.n_keys, dtype=np.uint64)
    if "key_group" in meta:
        group = np.asarray(meta["key_group"], dtype=np.int64)
        n_groups = int(group.max()) + 1 if len(group) else 1
    else:
        n_groups = cfg.n_groups
        group = (splitmix64(ids ^ np.uint64(0x5EED)) % np.uint64(n_groups)).astype(np.int64)
    tenant = np.asarray(meta.get("key_tenant", np.zeros(trace.n_keys)), dtype=np.int64)
    tenants = tuple(meta.get("tenants", ("default",)))
    classes = tuple(meta.get("tenant_classes", ("silver",) * len(tenants)))
    gids = np.arange(n_groups, dtype=np.uint64)
    hashed = splitmix64(gids + np.uint64(cfg.seed * 7919 + 1)).astype(np.float64) / 2.0**64
    volatile = np.asarray(meta.get("volatile_groups", hashed < cfg.volatile_share), dtype=bool)
    if "source_updates" in meta:
        per_group = [np.sort(np.asarray(x, dtype=np.float64)) for x in meta["source_updates"]]
    else:
        t0 = float(trace.timestamps[0]) if len(trace) else 0.0
        t1 = float(trace.timestamps[-1]) if len(trace) else 0.0
        per_group = []
        for g in range(n_groups):
            rng = np.random.default_rng([cfg.seed, g])
            gap = cfg.update_every_s if volatile[g] else cfg.stable_update_every_s
            per_group.append(_poisson_times(rng, t0, t1, gap))
    ptr = np.zeros(n_groups + 1, dtype=np.int64)
    ptr[1:] = np.cumsum([len(x) for x in per_group])
    upd = np.concatenate(per_group) if per_group else np.zeros(0)
    return KeySpace(group, tenant, tenants, classes, volatile, ptr, upd)
