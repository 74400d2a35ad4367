"""Shadow-mode TTL A/B: the control serves; both TTL policies also run on mini caches fed the mirror.

The control arm serves every request under its TTL policy: on the simulator
(``shadow.control_backend: sim``, the run :func:`cachetuner.ttl.simulate_ttl` makes in sim mode) or on
the live stack (``live``: the replayer sends the workload into the real Redis with the control's TTLs,
``speedup`` times faster than its clock, and every interval is read back through Prometheus,
:mod:`cachetuner.live.served`). The mirrored sample is the hash-sampled request stream (keys with
``splitmix64(key) mod P < R·P``; live: the replayer's ``cachetuner:sampled`` stream, read back from
Redis). It feeds two mini caches of the same scaled ``maxmemory`` (``R`` × the data memory) and seed:
one applies the control's TTL policy, one the treatment's, each run on the mirrored sample itself (a
causal function of what the shadow sees).

The treatment is estimated per interval as ``served control + (mini treatment − mini control)`` (the
difference estimator of :func:`cachetuner.ab.shadow.estimate_snapshot`): every treatment − control
delta is a difference of like-for-like minis, and what the two minis get wrong alike cancels. What
does not cancel is reported as the control arm's *estimator error*: mini control against the served
control (hit ratio, p95, p99, mean TTL, stale share).

Live, the mirrored requests carry the TTL the control wrote, so a ``trace`` policy in a mini means
"the TTL the serving application wrote"; the stream also says whether each sampled GET hit on the real
Redis, from which the served control's mean TTL of its writes is measured.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from cachetuner.ab.config import ABConfig
from cachetuner.ab.result import ArmSeries, record_of
from cachetuner.ab.shadow import estimate_snapshot, mini_config, mini_params
from cachetuner.ab.ttl_runner import ci_json, workload_trace
from cachetuner.config import RedisConfig
from cachetuner.env.reward import interval_cost
from cachetuner.errors import ConfigError
from cachetuner.keysample import hash_sample_mask
from cachetuner.metrics import MetricsSnapshot, TenantMetrics
from cachetuner.sim.params import SimParams
from cachetuner.sim.simulator import TieredCacheSim
from cachetuner.traces.trace import Op, Trace
from cachetuner.ttl import KeySpace, apply_ttl_policy, keyspace_for, make_ttl_policy, simulate_ttl
from cachetuner.ttl.keyspace import QOS_CLASSES
from cachetuner.ttl.outcomes import stale_hits, tenant_intervals

StepFn = Callable[[int, int], None]


@dataclass
class ArmIntervals:
    """One arm, interval by interval: snapshots (with ``tenants`` and ``stale_hits``) and the mean TTL
    of its admitted writes (``writes``, ``ttl_sum`` per interval)."""

    policy: str
    snapshots: list[MetricsSnapshot]
    writes: np.ndarray
    ttl_sum: np.ndarray
    stale_measured: bool = True  # live without tenants: the replayer counts no stale hits

    def mean_ttl(self) -> np.ndarray:
        return np.divide(self.ttl_sum, self.writes, out=np.zeros(len(self.writes)), where=self.writes > 0)

    def total_mean_ttl(self) -> float:
        w = float(self.writes.sum())
        return float(self.ttl_sum.sum()) / w if w else 0.0

    def stale_share(self) -> np.ndarray:
        return np.array([s.stale_hits / s.hits if s.hits else 0.0 for s in self.snapshots])

    def total(self, key: str) -> float:
        s = self.snapshots
        if key == "hit_ratio":
            g = sum(x.gets for x in s)
            return sum(x.hits for x in s) / g if g else 0.0
        if key == "stale_share":
            h = sum(x.hits for x in s)
            return sum(x.stale_hits for x in s) / h if h else 0.0
        return float(np.mean([getattr(x, key) for x in s])) if s else 0.0


# ----------------------------------------------------------------------------- the mirror
def sample_rate(cfg: ABConfig, n_keys: int) -> float:
    """The shadow's sampling rate, raised so that about ``min_keys`` keys are sampled."""
    sh = cfg.shadow
    return (
        float(max(sh.sample_rate, min(1.0, sh.min_keys / n_keys)))
        if n_keys and sh.min_keys
        else sh.sample_rate
    )


def mirrored_sample(trace: Trace, rate: float, modulus: int) -> Trace:
    """The requests whose key is in the hash sample (global key ids, the trace's key space and meta)."""
    keep = hash_sample_mask(trace.keys, rate, modulus)
    return replace(trace, timestamps=trace.timestamps[keep], keys=trace.keys[keep], sizes=trace.sizes[keep],
                   ops=trace.ops[keep], ttls=trace.ttls[keep])  # fmt: skip


def run_mini(
    sample: Trace, policy: str, config: RedisConfig, params: SimParams, ks: KeySpace, *, t0: float,
    interval_s: float, n_int: int, seed: int,
) -> ArmIntervals:  # fmt: skip
    """One mini cache: ``policy`` applied to the mirrored ``sample``, replayed interval by interval
    on the grid ``t0 + j·interval_s`` of the served arm (empty intervals included)."""
    tr = apply_ttl_policy(sample, policy, ks)
    iv = np.floor((tr.timestamps - t0) / interval_s).astype(np.int64)
    n = int(np.searchsorted(iv, n_int, side="left"))
    tr, iv = tr.slice(0, n), iv[:n]
    bounds = np.searchsorted(iv, np.arange(n_int + 1), side="left")
    sim = TieredCacheSim.for_trace(tr, config, params, seed=seed)
    record = np.zeros((len(tr), 2), dtype=np.float64)
    snaps = [
        sim.run(tr, int(bounds[j]), int(bounds[j + 1]), interval_s, until=t0 + (j + 1) * interval_s,
                record=record[bounds[j]:bounds[j + 1]])
        for j in range(n_int)
    ]  # fmt: skip
    stale = stale_hits(tr, record, ks)
    written = record[:, 0] >= 2.0
    tenants = tenant_intervals(tr, record, ks, stale, iv, n_int)
    st = np.bincount(iv, weights=stale.astype(np.float64), minlength=n_int)[:n_int]
    for j, snap in enumerate(snaps):
        snap.stale_hits = int(st[j])
        snap.tenants = {name: _tenant_metrics(t, j) for name, t in tenants.items()}
    return ArmIntervals(
        make_ttl_policy(policy).name, snaps,
        np.bincount(iv, weights=written.astype(np.float64), minlength=n_int)[:n_int],
        np.bincount(iv, weights=np.where(written, tr.ttls, 0.0), minlength=n_int)[:n_int],
    )  # fmt: skip


def _tenant_metrics(t: dict[str, np.ndarray], j: int) -> TenantMetrics:
    return TenantMetrics(gets=int(t["gets"][j]), hits=int(t["hits"][j]), byte_requests=int(t["byte_requests"][j]),
                         byte_hits=int(t["byte_hits"][j]), stale_hits=int(t["stale_hits"][j]),
                         latency_p95_ms=float(t["p95_ms"][j]))  # fmt: skip


# ----------------------------------------------------------------------------- the served control
def served_sim(trace: Trace, policy: str, config: RedisConfig, env_cfg: Any, ks: KeySpace, n_int: int,
               seed: int) -> ArmIntervals:  # fmt: skip
    """The control served by the simulator (the run a sim-mode TTL A/B makes of its control)."""
    run = simulate_ttl(trace, policy, config, interval_s=env_cfg.interval_s, params=env_cfg.sim, keyspace=ks, seed=seed,
                       max_intervals=n_int)  # fmt: skip
    s = run.series
    return ArmIntervals(run.policy, run.snapshots, s["writes"], s["mean_ttl_s"] * s["writes"])


def served_live(trace: Trace, cfg: ABConfig, config: RedisConfig, env_cfg: Any, ks: KeySpace, n_int: int,
                rate: float) -> tuple[ArmIntervals, Trace, dict[str, Any]]:  # fmt: skip
    """The control served by the real replayer into the stack's Redis; also returns the mirrored
    sample read back from the stream (as a trace in trace time) and the live run's metadata."""
    from cachetuner.live.served import serve_trace

    sh = cfg.shadow
    if sh.stack_dir is None:
        raise ConfigError(
            "shadow.stack_dir: a live TTL shadow A/B replays the workload itself; give --stack-dir"
        )
    policy = cfg.control.ttl or "trace"
    run = serve_trace(trace, str(sh.stack_dir), config, ttl_policy=policy, keyspace=ks, speedup=sh.speedup,
                      interval_s=env_cfg.interval_s, max_intervals=n_int, sample_rate=rate, seed=cfg.seed)  # fmt: skip
    st = run.stream
    assert st is not None
    t0 = float(trace.timestamps[0])
    iv = np.floor((st.timestamps - t0) / env_cfg.interval_s).astype(np.int64)
    n = len(run.snapshots)
    written = (st.ops == Op.SET) | ((st.ops == Op.GET) & ~st.hits)
    ok = written & (iv >= 0) & (iv < n)
    writes = np.bincount(iv[ok], minlength=n)[:n].astype(np.float64)
    ttl_sum = np.bincount(iv[ok], weights=st.ttls[ok], minlength=n)[:n]
    snaps = run.snapshots
    tenants = "key_tenant" in trace.meta
    for s in snaps:
        s.stale_hits = sum(t.stale_hits for t in s.tenants.values())
    order = np.argsort(st.timestamps, kind="stable")
    sample = Trace(name=f"{trace.name} (mirrored)", timestamps=st.timestamps[order], keys=st.keys[order],
                   sizes=st.sizes[order], ops=st.ops[order], ttls=st.ttls[order], n_keys=trace.n_keys,
                   key_bytes=trace.key_bytes, read_only=trace.read_only, meta=trace.meta)  # fmt: skip
    expected = int(hash_sample_mask(trace.keys[: int(run.result.next_index)], rate, 1 << 24).sum())
    meta = {"speedup": sh.speedup, "wall_interval_s": run.wall_interval_s, "scrape_aligned": run.aligned,
            "empty_used_memory": run.empty_used_memory,
            "mirrored_requests": int(len(st.keys)), "mirrored_requests_expected": expected,
            "replay_requests_per_s": run.result.requests_per_s}  # fmt: skip
    return ArmIntervals(policy, snaps, writes, ttl_sum, stale_measured=tenants), sample, meta


# ----------------------------------------------------------------------------- the experiment
def run_ttl_shadow(
    cfg: ABConfig, env_cfg: Any, n: int, on_step: StepFn | None
) -> tuple[ArmSeries, ArmSeries, dict[str, Any], dict[str, Any]]:
    """The control served, both arms on the minis; returns (control, treatment, meta, extras)."""
    trace = workload_trace(cfg, env_cfg)
    ks = keyspace_for(trace, cfg.freshness)
    warm = cfg.warmup_intervals
    assert cfg.control.config is not None
    config = cfg.control.config
    if cfg.memory_share is not None:
        config = config.model_copy(update={"maxmemory": int(cfg.memory_share * trace.working_set_bytes())})
    rate = sample_rate(cfg, trace.n_keys)
    if cfg.shadow.modulus != 1 << 24 and cfg.shadow.control_backend == "live":
        raise ConfigError("shadow.modulus: the live replayer samples modulo 2^24; leave the default")
    params: SimParams = env_cfg.sim
    live_meta: dict[str, Any] = {}
    if cfg.shadow.control_backend == "live":
        served, sample, live_meta = served_live(trace, cfg, config, env_cfg, ks, n + warm, rate)
    else:
        served = served_sim(trace, cfg.control.ttl or "trace", config, env_cfg, ks, n + warm, cfg.seed)
        sample = mirrored_sample(trace, rate, cfg.shadow.modulus)
    if on_step is not None:
        on_step(n // 2, n)
    n_int = len(served.snapshots)
    # the part of maxmemory that holds no data: the simulator's model, or what the live Redis used empty
    fixed = int(live_meta["empty_used_memory"]) if live_meta else params.fixed_bytes
    mcfg, mparams = mini_config(config, rate, fixed), mini_params(params, rate)
    t0 = float(trace.timestamps[0])
    minis = {
        role: run_mini(sample, arm.ttl or "trace", mcfg, mparams, ks, t0=t0, interval_s=env_cfg.interval_s,
                       n_int=n_int, seed=cfg.seed)
        for role, arm in (("control", cfg.control), ("treatment", cfg.treatment))
    }  # fmt: skip
    if not served.stale_measured:  # live, no tenants: the replayer counts no stale hits; the mini control's share
        for s, m in zip(served.snapshots, minis["control"].snapshots, strict=True):
            s.stale_hits = int(round(s.hits * m.stale_hits / m.hits)) if m.hits else 0
    est = _estimates(served, minis["control"], minis["treatment"], rate, config, params, fixed)
    control, treatment = _arm_series(cfg, env_cfg, served, est, minis, warm)
    if on_step is not None:
        on_step(n, n)
    extras = _extras(cfg, served, est, minis, control, treatment, warm, rate, sample, live_meta, ks)
    meta = {"workload_label": trace.name, "ttl": {"control": served.policy, "treatment": minis["treatment"].policy},
            "warmup_intervals": warm, "tenant_names": list(ks.tenants),
            "shadow_control_backend": cfg.shadow.control_backend, "shadow_sample_rate": rate,
            "shadow_sampled_keys": int(len(np.unique(sample.keys)))}  # fmt: skip
    return control, treatment, meta, extras


def _estimates(served: ArmIntervals, mc: ArmIntervals, mt: ArmIntervals, rate: float, config: RedisConfig,
               params: SimParams, fixed: int) -> list[MetricsSnapshot]:  # fmt: skip
    out = []
    for c, m, t in zip(served.snapshots, mc.snapshots, mt.snapshots, strict=True):
        e = estimate_snapshot(c, m, t, rate=rate, fixed=fixed, config=config, params=params)
        # the stale *share* moves by the minis' difference of shares: staleness concentrates on the hottest
        # keys, so counts scaled by 1/R swing with whether those were drawn (measured: worse, docs/ab.md)
        stale = _share(c) + _share(t) - _share(m)
        e.stale_hits = int(round(float(np.clip(stale, 0.0, 1.0)) * e.hits))
        e.tenants = {name: _tenant_estimate(tc, m.tenants.get(name), t.tenants.get(name), rate, params.latency.miss_sigma)
                     for name, tc in c.tenants.items()}  # fmt: skip
        out.append(e)
    return out


def adjusted_hit_ratio(mini: list[MetricsSnapshot], served: list[MetricsSnapshot], rate: float) -> float:
    """A mini's hit ratio with the SHARDS-adj correction (Waldspurger et al., FAST'15): sampled GETs
    missing from (or in excess of) ``rate`` x the served GETs count as hits (the luck of drawing the
    hottest keys). What the difference estimator implicitly uses; the raw ratio is reported as well."""
    expected = rate * sum(c.gets for c in served)
    hits = sum(m.hits for m in mini) + expected - sum(m.gets for m in mini)
    return float(np.clip(hits / expected, 0.0, 1.0)) if expected > 0 else 0.0


def _tenant_estimate(
    c: TenantMetrics, m: TenantMetrics | None, t: TenantMetrics | None, rate: float, sigma: float
) -> TenantMetrics:
    """A tenant's share of the treatment: its served figures shifted by its minis' difference; its p95
    as the cache-wide one (:func:`cachetuner.ab.shadow.estimate_snapshot`): in the backend-call tail,
    the measured p95 scaled by the lognormal quantile shift of its miss share, else the minis' shift
    (a tenant's few sampled requests make the minis' own p95s too noisy to difference in the tail)."""
    if m is None or t is None or not c.gets:
        return replace(c)
    hits = int(round(np.clip(c.hits + (t.hits - m.hits) / rate, 0, c.gets)))
    share = (c.stale_hits / c.hits if c.hits else 0.0) + _share(t) - _share(m)
    stale = int(round(float(np.clip(share, 0.0, 1.0)) * hits))
    p95 = max(
        c.latency_p95_ms + t.latency_p95_ms - m.latency_p95_ms, min(c.latency_p95_ms, t.latency_p95_ms), 0.0
    )
    s_c, s_t = 1.0 - c.hits / c.gets, 1.0 - hits / c.gets
    if min(s_c, s_t) > 0.05 * 1.25 and c.latency_p95_ms > 0:
        from scipy.stats import norm

        p95 = float(c.latency_p95_ms * np.exp(sigma * (norm.ppf(1 - 0.05 / s_t) - norm.ppf(1 - 0.05 / s_c))))
    bh = int(round(np.clip(c.byte_hits + (t.byte_hits - m.byte_hits) / rate, 0, c.byte_requests)))
    return TenantMetrics(gets=c.gets, hits=hits, byte_requests=c.byte_requests, byte_hits=bh,
                         stale_hits=stale, latency_p95_ms=p95)  # fmt: skip


def _arm_series(cfg: ABConfig, env_cfg: Any, served: ArmIntervals, est: list[MetricsSnapshot],
                minis: dict[str, ArmIntervals], warm: int) -> tuple[ArmSeries, ArmSeries]:  # fmt: skip
    mc, mt = minis["control"].mean_ttl(), minis["treatment"].mean_ttl()
    ttl_c = served.mean_ttl()
    out = []
    for role, arm, snaps in (("control", cfg.control, served.snapshots), ("treatment", cfg.treatment, est)):
        series = ArmSeries(role, arm.describe(), estimated=role == "treatment")
        for j in range(warm, len(snaps)):
            snap = snaps[j]
            rec = record_of(
                snap, interval_cost(snap, changed=False, cfg=env_cfg.reward, slo_p95_ms=env_cfg.slo_p95_ms)
            )
            rec["stale_share"] = _share(snap)
            rec["mean_ttl_s"] = float(ttl_c[j] if role == "control" else _ttl_ratio(ttl_c[j], mt[j], mc[j]))
            series.records.append(rec)
            series.configs.append(snap.config.model_dump(mode="json") if snap.config else {})
        out.append(series)
    return out[0], out[1]


def _extras(cfg: ABConfig, served: ArmIntervals, est: list[MetricsSnapshot], minis: dict[str, ArmIntervals],
            control: ArmSeries, treatment: ArmSeries, warm: int, rate: float, sample: Trace,
            live_meta: dict[str, Any], ks: KeySpace) -> dict[str, Any]:  # fmt: skip
    mc, mt = minis["control"], minis["treatment"]
    sl = slice(warm, None)

    def window(a: ArmIntervals) -> ArmIntervals:
        return ArmIntervals(a.policy, a.snapshots[sl], a.writes[sl], a.ttl_sum[sl], a.stale_measured)

    s, wc, wt = window(served), window(mc), window(mt)
    ttl_c = s.total_mean_ttl()
    tenants: dict[str, Any] = {}
    for i, name in enumerate(ks.tenants):
        if not any(name in x.tenants for x in s.snapshots):
            continue  # live, no tenant labels: the cache-wide deltas say it all
        thr = QOS_CLASSES[ks.classes[i]][1]
        c_hr, t_hr, c_p, t_p = (np.array([_tm(x, name, k) for x in snaps]) for snaps, k in
                                ((s.snapshots, "hit_ratio"), (est[sl], "hit_ratio"),
                                 (s.snapshots, "p95"), (est[sl], "p95")))  # fmt: skip
        tenants[name] = {
            "hit_ratio_delta_pp": ci_json(c_hr, t_hr, cfg, 100.0, 10 + 2 * i),
            "p95_delta_ms": ci_json(c_p, t_p, cfg, 1.0, 11 + 2 * i),
            "p95_ok_share": {"control": float((c_p <= thr).mean()), "treatment": float((t_p <= thr).mean())},
        }
    mini_totals = {
        role: {"hit_ratio": a.total("hit_ratio"), "hit_ratio_adj": adjusted_hit_ratio(a.snapshots, s.snapshots, rate),
               "p95_ms": a.total("latency_p95_ms"), "p99_ms": a.total("latency_p99_ms"),
               "mean_ttl_s": a.total_mean_ttl(), "stale_share": a.total("stale_share")}
        for role, a in (("control", wc), ("treatment", wt))
    }  # fmt: skip
    served_totals = {"hit_ratio": s.total("hit_ratio"), "p95_ms": s.total("latency_p95_ms"),
                     "p99_ms": s.total("latency_p99_ms"), "mean_ttl_s": ttl_c, "stale_share": s.total("stale_share")}  # fmt: skip
    hr_err = 100.0 * np.array(
        [adjusted_hit_ratio([m], [c], rate) - _hr(c) for m, c in zip(wc.snapshots, s.snapshots, strict=True)]
    )
    p95_err = np.array(
        [m.latency_p95_ms - c.latency_p95_ms for m, c in zip(wc.snapshots, s.snapshots, strict=True)]
    )
    return {
        "mean_ttl_s": {"control": ttl_c, "treatment": _ttl_ratio(ttl_c, mini_totals["treatment"]["mean_ttl_s"],
                                                                 mini_totals["control"]["mean_ttl_s"])},
        "stale_share_delta_pp": ci_json(control.series("stale_share"), treatment.series("stale_share"), cfg, 100.0, 7),
        "stale_share": {"control": served_totals["stale_share"], "treatment": _total_share(est[sl])},
        "p99_delta_ms": ci_json(control.series("p99_ms"), treatment.series("p99_ms"), cfg, 1.0, 8),
        "tenants": tenants,
        "shadow": {
            "control_backend": cfg.shadow.control_backend, "sample_rate": rate,
            "sampled_keys": int(len(np.unique(sample.keys))), "sampled_requests": int(len(sample)),
            "served_control": served_totals, "mini": mini_totals,
            "estimator_error": {"control": {
                "hit_ratio_pp": 100.0 * (mini_totals["control"]["hit_ratio_adj"] - served_totals["hit_ratio"]),
                "hit_ratio_pp_raw": 100.0 * (mini_totals["control"]["hit_ratio"] - served_totals["hit_ratio"]),
                "hit_ratio_pp_mean_abs": float(np.abs(hr_err).mean()) if len(hr_err) else 0.0,
                "p95_ms_mean_abs": float(np.abs(p95_err).mean()) if len(p95_err) else 0.0,
                "p99_ms": mini_totals["control"]["p99_ms"] - served_totals["p99_ms"],
                "mean_ttl_s": mini_totals["control"]["mean_ttl_s"] - ttl_c,
                "stale_share_pp": 100.0 * (mini_totals["control"]["stale_share"] - served_totals["stale_share"]),
            }},
            **({"live": live_meta} if live_meta else {}),
        },
    }  # fmt: skip


def _ttl_ratio(served: float, treat: float, mirror: float) -> float:
    """The treatment's mean TTL: the mini treatment's, scaled by served / mini control (which writes
    happened, e.g. the mix of QoS classes and their TTL factors, differs a little in the sample; a
    difference would go negative when the two policies' TTLs are far apart)."""
    return float(treat * served / mirror) if mirror > 0 else float(treat)


def _total_share(snaps: list[MetricsSnapshot]) -> float:
    hits = sum(x.hits for x in snaps)
    return sum(x.stale_hits for x in snaps) / hits if hits else 0.0


def _share(s: MetricsSnapshot | TenantMetrics) -> float:
    """Share of the interval's hits served stale."""
    return s.stale_hits / s.hits if s.hits else 0.0


def _hr(s: MetricsSnapshot) -> float:
    return s.hits / s.gets if s.gets else 0.0


def _tm(s: MetricsSnapshot, tenant: str, key: str) -> float:
    t = s.tenants.get(tenant)
    if t is None:
        return 0.0
    return (t.hits / t.gets if t.gets else 0.0) if key == "hit_ratio" else t.latency_p95_ms
