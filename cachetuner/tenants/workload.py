"""Multi-tenant workloads: several traces (real or synthetic) as tenants of one Redis.

Each tenant has its own key space (ids offset so they never collide), its own request rate (its
trace re-timed with ``rate``), a QoS class (gold / silver / bronze) and ``n_biz`` business groups;
its keys are named ``t:{tenant}:{biz}:{key}`` (the key-name length the simulator charges and the
replayer sends), ``biz = splitmix64(key) mod n_biz``. The tenants' requests are merged by time.
Each (tenant, biz) group is a freshness group: a share of them is time-sensitive and gets source
updates (a Poisson process, :class:`~cachetuner.ttl.keyspace.FreshnessConfig`), and
``model_version_every_s`` adds model-version rollouts that update every group of a tenant at once.

The layout travels in ``trace.meta`` (``key_tenant``, ``tenants``, ``tenant_classes``, ``key_group``,
``source_updates``, ``volatile_groups``), which :func:`cachetuner.ttl.keyspace_for` reads.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from cachetuner.errors import CacheTunerError
from cachetuner.keysample import splitmix64
from cachetuner.traces import read_trace
from cachetuner.traces.trace import Trace
from cachetuner.ttl.keyspace import FreshnessConfig
from cachetuner.yamlconfig import field_error, load_model


class TenantSpec(BaseModel):
    """One tenant: its traffic (any trace ``read_trace`` reads), rate, QoS class and groups."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(..., pattern=r"^[A-Za-z0-9_-]+$")
    qos: Literal["gold", "silver", "bronze"] = "silver"
    trace: str = Field(..., description="trace file, synthetic:NAME or bundled:NAME")
    format: str = "auto"
    size_model: str | None = None
    rate: float | None = Field(None, gt=0, description="this tenant's requests/s (re-times its trace)")
    limit: int | None = Field(None, ge=1)
    seed: int = Field(0, ge=0, le=2**32 - 1, description="seed of a synthetic trace / the size model")
    params: dict[str, Any] = Field(default_factory=dict, description="workload / reader params")
    n_biz: int = Field(16, ge=1, description="business groups ({biz}) of this tenant")
    model_version_every_s: float | None = Field(
        None, gt=0, description="mean gap between model-version rollouts (update every group of the tenant)"
    )


class TenantWorkload(BaseModel):
    """``experiments/workloads/tenants-*.yaml``: the tenants and how long they run."""

    model_config = ConfigDict(extra="forbid")

    name: str = "tenants"
    duration_s: float | None = Field(None, gt=0, description="cut every tenant's traffic at this many seconds")
    freshness: FreshnessConfig = Field(default_factory=FreshnessConfig)
    tenants: list[TenantSpec] = Field(..., min_length=1)

    @model_validator(mode="after")
    def _unique(self) -> TenantWorkload:
        names = [t.name for t in self.tenants]
        if len(set(names)) != len(names):
            raise ValueError(f"tenant names must be unique, got {names}")
        return self


def _digits(x: np.ndarray) -> np.ndarray:
    return np.floor(np.log10(np.maximum(x, 1))).astype(np.int64) + 1


def combine_tenants(w: TenantWorkload, parts: list[Trace]) -> Trace:
    """Merge one trace per tenant (same order as ``w.tenants``) into a namespaced multi-tenant trace."""
    cols: dict[str, list[np.ndarray]] = {k: [] for k in ("ts", "keys", "sizes", "ops", "ttls")}
    key_tenant, key_group, key_bytes, updates, volatile = [], [], [], [], []
    key_off = group_off = 0
    key_offs: list[int] = []
    group_offs: list[int] = []
    fr = w.freshness
    for ti, (spec, tr) in enumerate(zip(w.tenants, parts, strict=True)):
        key_offs.append(key_off)
        group_offs.append(group_off)
        ts = tr.timestamps - tr.timestamps[0]
        n = int(np.searchsorted(ts, w.duration_s, side="right")) if w.duration_s is not None else len(tr)
        cols["ts"].append(ts[:n])
        cols["keys"].append(tr.keys[:n].astype(np.int64) + key_off)
        for k, a in (("sizes", tr.sizes), ("ops", tr.ops), ("ttls", tr.ttls)):
            cols[k].append(a[:n])
        ids = np.arange(tr.n_keys, dtype=np.int64)
        biz = (splitmix64(ids.astype(np.uint64) + np.uint64(ti << 40)) % np.uint64(spec.n_biz)).astype(np.int64)
        key_tenant.append(np.full(tr.n_keys, ti, dtype=np.int64))
        key_group.append(group_off + biz)
        key_bytes.append(4 + len(spec.name) + _digits(biz) + _digits(ids))  # t:{tenant}:{biz}:{key}
        t1 = float(ts[n - 1]) if n else 0.0
        gh = splitmix64(np.arange(spec.n_biz, dtype=np.uint64) + np.uint64(fr.seed * 7919 + ti * 104729 + 1))
        vol = gh.astype(np.float64) / 2.0**64 < fr.volatile_share
        rng_v = np.random.default_rng([fr.seed, ti, 99])
        versions = (
            np.sort(rng_v.uniform(0, t1, rng_v.poisson(t1 / spec.model_version_every_s)))
            if spec.model_version_every_s else np.zeros(0)
        )  # fmt: skip
        for b in range(spec.n_biz):
            rng = np.random.default_rng([fr.seed, ti, b])
            gap = fr.update_every_s if vol[b] else fr.stable_update_every_s
            own = np.sort(rng.uniform(0, t1, rng.poisson(t1 / gap)))
            updates.append(np.sort(np.concatenate([own, versions])))
        volatile.append(vol)
        key_off += tr.n_keys
        group_off += spec.n_biz
    ts = np.concatenate(cols["ts"])
    order = np.argsort(ts, kind="stable")
    meta = {
        "format": "tenants", "workload": w.name, "tenants": [t.name for t in w.tenants],
        "tenant_classes": [t.qos for t in w.tenants], "key_tenant": np.concatenate(key_tenant),
        "key_group": np.concatenate(key_group), "source_updates": updates, "volatile_groups": np.concatenate(volatile),
        "key_names": "t:{tenant}:{biz}:{key}", "tenant_specs": [t.model_dump(mode="json") for t in w.tenants],
        "tenant_key_offset": key_offs, "tenant_group_offset": group_offs,
    }  # fmt: skip
    ops = np.concatenate(cols["ops"])[order]
    return Trace(
        name=f"tenants:{w.name}", timestamps=ts[order], keys=np.concatenate(cols["keys"])[order],
        sizes=np.concatenate(cols["sizes"])[order], ops=ops, ttls=np.concatenate(cols["ttls"])[order],
        n_keys=key_off, key_bytes=np.concatenate(key_bytes).astype(np.int32), read_only=bool(np.all(ops == 0)),
        meta=meta,
    )  # fmt: skip


def build_tenant_trace(w: TenantWorkload, source: str = "<tenant workload>") -> Trace:
    """Read every tenant's trace and combine them; a trace that cannot be read is an error of the same
    class naming ``source`` and the tenant (``FILE: field 'tenants.1': ...``)."""
    parts = []
    for i, t in enumerate(w.tenants):
        try:
            parts.append(read_trace(t.trace, t.format, size_model=t.size_model, rate=t.rate, seed=t.seed,
                                    limit=t.limit, params=dict(t.params)))  # fmt: skip
        except CacheTunerError as e:
            raise type(e)(field_error(source, f"tenants.{i}", f"tenant {t.name}: {e}")) from None
    return combine_tenants(w, parts)


def load_tenant_workload(path: str | Path) -> Trace:
    """A tenant workload YAML -> its combined trace (one-line ConfigError naming file and field)."""
    return build_tenant_trace(load_model(TenantWorkload, path), str(path))


def key_names(trace: Trace) -> list[bytes]:
    """``t:{tenant}:{biz}:{key}`` per key id of a multi-tenant trace (the names the replayer sends)."""
    m = trace.meta
    tenant = np.asarray(m["key_tenant"])
    local = np.arange(trace.n_keys) - np.asarray(m["tenant_key_offset"])[tenant]
    biz = np.asarray(m["key_group"]) - np.asarray(m["tenant_group_offset"])[tenant]
    names = [n.encode() for n in m["tenants"]]
    return [b"t:%s:%d:%d" % (names[t], b, k) for t, b, k in zip(tenant.tolist(), biz.tolist(), local.tolist(), strict=True)]
