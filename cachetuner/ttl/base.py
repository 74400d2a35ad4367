"""The TTL-policy extension axis: one Protocol, one registry, one way to apply a policy to a trace.

Redis has no server-side knob for key lifetimes: the application chooses the TTL of every ``SET``
(``SET k v PX ms``), and Redis only expires keys. A TTL policy is therefore client-side logic. Here it
is a *causal* function of the request stream: the TTL of request ``i`` may use only what the
application knew when it made request ``i`` (the requests before it, the clock, the source-update
events so far, its tenant's class), never the future. That makes it a pure function of the trace, so
the simulator, the live replayer and the A/B runner apply it identically: :func:`apply_ttl_policy`
returns the trace with its TTL column replaced, and each of them replays that trace as it replays any
trace (a GET miss fills with ``ttls[i]``, a SET writes with ``ttls[i]``).

Spec strings: ``NAME`` or ``NAME:ARG`` (``fixed:300``) with optional ``,key=value`` settings
(``hotness,ttl_max=7200``). QoS classes then multiply every TTL by the tenant class's factor.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Protocol, runtime_checkable

import numpy as np

from cachetuner.errors import ConfigError
from cachetuner.registry import Registry
from cachetuner.traces.trace import Trace
from cachetuner.ttl.keyspace import QOS_CLASSES, KeySpace, keyspace_for


@runtime_checkable
class TTLPolicy(Protocol):
    """A client-side TTL rule. ``assign`` returns the TTL in seconds (0 = none) for every request;
    only the requests it writes (SETs, read-through fills of misses) use it."""

    name: str

    def assign(self, trace: Trace, keyspace: KeySpace) -> np.ndarray: ...


#: name -> factory ``(arg: str | None, **settings) -> TTLPolicy``.
TTL_POLICIES: Registry[Any] = Registry("TTL policy", "ttl")


def parse_spec(spec: str, field: str = "ttl") -> tuple[str, str | None, dict[str, Any]]:
    """``"fixed:300"`` -> (``fixed``, ``"300"``, {}); ``"hotness,ttl_max=7200"`` -> (``hotness``, None, {...})."""
    head, *opts = [p.strip() for p in str(spec).split(",")]
    name, _, arg = head.partition(":")
    settings: dict[str, Any] = {}
    for o in opts:
        k, eq, v = o.partition("=")
        if not eq or not k:
            raise ConfigError(f"{field}: setting {o!r} of {spec!r} must be key=value")
        settings[k] = _number(v)
    return name, arg or None, settings


def _number(v: str) -> Any:
    for cast in (int, float):
        try:
            return cast(v)
        except ValueError:
            pass
    return v


def make_ttl_policy(spec: str | TTLPolicy, field: str = "ttl") -> TTLPolicy:
    """A policy from its spec string (an unknown name or bad argument is a one-line ConfigError)."""
    if not isinstance(spec, str):
        return spec
    name, arg, settings = parse_spec(spec, field)
    factory = TTL_POLICIES.get(name, field=field)
    try:
        return factory(arg, **settings)
    except (TypeError, ValueError) as e:
        raise ConfigError(f"{field}: {spec!r}: {e}") from None


def apply_ttl_policy(
    trace: Trace,
    policy: str | TTLPolicy,
    keyspace: KeySpace | None = None,
    *,
    qos: bool = True,
    no_ttl_classes: tuple[str, ...] = (),
) -> Trace:
    """``trace`` with its TTL column set by ``policy`` (times the tenant's QoS class factor with
    ``qos``); ``meta["ttl_policy"]`` names it.

    ``no_ttl_classes``: tenants of these QoS classes write *without* TTL. Under a ``volatile-*``
    eviction policy Redis then never evicts their keys (it evicts only keys with a TTL), which is the
    per-class memory protection Redis allows; the price is that those keys never expire (freshness).
    """
    pol = make_ttl_policy(policy)
    ks = keyspace if keyspace is not None else keyspace_for(trace)
    ttl = np.asarray(pol.assign(trace, ks), dtype=np.float64)
    if ttl.shape != (len(trace),) or not np.all(np.isfinite(ttl)) or np.any(ttl < 0):
        raise ConfigError(f"ttl: policy {pol.name!r} returned invalid TTLs (need {len(trace)} finite values >= 0)")
    if qos:
        mult = ks.ttl_multiplier()
        if np.any(mult != 1.0):
            ttl = ttl * mult[ks.tenant[trace.keys]]
    if no_ttl_classes:
        unknown = set(no_ttl_classes) - set(QOS_CLASSES)
        if unknown:
            raise ConfigError(f"no_ttl_classes: unknown QoS class {sorted(unknown)[0]!r}; valid: {', '.join(QOS_CLASSES)}")
        protected = np.array([c in no_ttl_classes for c in ks.classes])
        ttl = np.where(protected[ks.tenant[trace.keys]], 0.0, ttl)
    return replace(trace, ttls=ttl, meta={**trace.meta, "ttl_policy": pol.name})


def write_mask(trace: Trace, record: np.ndarray) -> np.ndarray:
    """Requests whose write was admitted (a SET or a read-through fill), from a simulator record."""
    return (record[:, 0] >= 2.0)


def mean_write_ttl(trace: Trace, written: np.ndarray) -> float:
    """Mean TTL (s) of the writes that happened (a key without TTL counts as 0)."""
    return float(trace.ttls[written].mean()) if np.any(written) else 0.0
