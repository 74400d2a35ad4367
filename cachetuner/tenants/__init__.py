"""Tenants: namespaced keys ``t:{tenant}:{biz}:{key}``, multi-tenant workloads, QoS classes (docs/ttl.md)."""

from cachetuner.tenants.workload import (
    TenantSpec,
    TenantWorkload,
    build_tenant_trace,
    combine_tenants,
    key_names,
    load_tenant_workload,
)

__all__ = ["TenantSpec", "TenantWorkload", "build_tenant_trace", "combine_tenants", "key_names", "load_tenant_workload"]
