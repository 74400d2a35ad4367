"""The typer apps every command module registers on.

Stdout is reserved for results (tables, or exactly one JSON object with ``--json``); progress bars
and logs go to stderr through :data:`console`.
"""

from __future__ import annotations

import inspect
import json
import math
import os
from typing import Any

import typer
from rich.console import Console

app = typer.Typer(
    name="cachetuner",
    help="Tune a Redis cache in front of expensive AI inference with reinforcement learning.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


def _print_version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        from cachetuner import __version__

        try:
            v = version("cachetuner")
        except PackageNotFoundError:  # run from a checkout that was never installed
            v = __version__
        typer.echo(f"cachetuner {v}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_print_version, is_eager=True,
                                 help="Print the installed version and exit."),
) -> None:
    """Tune a Redis cache in front of expensive AI inference with reinforcement learning."""


bench_app = typer.Typer(help="Benchmarks that print JSON; compare side by side in one run.", no_args_is_help=True)
app.add_typer(bench_app, name="bench")

#: stderr console for progress and logs; stdout stays clean for results.
console = Console(stderr=True)


def _stdout_console() -> Console:
    """stdout at the terminal's width; piped (``| tee``, ``> file``), 160 columns unless ``COLUMNS`` says otherwise,
    since rich's default of 80 cuts result tables' columns to "…"."""
    c = Console()
    return c if c.is_terminal or "COLUMNS" in os.environ else Console(width=160)


#: stdout console for human-readable result tables.
out = _stdout_console()


def wide_out(min_width: int = 140) -> Console:
    """The stdout console for a wide table: ``out`` where it has ``min_width`` columns, else one of 160 (a narrow
    terminal wraps the table's lines instead of cutting its columns to "…")."""
    return out if out.width >= min_width else Console(width=160)


def _clean(obj: Any) -> Any:
    """Make figures JSON-safe: numpy scalars to Python, NaN/inf to null."""
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_clean(v) for v in obj]
    if hasattr(obj, "item") and callable(obj.item):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def emit_json(obj: Any) -> None:
    """Print ``obj`` as the single JSON object on stdout."""
    print(json.dumps(_clean(obj), sort_keys=False), flush=True)


def reflow(text: str) -> str:
    """``text`` with the single line breaks inside each paragraph joined, the way click's plain help shows a docstring.

    Why: typer 0.29's rich help keeps every source line break after the first paragraph, so a docstring wrapped at
    120 columns prints as ragged half-lines in an 80-column terminal. Paragraphs (blank-line separated) stay apart; a
    paragraph that starts with ``\\b`` or holds an indented line (a list, an example) is kept as written."""
    out = []
    for para in text.split("\n\n"):
        lines = para.split("\n")
        keep = para.startswith("\b") or any(ln.startswith((" ", "\t", "- ", "* ")) for ln in lines[1:])
        out.append(para if keep else " ".join(ln.strip() for ln in lines))
    return "\n\n".join(out)


def reflow_help(typer_app: typer.Typer) -> None:
    """Give every command of ``typer_app`` and of its sub-apps its docstring :func:`reflow`-ed as its help (an
    explicit ``help=`` is left alone)."""
    for info in typer_app.registered_commands:
        if info.help is None and info.callback is not None and info.callback.__doc__:
            info.help = reflow(inspect.cleandoc(info.callback.__doc__))
    for group in typer_app.registered_groups:
        if group.typer_instance is not None:
            reflow_help(group.typer_instance)
