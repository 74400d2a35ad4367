"""What Redis 7 charges to ``used_memory`` for one string key.

Redis counts every ``zmalloc`` at its jemalloc size class, so a key costs the rounded sizes of the
allocations it owns (64-bit build, Redis 7.0 object layout)::

    dictEntry (key*, val*, next*)              je(24)
    key sds: sdshdr5/8/16 + name + '\\0'         je(hdr(klen) + klen + 1)   hdr 1 if klen < 32, 3 < 256, 5 < 64 Ki, else 9
    value, vlen <= 44 (EMBSTR: robj+sdshdr8)   je(16 + 3 + vlen + 1)
    value, vlen  > 44 (RAW: robj, then sds)    je(16) + je(hdr(vlen) + vlen + 1)   hdr 3 < 256, 5 < 64 Ki, else 9
    main hash-table slot                       BUCKET_BYTES (8-byte pointer x ~1.5 slots/key, amortised)
    with a TTL: expires dictEntry + its slot   je(24) + BUCKET_BYTES

``je(n)`` rounds up to jemalloc's size classes. Redis's bundled jemalloc is built with lg-quantum 3
(classes 8, 16, 24, ... 64, then four per doubling); Debian's and most distributions' system jemalloc
use the default quantum 16 (8, 16, 32, 48, ... 128, then four per doubling), which is what
``redis-server`` 7.0.15 from Debian measures (``lg_quantum=4``, the default here).

Checked against that redis-server (20,000 SETs each, ``used_memory`` difference per key, vs this
formula): key 20 B + value 10 B: 109.7 vs 109; value 40 B: 141.1 vs 141; 100 B: 205.1 vs 205;
1000 B: 1117.1 vs 1117; 4096 B: 5213.1 vs 5213; key 48 B + 4096 B with TTL: 5296.8 vs 5290.
Approximated: the hash tables are charged per key at their average load (Redis grows
them in powers of two, so the true per-key share moves between 8 and 16 bytes); integer-encoded and
shared-integer values are charged as strings.

Numba's on-disk cache is keyed on each function's own source file: after editing this module,
touch ``kernel.py`` (or delete ``cachetuner/sim/__pycache__``) so the kernel recompiles with it.
"""

from __future__ import annotations

import numba as nb

DICT_ENTRY_BYTES = 24
ROBJ_BYTES = 16
BUCKET_BYTES = 12
DEFAULT_LG_QUANTUM = 4


@nb.njit(cache=True, nogil=True)
def jemalloc_size(n: int, lg_quantum: int = DEFAULT_LG_QUANTUM) -> int:
    """Smallest jemalloc size class >= ``n`` (quantum ``2**lg_quantum``, four classes per doubling)."""
    if n <= 8:
        return 8
    q = 1 << lg_quantum
    small = q << 2  # multiples of the quantum up to 4 quanta (64 or 128)
    if n <= small:
        return (n + q - 1) & ~(q - 1)
    lg = 0
    m = n - 1
    while m > 1:
        m >>= 1
        lg += 1
    delta = 1 << (lg - 2)
    return (n + delta - 1) & ~(delta - 1)


@nb.njit(cache=True, nogil=True)
def _sds_header(length: int, allow_type5: bool) -> int:
    if allow_type5 and length < 32:
        return 1
    if length < 256:
        return 3
    if length < 65536:
        return 5
    return 9


@nb.njit(cache=True, nogil=True)
def redis7_key_bytes(key_len: int, value_len: int, has_ttl: bool, lg_quantum: int = DEFAULT_LG_QUANTUM) -> int:
    """Bytes a string key adds to ``used_memory`` (formula in the module docstring)."""
    q = lg_quantum
    total = jemalloc_size(DICT_ENTRY_BYTES, q) + BUCKET_BYTES
    total += jemalloc_size(_sds_header(key_len, True) + key_len + 1, q)
    if value_len <= 44:
        total += jemalloc_size(ROBJ_BYTES + 3 + value_len + 1, q)
    else:
        total += jemalloc_size(ROBJ_BYTES, q) + jemalloc_size(_sds_header(value_len, False) + value_len + 1, q)
    if has_ttl:
        total += jemalloc_size(DICT_ENTRY_BYTES, q) + BUCKET_BYTES
    return total


@nb.njit(cache=True, nogil=True)
def key_charge(flat_overhead: int, key_len: int, value_len: int, has_ttl: bool, lg_quantum: int) -> int:
    """Memory charged for one key: the Redis 7 formula when ``flat_overhead < 0``, else value + flat."""
    if flat_overhead < 0:
        return redis7_key_bytes(key_len, value_len, has_ttl, lg_quantum)
    return value_len + flat_overhead
