"""TTL policies: registry and specs, the rule table and the formula on handmade traces, causality."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from cachetuner.errors import ConfigError, UnknownNameError
from cachetuner.hotness_model.predictor import InProcessPredictor
from cachetuner.traces import numeric_key_bytes
from cachetuner.traces.trace import Op, Trace
from cachetuner.ttl import TTL_POLICIES, apply_ttl_policy, keyspace_for, make_ttl_policy
from cachetuner.ttl.hotness import HotnessTTL
from cachetuner.ttl.keyspace import KeySpace
from cachetuner.ttl.policies import MultiFactorTTL, RulesTTL, previous_access, recent_count, runs_before


def handmade(keys: list[int], ts: list[float]) -> Trace:
    n, u = len(keys), max(keys) + 1
    return Trace(
        name="handmade", timestamps=np.asarray(ts, dtype=np.float64), keys=np.asarray(keys, dtype=np.int64),
        sizes=np.full(n, 100, dtype=np.int64), ops=np.full(n, Op.GET, dtype=np.uint8), ttls=np.zeros(n),
        n_keys=u, key_bytes=numeric_key_bytes(u),
    )  # fmt: skip


def layout(n_keys: int, group: list[int], volatile: list[bool], updates: list[list[float]], cls: str = "silver") -> KeySpace:
    ptr = np.zeros(len(updates) + 1, dtype=np.int64)
    ptr[1:] = np.cumsum([len(u) for u in updates])
    return KeySpace(
        np.asarray(group, dtype=np.int64), np.zeros(n_keys, dtype=np.int64), ("default",), (cls,),
        np.asarray(volatile), ptr, np.concatenate([np.asarray(u, dtype=np.float64) for u in updates]),
    )


def test_registry_and_specs() -> None:
    assert {"trace", "fixed", "rules", "multi-factor", "hotness"} <= set(TTL_POLICIES.names())
    assert make_ttl_policy("fixed:300").name == "fixed:300"
    assert make_ttl_policy("rules,tail_s=90").tail_s == 90  # type: ignore[attr-defined]
    with pytest.raises(UnknownNameError, match="valid: .*fixed, rules"):
        make_ttl_policy("ttl-by-magic")
    for bad in ("fixed", "fixed:-1", "rules:3", "rules,nope=1", "rules,tail_s"):
        with pytest.raises(ConfigError):
            make_ttl_policy(bad)


def test_causal_helpers() -> None:
    keys = np.array([1, 2, 1, 1, 2])
    ts = np.array([0.0, 1, 2, 10, 20])
    assert recent_count(keys, ts, 5.0).tolist() == [0, 0, 1, 0, 0]
    assert previous_access(keys, ts).tolist() == [-np.inf, -np.inf, 0.0, 2.0, 1.0]
    labels = np.array([0, 1, 0, 0, 1, 0, 0, 0, 1])
    flags = np.array([1, 1, 1, 0, 1, 1, 1, 1, 0])
    assert runs_before(labels, flags).tolist() == [0, 0, 1, 2, 1, 0, 1, 2, 2]


def test_rules_table() -> None:
    # key 0: group 0 (time-sensitive, updated at t=100); keys 1, 2: group 1 (stable, never updated)
    tr = handmade([0, 0, 1, 1, 1, 1, 2, 2, 2, 2], [0, 350, 0, 1, 2, 3, 10, 400, 800, 1200])
    ks = layout(3, [0, 1, 1], [True, False], [[100.0], []])
    ttl = RulesTTL().assign(tr, ks)
    assert ttl[0] == 300.0                    # time-sensitive, no update in the last 300 s
    assert ttl[1] == pytest.approx(300 * 0.92)  # update at 100 s, 250 s before
    assert ttl[2:5].tolist() == [180.0, 180.0, 180.0]  # long tail until 3 earlier requests in 600 s
    assert ttl[5] == 3600.0                   # stable high-frequency
    # key 2's requests are > 180 s apart: each is a (proxy) miss; group 1's run of misses before them:
    # key 1's first request is the only miss among its four, so the run restarts; 10 s: 0, 400 s: 1, 800 s: 2, 1200 s: 3
    assert ttl[6:9].tolist() == [180.0, 180.0, 180.0]
    assert ttl[9] == pytest.approx(180 * 0.75)


def test_multi_factor_formula() -> None:
    ts = [0.0, 1000.0, 3000.0, 3599.0, 3599.5, 3599.6, 3599.7]
    tr = handmade([0, 0, 0, 0, 0, 0, 0], ts)
    ks = layout(1, [0], [True], [[2900.0]], cls="bronze")
    ttl = MultiFactorTTL().assign(tr, ks)
    # at t=1000: rate over 60 s = 1/60, over the 1000 s covered = 2/1000 -> qps_ratio 8.33, factor max(0.3, 0.12)
    # gray: no update yet -> 1; bronze -> 0.7
    assert ttl[1] == pytest.approx(30 * 0.3 * 1.0 * 0.7)
    # at t=3000: 100 s after the update: gray = 100/600
    q = (1 / 60) / (3 / 3000)
    assert ttl[2] == pytest.approx(30 * max(0.3, 1 / q) * (0.8 + 0.2 * 100 / 600) * 0.7)
    assert np.all(ttl > 0)


@pytest.mark.parametrize("spec", ["rules", "multi-factor", "hotness"])
def test_policies_are_causal(spec: str, web07: Trace, tiny_hotness_pt: Path) -> None:
    """Changing the future never changes a past TTL."""
    policy = make_ttl_policy(spec)
    if spec == "hotness":  # a predictor whose output follows its input (the untrained LSTM is nearly constant)
        policy = HotnessTTL(bucket_s=20, predictor=InProcessPredictor(RecentSum(), device="cpu"))
    tr = web07.slice(0, 8000)
    ks = keyspace_for(tr)
    a = apply_ttl_policy(tr, policy, ks).ttls
    rng = np.random.default_rng(0)
    future = tr.keys.copy()
    future[5000:] = rng.integers(0, tr.n_keys, 3000)
    b = apply_ttl_policy(replace(tr, keys=future), policy, ks).ttls
    assert np.array_equal(a[:5000], b[:5000])
    assert not np.array_equal(a[5000:], b[5000:])


class RecentSum(torch.nn.Module):
    """log1p of the last four buckets' counts: a transparent predictor for the tests."""

    seq_len = 16

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log1p(torch.expm1(x[:, -4:]).sum(dim=1))


def test_hotness_ttl_bounded_calibrated_and_backend(web07: Trace, tiny_hotness_pt: Path) -> None:
    pol = HotnessTTL(bucket_s=20, predictor=InProcessPredictor(RecentSum(), device="cpu"))
    tr = web07.slice(0, 10000)
    ttl = pol.assign(tr, keyspace_for(tr))
    assert ttl.min() >= 30.0 and ttl.max() <= 3600.0 and len(np.unique(ttl)) > 10
    # calibration: in each bucket, the geometric mean of the unclipped TTL over the previous bucket's
    # requests is ttl_ref; check it on the raw predictions
    p = np.maximum(pol.predicted(tr), 1e-3)
    b = np.floor((tr.timestamps - tr.timestamps[0]) / 20).astype(int)
    hot = p > np.exp(np.log(p[b == 10]).mean()) * 1.01
    assert np.all(ttl[(b == 11) & hot] >= 300.0)
    assert pol.last_backend == "in_process"
    # the saved TorchScript model.pt path, as the CLI gives it
    out = make_ttl_policy(f"hotness,model={tiny_hotness_pt},bucket_s=20").assign(tr, keyspace_for(tr))
    assert out.shape == (len(tr),)
    with pytest.raises(ConfigError, match="not found"):
        make_ttl_policy("hotness,model=/nonexistent/model.pt").assign(tr, keyspace_for(tr))


def test_qos_multiplier_and_bad_policy_output(web07: Trace) -> None:
    tr = web07.slice(0, 1000)
    gold = replace(tr, meta={**tr.meta, "tenants": ["a"], "tenant_classes": ["gold"]})
    assert np.all(apply_ttl_policy(gold, "fixed:100").ttls == 150.0)
    assert np.all(apply_ttl_policy(gold, "fixed:100", qos=False).ttls == 100.0)

    class Broken:
        name = "broken"

        def assign(self, trace: Trace, keyspace: KeySpace) -> np.ndarray:
            return -np.ones(len(trace))

    with pytest.raises(ConfigError, match="broken"):
        apply_ttl_policy(tr, Broken())
