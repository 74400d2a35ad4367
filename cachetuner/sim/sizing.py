"""Parse cache sizes the way Redis and people write them, including a share of the working set."""

from __future__ import annotations

import re
from fractions import Fraction

import numpy as np

from cachetuner.errors import ConfigError
from cachetuner.sim.memory import key_charge
from cachetuner.sim.params import MAX_BYTES, SimParams
from cachetuner.traces.trace import Trace

# Redis's own convention (redis.conf "Units"): k/m/g are powers of 1000, kb/mb/gb powers of 1024;
# KiB/MiB/GiB are accepted as the unambiguous spelling of the latter.
_UNITS = {
    "": 1, "b": 1,
    "k": 1000, "m": 1000**2, "g": 1000**3, "t": 1000**4,
    "kb": 1024, "mb": 1024**2, "gb": 1024**3, "tb": 1024**4,
    "kib": 1024, "mib": 1024**2, "gib": 1024**3, "tib": 1024**4,
}  # fmt: skip
_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]*)\s*$")


def working_set_charge(trace: Trace, params: SimParams) -> int:
    """Bytes the trace's distinct keys would occupy in Redis at their last-seen size (memory model)."""
    last = np.zeros(trace.n_keys, dtype=np.int64)
    last[trace.keys] = trace.sizes
    seen = np.zeros(trace.n_keys, dtype=bool)
    seen[trace.keys] = True
    has_ttl = np.zeros(trace.n_keys, dtype=bool)
    has_ttl[trace.keys[trace.ttls > 0]] = True
    flat = params.memory.per_key_overhead
    if flat is not None:
        return int(last[seen].sum() + flat * int(seen.sum()))
    kb = np.asarray(trace.key_bytes, dtype=np.int64)
    return int(sum(key_charge(-1, int(kb[k]), int(last[k]), bool(has_ttl[k]), params.memory.jemalloc_lg_quantum) for k in np.flatnonzero(seen)))


def full_size(trace: Trace, params: SimParams) -> int:
    """``maxmemory`` that holds every key of ``trace`` at its last size: the keys' charge plus the empty server's
    fixed memory (``params.fixed_bytes``). The env's working set, which its bounds are fractions of."""
    return int(working_set_charge(trace, params) + params.fixed_bytes)


def parse_size(text: str | int, trace: Trace | None = None, params: SimParams | None = None, *, what: str = "size") -> int:
    """``"64mb"``, ``"1.5GiB"``, ``"500000"`` or ``"20%"`` to bytes.

    A percentage sizes the cache to hold that share of the trace's working set as Redis would
    store it (memory model of ``params``), on top of the empty server's base memory and the client
    buffers, so ``100%`` fits every key (rounded down to a whole byte). An explicit size must come to
    a whole number of bytes (``1.5`` or ``0.1kb`` is refused, not truncated: a silently rounded size
    is a different experiment) and at most :data:`~cachetuner.sim.params.MAX_BYTES`.
    """
    if isinstance(text, int):
        return _checked_bytes(text, what, str(text))
    s = str(text).strip()
    if s.endswith("%"):
        if trace is None:
            raise ConfigError(f"{what}={s!r}: a percentage needs a trace")
        pct = _percentage(s, what)
        params = params or SimParams()
        return _checked_bytes(int(params.fixed_bytes + pct / 100.0 * working_set_charge(trace, params)), what, s)
    m = _SIZE.match(s)
    if not m or m.group(2).lower() not in _UNITS:
        raise ConfigError(
            f"{what}={s!r}: expected bytes with an optional unit (k, kb, mb, gb, KiB, MiB, GiB) or a percentage like 20%"
        )
    n = Fraction(m.group(1)) * _UNITS[m.group(2).lower()]  # exact: "1.5GiB" is 1610612736 bytes, no float rounding
    if n.denominator != 1:
        whole = int(n)
        raise ConfigError(f"{what}={s!r} is {float(n):.10g} bytes, not a whole number; give whole bytes, e.g. {whole} or {whole + 1}")
    return _checked_bytes(int(n), what, s)


def check_size(text: str, *, what: str = "size") -> None:
    """Refuse a size :func:`parse_size` would refuse, before any trace is read (a percentage is checked as a number in
    (0, 1000]; what it comes to needs the trace)."""
    s = str(text).strip()
    if s.endswith("%"):
        _percentage(s, what)
    else:
        parse_size(s, what=what)


def _percentage(s: str, what: str) -> float:
    try:
        pct = float(s[:-1])
    except ValueError:
        raise ConfigError(f"{what}={s!r}: expected a number before '%'") from None
    if not 0 < pct <= 1000:
        raise ConfigError(f"{what}={s!r}: percentage must be in (0, 1000]")
    return pct


def _checked_bytes(n: int, what: str, text: str) -> int:
    """``n`` if it is a byte count the simulator can hold; a one-line :class:`ConfigError` naming ``what`` otherwise.
    Why: the kernel keeps bytes in int64, and a larger figure would end in an OverflowError traceback."""
    if n < 0:
        raise ConfigError(f"{what}={text!r}: a size cannot be negative")
    if n > MAX_BYTES:
        raise ConfigError(f"{what}={text!r} is {n:,} bytes, more than the simulator's limit of 2^60 bytes (1 EiB)")
    return n
