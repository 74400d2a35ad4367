"""Key lifetimes: client-side TTL policies, source-update freshness, tenants and QoS classes.

``make_ttl_policy("fixed:300")`` / ``apply_ttl_policy(trace, "hotness")`` are used identically by the
simulator path (:func:`simulate_ttl`), the live replayer and the A/B runner. See docs/ttl.md.
"""

from cachetuner.ttl import policies  # noqa: F401  (registers the policies; hotness's torch loads on use)
from cachetuner.ttl.base import TTL_POLICIES, TTLPolicy, apply_ttl_policy, make_ttl_policy, parse_spec
from cachetuner.ttl.keyspace import QOS_CLASSES, FreshnessConfig, KeySpace, keyspace_for
from cachetuner.ttl.run import TTLRun, simulate_ttl

__all__ = [
    "QOS_CLASSES", "TTL_POLICIES", "FreshnessConfig", "KeySpace", "TTLPolicy", "TTLRun", "apply_ttl_policy",
    "keyspace_for", "make_ttl_policy", "parse_spec", "simulate_ttl",
]  # fmt: skip
