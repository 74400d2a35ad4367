"""libCacheSim's request ops (``req_op_e``) and how they fold into GET / SET / DELETE.

One table serves the binary readers that store op codes (``lcs`` v2+, ``twitter-bin``) and the
op words of the generic ``csv`` reader, so the three agree on what a ``cas`` or ``incr`` is:
anything that writes the value is a SET (the cache then holds the new value, of the logged size).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from cachetuner.errors import TraceError
from cachetuner.traces.trace import Op

#: libCacheSim ``req_op_e`` code -> (name, our op). OP_NOP (0), OP_INVALID (255) and codes not listed
#: are rejected: a request that does nothing cannot be replayed, and guessing would skew hit ratios.
LIBCACHESIM_OPS: dict[int, tuple[str, Op]] = {
    1: ("get", Op.GET),
    2: ("gets", Op.GET),
    3: ("set", Op.SET),
    4: ("add", Op.SET),
    5: ("cas", Op.SET),
    6: ("replace", Op.SET),
    7: ("append", Op.SET),
    8: ("prepend", Op.SET),
    9: ("delete", Op.DELETE),
    10: ("incr", Op.SET),
    11: ("decr", Op.SET),
    12: ("read", Op.GET),
    13: ("write", Op.SET),
    14: ("update", Op.SET),
}
#: The same ops as words (lower case), plus ``del``; for text traces.
OP_WORDS: dict[bytes, Op] = {name.encode(): op for name, op in LIBCACHESIM_OPS.values()} | {b"del": Op.DELETE}

_INVALID = 255
_LOOKUP = np.full(256, _INVALID, dtype=np.uint8)
_LOOKUP[list(LIBCACHESIM_OPS)] = [op for _, op in LIBCACHESIM_OPS.values()]


def map_op_codes(path: Path, codes: np.ndarray, *, first_byte: int, record_bytes: int) -> np.ndarray:
    """Op codes (uint8, one per record) -> :class:`Op` values in one table lookup.

    An unknown code raises a one-line TraceError naming the record (1-based) and its byte offset,
    computed from ``first_byte`` (offset of record 1) and ``record_bytes``.
    """
    ops = _LOOKUP[codes]
    bad = np.flatnonzero(ops == _INVALID)
    if len(bad):
        i = int(bad[0])
        valid = ", ".join(f"{code} {name}" for code, (name, _) in LIBCACHESIM_OPS.items())
        raise TraceError(
            f"{path}: record {i + 1} (byte offset {first_byte + i * record_bytes}): "
            f"unknown op code {int(codes[i])} (valid: {valid})"
        )
    return ops
