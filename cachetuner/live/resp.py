"""A minimal pipelining Redis connection: pre-encoded RESP out, hiredis-parsed replies in.

redis-py's ``Pipeline`` spends several microseconds of Python per command; the replayer needs
>= 100k requests/s from one process, so it encodes commands itself and parses replies with
``hiredis.Reader``. Connection setup (URL parsing, TLS, AUTH with ACL user, SELECT) follows redis-py's
URL conventions (``redis://[user:pass@]host:port/db``, ``rediss://`` for TLS).
"""

from __future__ import annotations

import contextlib
import os
import socket
import ssl
from typing import Any

import hiredis
from redis.connection import parse_url

from cachetuner.errors import ConfigError, ServiceError


def encode(*args: bytes | str | int) -> bytes:
    """One command in RESP (array of bulk strings)."""
    parts = [b"*%d\r\n" % len(args)]
    for a in args:
        if isinstance(a, str):
            a = a.encode()
        elif isinstance(a, int):
            a = b"%d" % a
        parts.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(parts)


def parse_redis_url(url: str, option: str = "--redis") -> dict[str, Any]:
    """redis-py's ``parse_url``, with a malformed URL (``foo``, ``http://x``, port 99999) as a one-line
    :class:`ConfigError` naming ``option`` instead of a ValueError traceback from deep inside a command."""
    try:
        return dict(parse_url(url))
    except ValueError as e:
        raise ConfigError(f"{option}: {e}, got {redact_url(url)!r} (expected e.g. redis://127.0.0.1:6379/0)") from None


def redact_url(url: str) -> str:
    """The URL without its password (for output and error messages)."""
    if "@" not in url or "://" not in url:
        return url
    scheme, rest = url.split("://", 1)
    cred, host = rest.rsplit("@", 1)
    user = cred.split(":", 1)[0] if ":" in cred else ""
    return f"{scheme}://{user}:***@{host}"


def connect_error(url: str, err: Exception) -> ServiceError:
    """The one wording of "nothing answers at this URL", for the raw socket and for redis-py clients alike."""
    kw = parse_redis_url(url)
    where = kw.get("path") or f"{kw.get('host', '127.0.0.1')}:{kw.get('port', 6379)}"
    return ServiceError(f"cannot connect to Redis at {where} ({err}); is it running? (`cachetuner stack up`)")


def url_credentials(url: str) -> tuple[str | None, str | None]:
    """(username, password) from the URL, else from ``REDIS_USERNAME`` / ``REDIS_PASSWORD``."""
    kw = parse_redis_url(url)
    return kw.get("username") or os.environ.get("REDIS_USERNAME"), kw.get("password") or os.environ.get("REDIS_PASSWORD")


def redis_client(url: str, **kwargs: Any) -> Any:
    """A redis-py client for ``url``; credentials from the URL or the environment."""
    import redis

    user, password = url_credentials(url)
    extra: dict[str, Any] = {}
    kw = parse_redis_url(url)
    if user and not kw.get("username"):
        extra["username"] = user
    if password and not kw.get("password"):
        extra["password"] = password
    return redis.Redis.from_url(url, **extra, **kwargs)


class RespConnection:
    """One blocking socket to Redis; :meth:`roundtrip` sends a batch and returns its replies in order.

    Error replies come back as ``hiredis.ReplyError`` objects in the list (not raised), so one OOM
    reply inside a pipeline does not lose the replies after it.
    """

    def __init__(self, url: str, timeout_s: float = 30.0) -> None:
        kw = parse_redis_url(url)
        if "path" in kw:  # a TCP socket only: unix:// would silently connect to 127.0.0.1:6379 instead
            raise ConfigError(f"--redis: the replayer connects over TCP (redis:// or rediss://), got {redact_url(url)!r}")
        host, port = kw.get("host", "127.0.0.1"), int(kw.get("port", 6379))
        try:
            sock = socket.create_connection((host, port), timeout=timeout_s)
        except OSError as e:
            raise connect_error(url, e) from e
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if url.startswith("rediss://"):
            ctx = ssl.create_default_context()
            if kw.get("ssl_cert_reqs") == "none":
                ctx.check_hostname = False
                ctx.verify_mode = ssl.CERT_NONE
            sock = ctx.wrap_socket(sock, server_hostname=host)
        self.sock = sock
        self.reader = hiredis.Reader()
        user, password = url_credentials(url)
        setup: list[bytes] = []
        if password:
            setup.append(encode("AUTH", user, password) if user else encode("AUTH", password))
        if kw.get("db"):
            setup.append(encode("SELECT", int(kw["db"])))
        if setup:
            for reply in self.roundtrip(setup):
                if isinstance(reply, hiredis.ReplyError):
                    raise ServiceError(f"Redis at {host}:{port} refused the connection setup: {reply}")

    def roundtrip(self, commands: list[bytes]) -> list[Any]:
        """Send ``commands`` (already encoded) in one write, read exactly ``len(commands)`` replies."""
        self.send(commands)
        return self.recv(len(commands))

    def send(self, commands: list[bytes]) -> None:
        """Write ``commands`` without waiting for replies (pair with :meth:`recv`)."""
        self.sock.sendall(b"".join(commands))

    def recv(self, n: int) -> list[Any]:
        """Read exactly ``n`` replies, in order (one ``gets`` a reply; the socket is read only when needed)."""
        replies: list[Any] = []
        append = replies.append
        reader = self.reader
        gets = reader.gets
        for _ in range(n):
            r = gets()
            while r is False:
                data = self.sock.recv(1 << 18)
                if not data:
                    raise ServiceError("Redis closed the connection")
                reader.feed(data)
                r = gets()
            append(r)
        return replies

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()
