"""The command list that `cachetuner --help` prints is readable: one summary line per command.

Typer's rich help prints a command's first docstring paragraph in the command list with its line breaks kept,
so a summary wrapped in the source shows up broken mid-sentence there (``report cost, hit ratio,`` / ``memory``).
"""

from __future__ import annotations

import os
import subprocess
import sys
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


def test_help_paragraphs_flow_instead_of_keeping_the_sources_line_breaks() -> None:
    """typer 0.29 keeps every source line break after a command's first paragraph, so docstrings wrapped at 120
    columns printed as ragged half-lines; ``reflow_help`` joins them (lists and indented examples stay as written)."""
    from cachetuner.cli.app import reflow

    assert reflow("One.\n\nA long\nsentence here.\n\nA list:\n- one\n- two") == "One.\n\nA long sentence here.\n\nA list:\n- one\n- two"
    proc = subprocess.run([sys.executable, "-m", "cachetuner.cli.main", "select", "--help"], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "COLUMNS": "200"})
    assert proc.returncode == 0
    assert "Every policy, mrc, static-default and the hindsight references on the recipe's own workloads" in proc.stdout


def test_a_usage_mistake_is_one_line_naming_the_option_and_where_the_help_is() -> None:
    """click's usage errors (unknown option or command, a malformed or missing value) print one ``error:`` line on
    stderr and exit 2, like every other user mistake, instead of click's multi-line usage box; ``--help`` and a
    bare command group still print their help."""
    import subprocess
    import sys

    def run(*args: str) -> tuple[int, list[str], str]:
        p = subprocess.run([sys.executable, "-m", "cachetuner.cli.main", *args], capture_output=True, text=True,
                           timeout=120, check=False)
        return p.returncode, [ln for ln in p.stderr.splitlines() if ln.strip()], p.stdout

    for args, needles in [
        (["evaluate", "--bogus"], ["No such option: --bogus", "'cachetuner evaluate --help'"]),
        (["nonexist"], ["No such command 'nonexist'", "'cachetuner --help'"]),
        (["simulate", "--limit", "x"], ["'--limit'", "integer", "'cachetuner simulate --help'"]),
        (["evaluate", "--seed", "-3"], ["'--seed'", "greater than or equal to 0"]),
        (["bench", "mrc", "--nope"], ["No such option: --nope", "'cachetuner bench mrc --help'"]),
    ]:
        rc, err, out = run(*args)
        assert rc == 2 and len(err) == 1 and err[0].startswith("error: "), (args, err)
        assert all(n in err[0] for n in needles), (args, err)
        assert out == "", (args, out)
    rc, err, out = run("bench")  # a group without a command: its help, exit 2 (click's convention)
    assert rc == 2 and "Commands" in out and err == []
    rc, err, out = run("trace", "--help")
    assert rc == 0 and "formats" in out and err == []


def test_version_prints_one_line_and_exits_0() -> None:
    from importlib.metadata import version

    res = subprocess.run([sys.executable, "-m", "cachetuner.cli.main", "--version"], capture_output=True, text=True,
                         timeout=60, check=False)
    assert res.returncode == 0, res.stderr
    assert res.stdout == f"cachetuner {version('cachetuner')}\n"


def test_a_native_crash_prints_the_python_stacks() -> None:
    """A crash in native code (Ray's driver was seen to die of SIGSEGV once in CI) prints every thread's Python
    stack on stderr, through the faulthandler the entry point enables, instead of a bare exit status."""
    code = ("import os, signal, cachetuner.cli.main as m\n"
            "m._load_commands = lambda: os.kill(os.getpid(), signal.SIGSEGV)\n"
            "m.main()\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == -11, proc
    assert "Fatal Python error: Segmentation fault" in proc.stderr
    assert 'line 2 in <lambda>' in proc.stderr and 'in main' in proc.stderr, proc.stderr
