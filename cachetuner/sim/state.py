"""The simulator's whole mutable state as flat numpy arrays (what the compiled kernel reads and writes).

Keeping state in one named tuple of arrays makes :meth:`TieredCacheSim.clone` a plain deep copy and
lets numba compile the kernel once for every policy. Which index of which array holds what (the
``I_*``, ``C_*``, ``KV_*``, ``P_*`` ... slots) is defined in :mod:`cachetuner.sim.slots`.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numba as nb
import numpy as np
from numba.core import cgutils, imputils, types
from numba.core.datamodel import models
from numba.core.extending import intrinsic, lower_getattr_generic, register_model
from numba.core.typing.templates import AttributeTemplate, infer_getattr
from numba.experimental import structref

from cachetuner.metrics import LATENCY_BUCKETS_S
from cachetuner.sim.slots import (
    EVPOOL_SIZE,
    I_HEAD,
    I_L2HEAD,
    I_L2TAIL,
    I_TAIL,
    KV_DPOS,
    KV_HNEXT,
    KV_NEXT,
    KV_PREV,
    KV_VPOS,
    N_CNT,
    N_FCNT,
    N_FST,
    N_IST,
    N_KV,
    N_PARAMS,
    SAMPLE_SCRATCH,
)

QUANTILE_TABLE_SIZE = 1024  # 8 KiB: stays in L1 next to the hot state
CACHE_LINE = 64


@functools.lru_cache(maxsize=16)
def lognormal_table(sigma: float, size: int = QUANTILE_TABLE_SIZE) -> np.ndarray:
    """``exp(sigma * z)`` at the mid-quantiles of the standard normal: drawing a uniform index gives
    a lognormal(0, sigma) variate discretised to ``size`` levels (finer than any latency bucket),
    one random number and one load per draw instead of Box-Muller plus exp."""
    from scipy.stats import norm

    z = norm.ppf((np.arange(size) + 0.5) / size)
    table = np.exp(sigma * z)
    table.flags.writeable = False
    return table


class KState(NamedTuple):
    """Per-key arrays (length ``n_keys``), per-client arrays, the eviction pool and scalars."""

    kv: np.ndarray        # int64[n_keys, 8]: per-key fields KV_* (one 64-byte row per key)
    dkeys: np.ndarray     # int64: dense list of resident keys (swap-remove) for O(1) sampling
    vkeys: np.ndarray     # int64: dense list of resident keys with a TTL (Redis db->expires)
    expire: np.ndarray    # float64: absolute expire time of a resident key with a TTL, else 0 (kept 0, never written, for keys without one)
    l2in: np.ndarray      # int8: key present in L2
    l2size: np.ndarray    # int64
    l2exp: np.ndarray     # float64
    l2prev: np.ndarray    # int64
    l2next: np.ndarray    # int64
    cl_last: np.ndarray   # float64: last interaction per client
    cl_conn: np.ndarray   # int8: connected flag per client
    cl_cdf: np.ndarray    # float64: cumulative activity distribution of clients
    pool_key: np.ndarray  # int64[EVPOOL_SIZE]: eviction pool, -1 = empty
    pool_idle: np.ndarray  # int64[EVPOOL_SIZE]
    ist: np.ndarray       # int64 scalars (I_*)
    fst: np.ndarray       # float64 scalars (F_*)
    rng: np.ndarray       # uint64[1]: xorshift64* state
    cnt: np.ndarray       # int64 cumulative counters (C_*)
    fcnt: np.ndarray      # float64 cumulative counters (FC_*)
    hist: np.ndarray      # int64 cumulative latency histogram, len(bounds) + 1
    bounds: np.ndarray    # float64 histogram upper bounds, seconds
    ipar: np.ndarray      # int64 parameters (slots.P_*)
    fpar: np.ndarray      # float64 parameters (slots.Q_*)
    jit_tab: np.ndarray   # float64: lognormal(0, jitter_sigma) factors at evenly spaced quantiles
    miss_tab: np.ndarray  # float64: lognormal(0, miss_sigma) factors at evenly spaced quantiles
    hhash: np.ndarray     # int64: per-key hash (Redis: siphash with a per-process random seed), for
    #                       inspection: the kernel recomputes it from ``hsalt`` (no cache miss)
    hsalt: np.ndarray     # uint64[1]: salt of key_hashes()
    klen: np.ndarray      # int64: key-name bytes per key (read by the Redis 7 memory formula only)
    hbuckets: np.ndarray  # int64: bucket heads of the main dict, first ist[I_HSIZE] used, -1 = empty
    hsamp: np.ndarray     # int64[SAMPLE_SCRATCH]: dictGetSomeKeys output
    hbits: np.ndarray     # uint64: bit b set <=> hbuckets[b] >= 0 (lets a walk skip a run of empty buckets at once)


@structref.register
class KernelStateType(types.StructRef):
    """numba type of :class:`KernelState`."""

    def preprocess_fields(self, fields):  # type: ignore[no-untyped-def]
        return tuple((name, types.unliteral(typ)) for name, typ in fields)


class KernelState(structref.StructRefProxy):
    """The same arrays as a :class:`KState`, behind one pointer for the compiled kernel.

    Why not pass the named tuple: numba passes a tuple of two dozen arrays to every non-inlined helper as
    ~200 flattened arguments (about 1 us a call); a StructRef is one reference-counted pointer.
    The arrays are shared, not copied, so Python reads the :class:`KState` and sees kernel writes.
    """


structref.define_proxy(KernelState, KernelStateType, list(KState._fields))


@intrinsic
def _unmanaged(typingctx, arr):  # type: ignore[no-untyped-def]
    """A view of ``arr``'s data with no reference count (meminfo NULL)."""

    def codegen(context, builder, sig, args):  # type: ignore[no-untyped-def]
        src = context.make_array(sig.args[0])(context, builder, args[0])
        dst = context.make_array(sig.return_type)(context, builder)
        context.populate_array(dst, data=src.data, shape=src.shape, strides=src.strides,
                               itemsize=src.itemsize, meminfo=None)
        return dst._getvalue()

    return arr(arr), codegen


@nb.njit(cache=True)
def _make_kernel(kv, dkeys, vkeys, expire, l2in, l2size, l2exp, l2prev, l2next, cl_last, cl_conn, cl_cdf, pool_key, pool_idle, ist, fst, rng, cnt, fcnt, hist, bounds, ipar, fpar, jit_tab, miss_tab, hhash, hsalt, klen, hbuckets, hsamp, hbits):  # type: ignore[no-untyped-def]
    return KernelState(
        _unmanaged(kv), _unmanaged(dkeys), _unmanaged(vkeys), _unmanaged(expire),
        _unmanaged(l2in), _unmanaged(l2size), _unmanaged(l2exp), _unmanaged(l2prev),
        _unmanaged(l2next), _unmanaged(cl_last), _unmanaged(cl_conn), _unmanaged(cl_cdf),
        _unmanaged(pool_key), _unmanaged(pool_idle), _unmanaged(ist), _unmanaged(fst),
        _unmanaged(rng), _unmanaged(cnt), _unmanaged(fcnt), _unmanaged(hist),
        _unmanaged(bounds), _unmanaged(ipar), _unmanaged(fpar), _unmanaged(jit_tab),
        _unmanaged(miss_tab), _unmanaged(hhash), _unmanaged(hsalt), _unmanaged(klen),
        _unmanaged(hbuckets), _unmanaged(hsamp), _unmanaged(hbits),
    )


def to_kernel(s: KState) -> KernelState:
    """Wrap ``s``'s arrays (shared, not copied) for the kernel.

    The kernel's arrays carry no reference count: each read of a field of a reference-counted
    StructRef costs an atomic increment and decrement, which were most of the kernel's time
    (72 % of its samples under ``perf`` on a 2 % cache). The returned object keeps ``s`` alive,
    so the data cannot be freed under the kernel.
    """
    ks = _make_kernel(*s)
    ks._owner = s
    return ks


def kernel_array(a: np.ndarray, start: int, stop: int, whole: bool, dtype: type) -> np.ndarray:
    """The kernel's view of a trace array ``a[start:stop]``: no copy when it already has the dtype and layout."""
    if whole and a.dtype == dtype and a.flags.c_contiguous:
        return a
    return np.ascontiguousarray(a[start:stop], dtype=dtype)


def cache_aligned(a: np.ndarray) -> np.ndarray:
    """A copy of ``a`` whose data starts on a 64-byte boundary.

    numpy aligns to 16 bytes, so without this each 64-byte ``kv`` row straddles two cache lines: a
    chain walk (``KV_HNEXT``) and the candidate's score (``KV_LRU``) then cost two misses, not one.
    """
    buf = np.empty(a.nbytes + CACHE_LINE, dtype=np.uint8)
    off = -buf.ctypes.data % CACHE_LINE
    out = buf[off : off + a.nbytes].view(a.dtype).reshape(a.shape)
    out[...] = a
    return out


def key_hashes(n: int, salt: int) -> np.ndarray:
    """A seeded random 64-bit hash per key id (splitmix64 of ``id ^ salt``), as int64 bits.

    Redis hashes key names with siphash under a random per-process seed, so which keys share or
    neighbour a bucket is random but fixed for the keys' lifetime; this reproduces that.
    """
    with np.errstate(over="ignore"):
        z = np.arange(n, dtype=np.uint64) ^ np.uint64(salt)
        z += np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z ^= z >> np.uint64(31)
    return z.view(np.int64)


def new_state(n_keys: int, key_bytes: np.ndarray, n_clients: int, activity_skew: float, seed: int) -> KState:
    """An empty cache: no resident keys, no clients connected yet, RNG seeded from ``seed``."""
    n = max(int(n_keys), 1)
    minus = np.full(n, -1, dtype=np.int64)
    weights = 1.0 / np.arange(1, n_clients + 1, dtype=np.float64) ** activity_skew
    cdf = np.cumsum(weights / weights.sum())
    cdf[-1] = 1.0
    ist = np.zeros(N_IST, dtype=np.int64)
    ist[[I_HEAD, I_TAIL, I_L2HEAD, I_L2TAIL]] = -1
    # splitmix64 of the seed so that nearby seeds give unrelated streams; never zero (xorshift).
    z = (int(seed) + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    z ^= z >> 31
    kv = np.zeros((n, N_KV), dtype=np.int64)
    kv[:, [KV_DPOS, KV_VPOS, KV_PREV, KV_NEXT]] = -1
    kb = np.asarray(key_bytes, dtype=np.int64)
    kv[:, KV_HNEXT] = -1
    klen = np.zeros(n, dtype=np.int64)
    klen[: len(kb)] = kb
    n_buckets = max(4, 1 << int(n).bit_length())
    return KState(
        kv=cache_aligned(kv),
        dkeys=np.zeros(n, dtype=np.int64),
        vkeys=np.zeros(n, dtype=np.int64),
        expire=np.zeros(n, dtype=np.float64),
        l2in=np.zeros(n, dtype=np.int8),
        l2size=np.zeros(n, dtype=np.int64),
        l2exp=np.zeros(n, dtype=np.float64),
        l2prev=minus.copy(),
        l2next=minus.copy(),
        cl_last=np.zeros(n_clients, dtype=np.float64),
        cl_conn=np.zeros(n_clients, dtype=np.int8),
        cl_cdf=cdf,
        pool_key=np.full(EVPOOL_SIZE, -1, dtype=np.int64),
        pool_idle=np.zeros(EVPOOL_SIZE, dtype=np.int64),
        ist=ist,
        fst=np.zeros(N_FST, dtype=np.float64),
        rng=np.array([z or 1], dtype=np.uint64),
        cnt=np.zeros(N_CNT, dtype=np.int64),
        fcnt=np.zeros(N_FCNT, dtype=np.float64),
        hist=np.zeros(len(LATENCY_BUCKETS_S) + 1, dtype=np.int64),
        bounds=np.asarray(LATENCY_BUCKETS_S, dtype=np.float64),
        ipar=np.zeros(N_PARAMS, dtype=np.int64),
        fpar=np.zeros(N_PARAMS, dtype=np.float64),
        jit_tab=np.ones(QUANTILE_TABLE_SIZE, dtype=np.float64),
        miss_tab=np.ones(QUANTILE_TABLE_SIZE, dtype=np.float64),
        hhash=key_hashes(n, z),
        hsalt=np.array([z], dtype=np.uint64),
        klen=klen,
        hbuckets=np.full(n_buckets, -1, dtype=np.int64),
        hsamp=np.zeros(SAMPLE_SCRATCH, dtype=np.int64),
        hbits=np.zeros((n_buckets + 63) // 64, dtype=np.uint64),
    )


@functools.cache
def state_bytes_per_key() -> int:
    """Bytes :func:`new_state` allocates per key id (its per-key arrays; the rest is a few KiB), measured on two
    small states rather than written out, so an array added to the state is counted. Both sizes are powers of
    two, so the hash table's share is its worst case (twice the keys, rounded up to a power of two)."""
    def total(n: int) -> int:
        return sum(a.nbytes for a in new_state(n, np.zeros(n, dtype=np.int64), 1, 1.0, 0))

    return (total(2048) - total(1024)) // 1024


def copy_state(s: KState) -> KState:
    """Deep copy (every array copied; ``kv`` stays cache-line aligned)."""
    return KState(*(cache_aligned(a) if name == "kv" else a.copy() for name, a in zip(KState._fields, s, strict=True)))


class KernelViewType(types.Type):
    """A borrowed, reference-count-free pointer to a :class:`KernelState`'s fields, for inside the kernel.

    Passing the StructRef itself to a helper (inlined or not) costs an atomic increment and decrement
    of its reference count; this view is a plain pointer. Valid only while the entry point that
    made it (:func:`borrow`) holds the state.
    """

    def __init__(self, struct_type: types.StructRef) -> None:
        self.struct_type = struct_type
        super().__init__(name=f"KernelView({struct_type})")


@register_model(KernelViewType)
class _KernelViewModel(models.PrimitiveModel):
    def __init__(self, dmm, fe_type):  # type: ignore[no-untyped-def]
        data = dmm.lookup(fe_type.struct_type.get_data_type()).get_value_type()
        super().__init__(dmm, fe_type, data.as_pointer())


@intrinsic
def borrow(typingctx, state):  # type: ignore[no-untyped-def]
    """The :class:`KernelViewType` view of a :class:`KernelState` (its payload pointer)."""

    def codegen(context, builder, sig, args):  # type: ignore[no-untyped-def]
        return structref._Utils(context, builder, sig.args[0]).get_data_pointer(args[0])

    return KernelViewType(state)(state), codegen


@infer_getattr
class _KernelViewAttribute(AttributeTemplate):
    key = KernelViewType

    def generic_resolve(self, typ, attr):  # type: ignore[no-untyped-def]
        return typ.struct_type.field_dict.get(attr)


@lower_getattr_generic(KernelViewType)
def _kernel_view_getattr(context, builder, typ, val, attr):  # type: ignore[no-untyped-def]
    data = cgutils.create_struct_proxy(typ.struct_type.get_data_type())(context, builder, ref=val)
    return imputils.impl_ret_borrowed(context, builder, typ.struct_type.field_dict[attr], getattr(data, attr))
