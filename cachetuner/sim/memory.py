"""What Redis 7 charges to ``used_memory`` for one string key.

Redis counts every ``zmalloc`` at its jemalloc size class, so a key costs the rounded sizes of the
allocations it owns (64-bit build, Redis 7.0 object layout, jemalloc built with lg-quantum 3)::

    dictEntry (key*, val*, next*)              je(24)                     = 24
    key sds: sdshdr5/8/16 + name + '\\0'         je(hdr(klen) + klen + 1)   hdr 1 if klen < 32, 3 < 256, 5 < 64 Ki, else 9
    value, vlen <= 44 (EMBSTR: robj+sdshdr8)   je(16 + 3 + vlen + 1)
    value, vlen  > 44 (RAW: robj, then sds)    je(16) + je(hdr(vlen) + vlen + 1)   hdr 3 < 256, 5 < 64 Ki, else 9
    main hash-table slot                       BUCKET_BYTES (8-byte pointer x ~1.5 slots/key, amortised)
    with a TTL: expires dictEntry + its slot   je(24) + BUCKET_BYTES

``je(n)`` rounds up to jemalloc's size classes: multiples of 8 up to 64, then four classes per
power of two. Approximated: the hash tables are charged per key at their average load (Redis grows
them in powers of two, so the true per-key share moves between 8 and 16 bytes); integer-encoded and
shared-integer values are charged as strings.
"""

from __future__ import annotations

import numba as nb

DICT_ENTRY_BYTES = 24
ROBJ_BYTES = 16
BUCKET_BYTES = 12


@nb.njit(cache=True, nogil=True)
def jemalloc_size(n: int) -> int:
    """Smallest jemalloc size class >= ``n`` (lg-quantum 3, four classes per doubling)."""
    if n <= 8:
        return 8
    if n <= 64:
        return (n + 7) & ~7
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
def redis7_key_bytes(key_len: int, value_len: int, has_ttl: bool) -> int:
    """Bytes a string key adds to ``used_memory`` (formula in the module docstring)."""
    total = jemalloc_size(DICT_ENTRY_BYTES) + BUCKET_BYTES
    total += jemalloc_size(_sds_header(key_len, True) + key_len + 1)
    if value_len <= 44:
        total += jemalloc_size(ROBJ_BYTES + 3 + value_len + 1)
    else:
        total += jemalloc_size(ROBJ_BYTES) + jemalloc_size(_sds_header(value_len, False) + value_len + 1)
    if has_ttl:
        total += jemalloc_size(DICT_ENTRY_BYTES) + BUCKET_BYTES
    return total


@nb.njit(cache=True, nogil=True)
def key_charge(flat_overhead: int, key_len: int, value_len: int, has_ttl: bool) -> int:
    """Memory charged for one key: the Redis 7 formula when ``flat_overhead < 0``, else value + flat."""
    if flat_overhead < 0:
        return redis7_key_bytes(key_len, value_len, has_ttl)
    return value_len + flat_overhead
