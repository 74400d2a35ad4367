"""The replayer's parts without a Redis (fast): RESP encoding, pacing, batch composition, metrics."""

from __future__ import annotations

import hiredis
import numpy as np
from prometheus_client import generate_latest

from cachetuner.live.replay_encoding import KEY_PREFIX, CommandEncoder, StreamEncoder, is_oom
from cachetuner.live.replay_metrics import BackendLatency, ReplayMetrics
from cachetuner.live.replay_schedule import BatchBuilder, Pacer
from cachetuner.traces.trace import Op


def _parse(*cmds: bytes) -> list:
    r = hiredis.Reader()
    r.feed(b"".join(cmds))
    out = []
    while (x := r.gets()) is not False:
        out.append(x)
    return out


def test_encoder_builds_valid_resp() -> None:
    enc = CommandEncoder(5)
    assert KEY_PREFIX == "ct:"
    assert _parse(enc.get(3), enc.set(4, 3, 0.0), enc.set(4, 2, 1.5), enc.delete(0)) == [
        [b"GET", b"ct:3"], [b"SET", b"ct:4", b"xxx"], [b"SET", b"ct:4", b"xx", b"PX", b"1500"], [b"DEL", b"ct:0"],
    ]  # fmt: skip
    assert enc.get_table[3] == enc.get(3) and enc.get_table[2] is None
    encode = enc.request_encoder([int(Op.GET), int(Op.SET), int(Op.DELETE)], [1, 2, 3], [0.0, 0.0, 0.0])
    assert _parse(encode(0, 1), encode(1, 1), encode(2, 1)) == [[b"GET", b"ct:1"], [b"SET", b"ct:1", b"xx"], [b"DEL", b"ct:1"]]
    xadd = StreamEncoder("p:", 100, 0.5).entry(7, 64, int(Op.GET), 12.5, 0.0, 1)
    assert _parse(xadd) == [[b"XADD", b"p:sampled", b"MAXLEN", b"~", b"100", b"*",
                             b"k", b"7", b"s", b"64", b"o", b"0", b"t", b"12.500000", b"ttl", b"0", b"h", b"1", b"r", b"0.5"]]  # fmt: skip
    assert is_oom(hiredis.ReplyError("OOM command not allowed")) and not is_oom(hiredis.ReplyError("ERR x")) and not is_oom(None)


def test_pacer_rate_and_timestamps() -> None:
    ts = np.array([10.0, 10.5, 12.0])
    assert Pacer(None, None, ts, 0, 100.0).flat_out
    assert Pacer(4.0, None, ts, 0, 100.0).due(8, 0) == 102.0
    p = Pacer(None, 2.0, ts, 1, 100.0)
    assert p.due(0, 2) == 100.75 and p.due(0, 3) == 100.75  # past the end: the last timestamp
    p.wrap()
    assert p.due(0, 1) == 100.75  # the second pass continues where the first ended


def _builder(keys: list[int], **kw) -> BatchBuilder:  # noqa: ANN003
    enc = CommandEncoder(max(keys) + 1)
    encode = enc.request_encoder([int(Op.GET)] * len(keys), [1] * len(keys), [0.0] * len(keys))
    args = {"exact_order": False, "all_gets": True, "limit": None, **kw}
    return BatchBuilder(keys, 0, args.pop("limit"), get_table=enc.get_table, encode_get=enc.get, encode_request=encode, **args)


def test_batches_defer_repeated_keys_in_trace_order() -> None:
    b = _builder([1, 2, 1, 3, 1, 2])
    cmds: list[bytes] = []
    assert b.fill(cmds, 10, None) == ([0, 1, 3], {1, 2, 3}) and len(cmds) == 3
    assert b.fill([], 10, None)[0] == [2, 5]  # deferred first, in trace order, one per key
    assert b.fill([], 10, None)[0] == [4] and b.at_end()
    b = _builder([1, 2, 1, 3], exact_order=True)
    assert b.fill([], 10, None)[0] == [0, 1]  # cut before the repeated key
    assert b.fill([], 10, None)[0] == [2, 3]
    b = _builder([1, 2, 3, 4], limit=3)
    assert b.fill([], 2, {2})[0] == [0, 2]  # key 2 is in flight: deferred
    assert not b.limit_reached() and b.fill([], 2, None)[0] == [1] and b.limit_reached()


def test_metrics_exposition_and_backend_draws() -> None:
    m = ReplayMetrics()
    m.counters.add(3, 1, 0, 2, 1, 1, 0, 0, 300, 200)
    m.latency.observe_n(0.001, 2)
    m.latency.observe_many([0.5])
    text = generate_latest(m.registry).decode()
    for line in ('cachetuner_requests_total{op="get"} 3.0', "cachetuner_sets_total 2.0", "cachetuner_hit_bytes_total 200.0",
                 "cachetuner_request_latency_seconds_count 3.0"):  # fmt: skip
        assert line in text
    assert 0 < m.latency.quantile_ms(0.5) <= 1.0
    a, b = BackendLatency(900.0, 0.6, 1), BackendLatency(900.0, 0.6, 1)
    assert a.draw(3) + a.draw(10) == b.draw(13)  # one block of draws, handed out in order
    assert BackendLatency(10.0, 0.0, 0).draw(2) == [0.01, 0.01]
