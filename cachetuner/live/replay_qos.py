"""The class-protection experiment on the live stack: real Redis, redis_exporter, Prometheus.

Each scenario of :mod:`cachetuner.tenants.qos` is served on the stack's Redis by
:func:`cachetuner.live.served.serve_trace`: ``FLUSHALL``, one ``CONFIG SET`` of ``maxmemory`` and the
eviction policy, then the tenant workload replayed ``speedup`` times faster than its clock (TTLs shrink
by the same factor), in exact trace order, starting right after a scrape; every interval of
``interval_s`` trace seconds is read back from Prometheus with PromQL (``MetricsSnapshot.tenants``:
per-tenant gets, hits, bytes and p95 of the client-side histogram). Intervals are the simulator's
intervals and the shares are computed by the simulated experiment's own
:func:`~cachetuner.tenants.qos.p95_met`, with the same ``warmup``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from cachetuner.config import RedisConfig
from cachetuner.errors import ConfigError
from cachetuner.live.resp import redis_client
from cachetuner.live.served import serve_trace
from cachetuner.live.stack import load_state
from cachetuner.tenants.qos import DEFAULT_SCENARIOS, QosScenario, p95_met
from cachetuner.traces.trace import Trace
from cachetuner.ttl.keyspace import QOS_CLASSES, keyspace_for


def check_speedup(speedup: float) -> None:
    """``--speedup`` must be a finite number > 0: 0 divides the trace's duration by zero, a negative one
    asks for negative wall seconds and NaN reaches the replayer's options as a pydantic traceback."""
    if not 0 < speedup < float("inf"):
        raise ConfigError(f"--speedup: must be a finite number > 0, got {speedup!r}")


def live_qos_experiment(
    trace: Trace,
    stack_dir: str,
    *,
    policy: str = "fixed:300",
    memory_share: float = 0.1,
    interval_s: float = 60.0,
    warmup: int = 10,
    speedup: float = 30.0,
    scenarios: tuple[QosScenario, ...] = DEFAULT_SCENARIOS[:2],
    on_scenario: Callable[[int, int, str], None] | None = None,
) -> dict[str, Any]:
    """Per scenario and tenant: hit ratio, mean p95 and the share of intervals meeting the class
    threshold, measured on the live stack in ``stack_dir``."""
    check_speedup(speedup)
    info = load_state(stack_dir)
    if info is None:
        raise ConfigError(f"--stack-dir {stack_dir}: no stack.json there (run `cachetuner stack up --dir {stack_dir}`)")
    classes = dict(zip(trace.meta["tenants"], trace.meta["tenant_classes"], strict=True))
    maxmem = int(memory_share * trace.working_set_bytes())
    ks = keyspace_for(trace)
    r = redis_client(info.redis_url, socket_timeout=5.0)
    report: dict[str, Any] = {"workload": trace.name, "policy": policy, "maxmemory": maxmem, "speedup": speedup,
                              "interval_s": interval_s, "warmup_intervals": warmup, "scenarios": {}}  # fmt: skip
    requested = {t: int(len(np.unique(trace.keys[trace.meta["key_tenant"][trace.keys] == k])))
                 for k, t in enumerate(trace.meta["tenants"])}  # fmt: skip
    for i, sc in enumerate(scenarios):
        evicted0 = int(r.info("stats")["evicted_keys"])
        config = RedisConfig(maxmemory=maxmem, maxmemory_policy=sc.maxmemory_policy)  # type: ignore[arg-type]
        run = serve_trace(trace, stack_dir, config, ttl_policy=policy, keyspace=ks, no_ttl_classes=sc.no_ttl_classes,
                          speedup=speedup, interval_s=interval_s)  # fmt: skip
        res, n = run.result, len(run.snapshots)
        per: dict[str, dict[str, list[float]]] = {t: {"gets": [], "hits": [], "p95": []} for t in classes}
        for snap in run.snapshots:
            for t in classes:
                m = snap.tenants.get(t)
                per[t]["gets"].append(m.gets if m else 0)
                per[t]["hits"].append(m.hits if m else 0)
                per[t]["p95"].append(m.latency_p95_ms if m else float("nan"))
        resident = {t: sum(1 for _ in r.scan_iter(f"t:{t}:*".encode(), count=5000)) for t in classes}
        tenants = {}
        for t, d in per.items():
            g, h, p = (np.asarray(d[k][warmup:], dtype=np.float64) for k in ("gets", "hits", "p95"))
            ok = np.isfinite(p) & (g > 0)
            thr = QOS_CLASSES[classes[t]][1]
            met, counted = p95_met(np.asarray(d["p95"]), np.asarray(d["gets"]), warmup, thr)
            tenants[t] = {
                "qos": classes[t], "p95_threshold_ms": thr, "hit_ratio": float(h.sum() / g.sum()) if g.sum() else 0.0,
                "p95_ms_mean": float(p[ok].mean()) if ok.any() else 0.0,
                "p95_met_share": met, "intervals": counted, "client_hits": (res.tenants or {}).get(t, {}).get("hits", 0),
                "p95_ms_series": [round(float(x), 1) for x in d["p95"]],
                "gets_series": [int(x) for x in d["gets"]],
                "keys_requested": requested[t], "keys_resident_at_end": resident[t],
                "hit_ratio_series": [round(hh / gg, 4) if gg else None for hh, gg in zip(d["hits"], d["gets"], strict=True)],
            }  # fmt: skip
        report["scenarios"][sc.name] = {"maxmemory_policy": sc.maxmemory_policy, "requests": res.requests,
                                        "requests_per_s": res.requests_per_s, "intervals": n - warmup,
                                        "scrape_aligned": run.aligned, "rejected_writes": res.rejected_writes,
                                        "evicted_keys": int(r.info("stats")["evicted_keys"]) - evicted0, "tenants": tenants}  # fmt: skip
        if on_scenario is not None:
            on_scenario(i + 1, len(scenarios), sc.name)
    r.close()
    return report


def live_qos_figure(report: dict[str, Any]) -> Any:
    """Per scenario: each tenant's live p95 per interval (log scale) against its class threshold."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    scen = report["scenarios"]
    fig, axes = plt.subplots(1, len(scen), figsize=(6 * len(scen), 4), sharey=True, squeeze=False)
    colors = {"gold": "#c9a227", "silver": "#7f8c8d", "bronze": "#a0522d"}
    warm = report["warmup_intervals"]
    for ax, (name, d) in zip(axes[0], scen.items(), strict=True):
        for t, v in d["tenants"].items():
            c = colors.get(v["qos"])
            y = np.maximum(np.asarray(v["p95_ms_series"], dtype=np.float64), 0.1)
            ax.plot(np.arange(len(y)), y, color=c, lw=1.2, label=f"{t} ({100 * v['p95_met_share']:.0f} % of intervals met)")
            ax.axhline(v["p95_threshold_ms"], color=c, ls="--", lw=0.8)
        ax.axvspan(0, warm, color="0.9")
        ax.set_yscale("log")
        ax.set_title(f"live Redis: {name}", fontsize=9)
        ax.set_xlabel("interval")
        ax.legend(fontsize=7)
    axes[0][0].set_ylabel("p95 latency (ms, PromQL), dashed: class threshold")
    fig.tight_layout()
    return fig
