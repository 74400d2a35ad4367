"""The command list that `cachetuner --help` prints is readable: one summary line per command.

Typer's rich help prints a command's first docstring paragraph in the command list with its line breaks kept,
so a summary wrapped in the source shows up broken mid-sentence there (``report cost, hit ratio,`` / ``memory``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import typer

from cachetuner.cli.app import app
from cachetuner.cli.main import _load_commands


def _commands(cmd: Any, path: str) -> Iterator[tuple[str, Any]]:
    yield path, cmd
    for name, sub in getattr(cmd, "commands", {}).items():
        yield from _commands(sub, f"{path} {name}")


def test_every_command_summary_is_one_line() -> None:
    _load_commands()
    commands = list(_commands(typer.main.get_command(app), "cachetuner"))
    assert len(commands) > 40  # every command module registered
    wrapped = [path for path, cmd in commands if "\n" in (cmd.help or "").strip().split("\n\n")[0]]
    assert wrapped == [], f"first docstring paragraph spans lines (split it into a summary and details): {wrapped}"
