"""What every part of the kernel shares: compile options, the random stream, ``used_memory``.

All randomness comes from a xorshift64* generator whose state lives in ``KState.rng``, so a run is a
pure function of the seed and :meth:`TieredCacheSim.clone` copies the random stream too.
"""

from __future__ import annotations

from typing import Any

import numba as nb
import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

from cachetuner.sim.slots import I_DATA, I_NCONN, P_BASE, P_CLIENT_BUF

_U11 = np.uint64(11)
_U12 = np.uint64(12)
_U25 = np.uint64(25)
_U27 = np.uint64(27)
_UMUL = np.uint64(2685821657736338717)
_INV53 = 1.0 / 9007199254740992.0

#: numba options of every kernel function. ``cache=True``: compiled code is kept in ``__pycache__``;
#: numba keys that cache on each function's own source file, so after editing a module that others
#: import from, clear it (``find cachetuner -name '*.nbi' -o -name '*.nbc' | xargs rm -f``).
#: ``_nrt=False``: no reference counting. The kernel's arrays are unmanaged views (state.to_kernel),
#: so every incref / decref numba would emit is a call that does nothing: a dozen per eviction.
#: So the kernel never allocates (numba refuses to compile an allocation without it). Only the
#: entry points that Python calls with a :class:`~cachetuner.sim.state.KernelState` (``_ENTRY``)
#: keep it: they open the StructRef (state.borrow) and hand the view to a ``_JIT`` function.
#: Typed ``dict[str, Any]``: numba's stubs type each ``njit`` keyword separately (and do not know
#: ``_nrt``), so a ``**`` of a narrower dict matches none of its overloads.
_JIT: dict[str, Any] = dict(cache=True, nogil=True, _nrt=False)
_ENTRY: dict[str, Any] = dict(cache=True, nogil=True, _nrt=True)
_INLINE: dict[str, Any] = dict(cache=True, nogil=True, inline="always")


# ----------------------------------------------------------------------------- random numbers
@nb.njit(**_INLINE)
def rng_next(rng):
    """xorshift64* (Vigna): 64 random bits."""
    x = rng[0]
    x ^= x >> _U12
    x ^= x << _U25
    x ^= x >> _U27
    rng[0] = x
    return x * _UMUL


@nb.njit(**_INLINE)
def rng_uniform(rng):
    """Uniform double in [0, 1)."""
    return float(rng_next(rng) >> _U11) * _INV53


@nb.njit(**_INLINE)
def rng_below(rng, n):
    """Uniform integer in [0, n)."""
    return int(rng_uniform(rng) * n)


@nb.njit(**_INLINE)
def below_shift(n):
    """For :func:`rng_below_by`: ``64 - log2(n)`` when ``n`` is a power of two from 2 to 2**53, else -1."""
    m = 1
    while m <= 53:
        if n == 1 << m:
            return 64 - m
        m += 1
    return -1


@nb.njit(**_INLINE)
def rng_below_by(rng, n, shift):
    """:func:`rng_below` (the same draw and value), by one shift when ``shift = below_shift(n) >= 0``.

    Exact: ``(x >> 11) * 2**-53 * 2**m`` only moves the exponent of an exactly represented integer,
    so truncating it is ``x >> (64 - m)``. Saves a float round trip per draw from a quantile table.
    """
    if shift >= 0:
        return np.int64(rng_next(rng) >> np.uint64(shift))
    return np.int64(rng_uniform(rng) * n)


# ----------------------------------------------------------------------------- memory
@nb.njit(**_INLINE)
def used_memory(S):
    """Redis used_memory: base + keys + connected clients' buffers."""
    return S.ipar[P_BASE] + S.ist[I_DATA] + S.ist[I_NCONN] * S.ipar[P_CLIENT_BUF]


# ----------------------------------------------------------------------------- memory hints
@intrinsic
def prefetch_row(typingctx, arr, row):  # type: ignore[no-untyped-def]
    """Start loading row ``row`` of the 2-D ``arr`` into the cache (``llvm.prefetch``); no effect
    on results. For independent loads that a chain of dependent ones would otherwise serialise."""

    def codegen(context, builder, sig, args):  # type: ignore[no-untyped-def]
        aryty = sig.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        zero = context.get_constant(types.intp, 0)
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1], zero])
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]), "llvm.prefetch.p0i8")
        builder.call(fn, [builder.bitcast(ptr, i8p), i32(0), i32(3), i32(1)])  # read, keep, data cache
        return context.get_dummy_value()

    return types.void(arr, row), codegen
