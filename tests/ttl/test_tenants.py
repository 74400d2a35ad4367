"""Multi-tenant workloads, per-tenant figures in MetricsSnapshot, class protection, per-tenant A/B."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from cachetuner.ab.config import ABConfig
from cachetuner.ab.runner import run_ab
from cachetuner.config import RedisConfig
from cachetuner.errors import ConfigError
from cachetuner.tenants import TenantWorkload, build_tenant_trace, key_names, load_tenant_workload
from cachetuner.tenants.qos import qos_experiment
from cachetuner.ttl import keyspace_for, simulate_ttl

SMALL = {
    "name": "small3",
    "duration_s": 1200,
    "freshness": {"volatile_share": 0.5, "update_every_s": 300},
    "tenants": [
        {"name": "gold", "qos": "gold", "trace": "synthetic:zipf", "rate": 20, "seed": 1, "n_biz": 4,
         "model_version_every_s": 600, "params": {"n_requests": 24000, "n_keys": 600, "alpha": 1.2, "sizes": "fixed:2000"}},
        {"name": "silver", "qos": "silver", "trace": "synthetic:zipf", "rate": 10, "seed": 2, "n_biz": 8,
         "params": {"n_requests": 12000, "n_keys": 5000, "alpha": 0.9, "sizes": "fixed:4000"}},
        {"name": "bronze", "qos": "bronze", "trace": "bundled:web07", "rate": 10, "size_model": "fixed:8000",
         "n_biz": 8},
    ],
}  # fmt: skip


@pytest.fixture(scope="module")
def small_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    p = tmp_path_factory.mktemp("tenants") / "small3.yaml"
    p.write_text(yaml.safe_dump(SMALL))
    return p


def test_combined_trace_layout(small_path: Path) -> None:
    tr = load_tenant_workload(small_path)
    tenant = tr.meta["key_tenant"][tr.keys]
    counts = np.bincount(tenant, minlength=3)
    # own rates: 20, 10 and 10 req/s over 1200 s (Poisson arrivals / fixed rate, cut at duration_s)
    assert counts[0] == pytest.approx(24000, rel=0.03) and counts[1] == pytest.approx(12000, rel=0.03)
    assert counts[2] == 12001 and np.all(np.diff(tr.timestamps) >= 0) and tr.timestamps[-1] <= 1200
    # own key spaces: a key belongs to one tenant; names t:{tenant}:{biz}:{key}, lengths charged as sent
    names = key_names(tr)
    assert names[0].startswith(b"t:gold:") and names[-1].startswith(b"t:bronze:")
    assert [len(n) for n in names] == tr.key_bytes.tolist()
    ks = keyspace_for(tr)
    assert ks.tenants == ("gold", "silver", "bronze") and ks.n_groups == 4 + 8 + 8
    assert set(np.unique(ks.group[tr.keys][tenant == 0])) <= {0, 1, 2, 3}
    # model-version rollouts update every gold group at once
    gold_updates = [set(ks.update_t[ks.update_ptr[g] : ks.update_ptr[g + 1]]) for g in range(4)]
    assert set.intersection(*gold_updates)


def test_bad_tenant_workload(tmp_path: Path) -> None:
    p = tmp_path / "bad.yaml"
    p.write_text(yaml.safe_dump({"tenants": [{"name": "a", "trace": "bundled:web07", "qos": "platinum"}]}))
    with pytest.raises(ConfigError, match=f"{p}: field 'tenants.0.qos'"):
        load_tenant_workload(p)


def test_snapshot_tenants_sum_to_totals(small_path: Path) -> None:
    tr = load_tenant_workload(small_path)
    run = simulate_ttl(tr, "fixed:300", RedisConfig(maxmemory=int(0.1 * tr.working_set_bytes())), interval_s=60)
    for s in run.snapshots:
        assert set(s.tenants) == {"gold", "silver", "bronze"}
        assert sum(t.gets for t in s.tenants.values()) == s.gets
        assert sum(t.hits for t in s.tenants.values()) == s.hits
        assert sum(t.byte_hits for t in s.tenants.values()) == s.byte_hits
        assert sum(t.stale_hits for t in s.tenants.values()) == s.stale_hits
    # class TTL multipliers: gold writes 450 s, silver 300 s, bronze 210 s
    tenant = tr.meta["key_tenant"][run.trace.keys]
    assert {float(run.trace.ttls[tenant == t][0]) for t in range(3)} == {450.0, 300.0, 210.0}


def test_gold_protected_by_volatile_lru(small_path: Path) -> None:
    tr = load_tenant_workload(small_path)
    rep, _ = qos_experiment(tr, memory_share=0.1, interval_s=60, warmup=5)
    shared, protected = (rep["scenarios"][k]["tenants"] for k in list(rep["scenarios"])[:2])
    assert protected["gold"]["p95_met_share"] >= 0.99 > shared["gold"]["p95_met_share"]
    assert protected["gold"]["hit_ratio"] > shared["gold"]["hit_ratio"]
    assert protected["bronze"]["miss_share"] > shared["bronze"]["miss_share"]
    assert protected["gold"]["stale_share"] > shared["gold"]["stale_share"]  # the price: gold never expires


def test_ttl_ab_on_tenants_reports_each_tenant(small_path: Path) -> None:
    cfg = ABConfig.model_validate({
        "name": "tenants", "horizon_intervals": 15, "warmup_intervals": 2, "primary_metric": "hit_ratio",
        "tenants": str(small_path), "memory_share": 0.1, "env": {"interval_s": 60},
        "control": {"config": {"maxmemory": 1, "maxmemory_policy": "allkeys-lru"}, "ttl": "fixed:300"},
        "treatment": {"config": {"maxmemory": 1, "maxmemory_policy": "allkeys-lru"}, "ttl": "rules"},
        "tracking": {"enabled": False},
    })  # fmt: skip
    out = run_ab(cfg).to_json()
    assert set(out["tenants"]) == {"gold", "silver", "bronze"}
    for t in out["tenants"].values():
        lo, hi = t["hit_ratio_delta_pp"]["ci"]
        assert lo <= t["hit_ratio_delta_pp"]["mean"] <= hi


def test_workload_model_defaults() -> None:
    w = TenantWorkload.model_validate({"tenants": [{"name": "x", "trace": "bundled:web07", "limit": 500}]})
    tr = build_tenant_trace(w)
    assert tr.meta["tenant_classes"] == ["silver"] and len(tr) == 500
