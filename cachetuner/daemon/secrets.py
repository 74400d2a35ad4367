"""Redis credentials from the environment or a file, and URL scrubbing for logs and the audit log.

The password never appears in the YAML, the audit log, MLflow params or log lines: the YAML names
where it comes from (``password_env`` / ``password_file``), URLs are rebuilt with it only in
memory, and everything that is written goes through :func:`scrub_url` / :func:`scrub_text`.
"""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path
from urllib.parse import quote, urlsplit, urlunsplit

from cachetuner.daemon.config import TargetConfig
from cachetuner.errors import ConfigError

_USERINFO = re.compile(r"(?P<scheme>[a-z][a-z0-9+.-]*://)(?P<user>[^:@/\s]*)(?P<pw>:[^@/\s]*)?@", re.I)


def scrub_url(url: str | None) -> str | None:
    """``redis://user:pw@h:1/0`` -> ``redis://user:***@h:1/0`` (user kept for debugging ACLs)."""
    if url is None:
        return None
    return scrub_text(url)


def scrub_text(text: str) -> str:
    def repl(m: re.Match[str]) -> str:
        return f"{m.group('scheme')}{m.group('user')}:***@" if m.group("pw") else m.group(0)

    return _USERINFO.sub(repl, text)


def redis_password(target: TargetConfig) -> str | None:
    """From ``password_file`` (first line) or the ``password_env`` variable; None when neither is set."""
    if target.password_file:
        p = Path(target.password_file)
        if not p.is_file():
            raise ConfigError(f"target {target.name}: field 'password_file': {p} not found")
        return p.read_text(encoding="utf-8").splitlines()[0].strip() if p.stat().st_size else ""
    if target.password_env:
        return os.environ.get(target.password_env)
    return None


def credentialed_url(target: TargetConfig) -> str:
    """The target's Redis URL with user and password filled in (memory only; never log it)."""
    assert target.redis_url is not None
    parts = urlsplit(target.redis_url)
    if parts.password:
        raise ConfigError(
            f"target {target.name}: field 'redis_url': do not put the password in the URL; use password_env or password_file"
        )
    user = target.username or parts.username
    pw = redis_password(target)
    host = parts.hostname or "127.0.0.1"
    netloc = f"{host}:{parts.port}" if parts.port else host
    if pw:
        netloc = f"{quote(user or 'default', safe='')}:{quote(pw, safe='')}@{netloc}"
    elif user:
        netloc = f"{quote(user, safe='')}@{netloc}"
    return urlunsplit((parts.scheme or "redis", netloc, parts.path, parts.query, parts.fragment))


class ScrubFilter(logging.Filter):
    """Logging filter that scrubs passwords out of every record's final message."""

    def filter(self, record: logging.LogRecord) -> bool:
        msg = record.getMessage()
        clean = scrub_text(msg)
        if clean != msg:
            record.msg, record.args = clean, None
        return True
