"""Persisted daemon state, written atomically after every loop and every apply.

Atomic = write a temp file in the same directory, ``fsync`` it, ``os.replace`` it over the old
one, ``fsync`` the directory: a reader (or a restarted daemon) sees either the old or the new
state, never a torn one. The audit log stays the source of truth for decisions; this file only
saves the restarted daemon from re-deriving known-good configs, cooldown clocks and Redis run ids.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from cachetuner.config import RedisConfig
from cachetuner.errors import ConfigError


class TargetState(BaseModel):
    model_config = ConfigDict(extra="ignore")

    last_known_good: RedisConfig | None = None
    last_applied: RedisConfig | None = None     # last config this daemon set successfully
    last_change_at: float | None = None         # wall time of the last applied change
    last_change_iteration: int | None = None
    fresh_since_change: int = 0                 # fresh (non-stale) intervals observed since the last change
    good_streak: int = 0                        # consecutive SLO-passing intervals on the current config
    run_id: str | None = None                   # Redis INFO run_id seen last (restart detection)
    last_decision_id: str | None = None
    rewritten: RedisConfig | None = None        # config last persisted with CONFIG REWRITE
    baseline: RedisConfig | None = None         # the config first read on the target (the estimated saving's reference)


class DaemonState(BaseModel):
    model_config = ConfigDict(extra="ignore")

    version: int = 1
    iteration: int = 0
    sessions: int = 0
    targets: dict[str, TargetState] = Field(default_factory=dict)

    def target(self, name: str) -> TargetState:
        if name not in self.targets:
            self.targets[name] = TargetState()
        return self.targets[name]


def atomic_write_json(path: str | Path, data: Any) -> None:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", dir=p.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=1, default=str)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, p)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    dfd = os.open(p.parent, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def load_state(path: str | Path) -> DaemonState:
    p = Path(path)
    if not p.exists():
        return DaemonState()
    try:
        return DaemonState.model_validate_json(p.read_text(encoding="utf-8"))
    except ValueError as e:  # only a hand-edited file can be torn: writes are atomic
        raise ConfigError(f"{p}: unreadable daemon state ({str(e).splitlines()[0]}); fix it or move it away") from None


def save_state(path: str | Path, state: DaemonState) -> None:
    atomic_write_json(path, state.model_dump(mode="json"))
