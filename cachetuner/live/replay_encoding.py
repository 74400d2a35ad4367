"""RESP encoding of the replayer's commands: GET/SET/DEL per trace key and the sampled-request XADD.

Commands are pre-encoded per key (and values per size) on first use, so the hot loop only looks up
and joins bytes; a batch then goes out in one ``sendall`` (:class:`cachetuner.live.resp.RespConnection`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeAlias

import hiredis
import numpy as np

from cachetuner.live import sampling
from cachetuner.traces.trace import Op

#: Redis key name of trace key id ``i`` is ``KEY_PREFIX + str(i)`` (the traces' key_bytes assume it).
KEY_PREFIX = "ct:"

#: A trace column as the hot loop reads it: a Python list (indexes ~5x faster), or the numpy array itself
#: for traces over ``LIST_MAX_REQUESTS``.
Column: TypeAlias = Sequence[Any] | np.ndarray


class CommandEncoder:
    """Pre-encoded commands per key and value size (the hot loop only joins bytes)."""

    def __init__(self, n_keys: int, names: list[bytes] | None = None) -> None:
        self._get: list[bytes | None] = [None] * n_keys
        self._name: list[bytes | None] = [None] * n_keys
        self._values: dict[int, bytes] = {}
        self._names = names  # key names by id (multi-tenant traces: t:{tenant}:{biz}:{key}); None = ct:{id}

    def name(self, k: int) -> bytes:
        b = self._name[k]
        if b is None:
            kn = self._names[k] if self._names is not None else b"%s%d" % (KEY_PREFIX.encode(), k)
            b = self._name[k] = b"$%d\r\n%s\r\n" % (len(kn), kn)
        return b

    @property
    def get_table(self) -> list[bytes | None]:
        """The GET cache itself (the hot loop reads it inline and calls :meth:`get` on a None)."""
        return self._get

    def get(self, k: int) -> bytes:
        b = self._get[k]
        if b is None:
            b = self._get[k] = b"*2\r\n$3\r\nGET\r\n" + self.name(k)
        return b

    def set(self, k: int, size: int, ttl_s: float) -> bytes:
        v = self._values.get(size)
        if v is None:
            v = self._values[size] = b"$%d\r\n%s\r\n" % (size, b"x" * size)
        if ttl_s > 0:
            ms = b"%d" % max(1, round(ttl_s * 1000))
            return b"*5\r\n$3\r\nSET\r\n" + self.name(k) + v + b"$2\r\nPX\r\n$%d\r\n%s\r\n" % (len(ms), ms)
        return b"*3\r\n$3\r\nSET\r\n" + self.name(k) + v

    def delete(self, k: int) -> bytes:
        return b"*2\r\n$3\r\nDEL\r\n" + self.name(k)

    def request_encoder(self, ops: Column, sizes: Column, ttls: Column) -> Callable[[int, int], bytes]:
        """``encode(idx, k)``: the command of trace request ``idx`` (key ``k``) by its op."""
        get_op, set_op = int(Op.GET), int(Op.SET)
        enc_get, enc_set, enc_del = self.get, self.set, self.delete

        def encode(idx: int, k: int) -> bytes:
            op = ops[idx]
            if op == get_op:
                return enc_get(k)
            if op == set_op:
                return enc_set(k, sizes[idx], ttls[idx])
            return enc_del(k)

        return encode


class StreamEncoder:
    """``XADD {prefix}sampled MAXLEN ~ maxlen * ...``: one sampled request (format in :mod:`.sampling`)."""

    def __init__(self, stream_prefix: str, maxlen: int, sample_rate: float) -> None:
        skey = sampling.stream_key(stream_prefix).encode()
        self._head = b"$4\r\nXADD\r\n$%d\r\n%s\r\n$6\r\nMAXLEN\r\n$1\r\n~\r\n" % (len(skey), skey)
        self._tail = b"$%d\r\n%d\r\n$1\r\n*\r\n" % (len(str(maxlen)), maxlen)
        self._rate = repr(float(sample_rate)).encode()

    def entry(self, k: int, size: int, op: int, wall: float, ttl: float, hit: int) -> bytes:
        body = b"k %d s %d o %d t %.6f ttl %g h %d r %s" % (k, size, op, wall, float(ttl), hit, self._rate)
        fields = body.split(b" ")
        parts = [b"*%d\r\n" % (6 + len(fields)), self._head, self._tail]
        parts.extend(b"$%d\r\n%s\r\n" % (len(f), f) for f in fields)
        return b"".join(parts)


def is_oom(reply: object) -> bool:
    """A ``SET`` refused because Redis is full under ``noeviction``."""
    return isinstance(reply, hiredis.ReplyError) and str(reply).startswith("OOM")
