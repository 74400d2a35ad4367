"""Append-only JSONL audit log, the daemon's write-ahead log.

Every line is flushed and ``fsync``'d before the call returns, so a line that exists survives a
power cut and a decision that completed is on disk. Applying a config writes two lines sharing a
``decision_id``: ``phase: intent`` *before* ``CONFIG SET`` and ``phase: outcome`` after it. A
``kill -9`` between the two leaves an intent without outcome; on restart the daemon reads the log
(:func:`pending_intents`), looks at what the target actually runs and writes ``phase: reconciled``
— so no decision is ever lost or silently half-done. Decisions that apply nothing (hold, veto,
stale, dry-run) are a single ``phase: decision`` line. Operational events (start, stop, restart
detected, unreachable) are ``phase: event``.

Secrets never reach this file: URLs are scrubbed by the caller (:mod:`cachetuner.daemon.secrets`).
"""

from __future__ import annotations

import json
import os
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any


class AuditLog:
    """Thread-safe JSONL appender with per-line fsync."""

    def __init__(self, path: str | Path, session: str) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.session = session
        self._lock = threading.Lock()
        self._fh = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 (kept open for the session)
        self._seq = 0

    def write(self, record: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self._seq += 1
            now = time.time()
            full = {
                "ts": datetime.fromtimestamp(now, UTC).isoformat(timespec="milliseconds"),
                "t": round(now, 3),
                "session": self.session,
                "seq": self._seq,
                **record,
            }
            self._fh.write(json.dumps(full, default=str, sort_keys=False) + "\n")
            self._fh.flush()
            os.fsync(self._fh.fileno())
            return full

    def close(self) -> None:
        with self._lock:
            if not self._fh.closed:
                self._fh.flush()
                os.fsync(self._fh.fileno())
                self._fh.close()


def read_audit(path: str | Path) -> list[dict[str, Any]]:
    """All complete records; a torn last line (crash mid-write) is ignored."""
    p = Path(path)
    if not p.exists():
        return []
    out: list[dict[str, Any]] = []
    for line in p.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out


def pending_intents(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Intents (by decision id) that have neither an outcome nor a reconciliation."""
    pending: dict[str, dict[str, Any]] = {}
    for r in records:
        did = r.get("decision_id")
        if did is None:
            continue
        if r.get("phase") == "intent":
            pending[did] = r
        elif r.get("phase") in ("outcome", "reconciled"):
            pending.pop(did, None)
    return pending
