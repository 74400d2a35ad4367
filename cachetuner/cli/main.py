"""Entry point: imports every command module (each registers its commands) and turns
:class:`CacheTunerError` and click's usage errors (an unknown option or command, a missing or malformed
value) into one line on stderr with exit code 2 — never a traceback or a boxed usage screen for user mistakes."""

from __future__ import annotations

import contextlib
import faulthandler
import importlib
import io
import sys
from typing import Any

import typer

from cachetuner.cli.app import app, reflow_help
from cachetuner.errors import CacheTunerError

#: Command modules, each registering on ``app`` / ``bench_app`` at import.
COMMAND_MODULES = (
    "cachetuner.cli.trace_cmds",
    "cachetuner.cli.sim_cmds",
    "cachetuner.cli.env_cmds",
    "cachetuner.cli.train_cmds",
    "cachetuner.cli.live_cmds",
    "cachetuner.cli.hotness_cmds",
    "cachetuner.cli.daemon_cmds",
    "cachetuner.cli.ab_cmds",
    "cachetuner.cli.ttl_cmds",
    "cachetuner.cli.mrc_cmds",
    "cachetuner.cli.recommend_cmds",
    "cachetuner.cli.pool_cmds",
    "cachetuner.cli.sweep_cmds",
    "cachetuner.cli.demo",
)


def _load_commands() -> None:
    for name in COMMAND_MODULES:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as e:  # a command group not written yet must not break the others
            if e.name != name:
                raise


def _click_class(name: str) -> type[Exception]:
    """click's ``UsageError`` / ``ClickException`` as the installed typer raises them: recent typer releases vendor
    click (``typer._click``), older ones use click itself; either way they are bases of ``typer.BadParameter``."""
    return next(c for c in typer.BadParameter.__mro__ if c.__name__ == name)


UsageError = _click_class("UsageError")
ClickException = _click_class("ClickException")


def usage_line(e: Any) -> str:
    """One line for a usage error: click's message and where the help is (``cachetuner evaluate --help``)."""
    msg = " ".join(e.format_message().split())
    path = e.ctx.command_path if e.ctx is not None else "cachetuner"
    return f"error: {msg} (see '{path} --help')"


def main() -> None:
    # A crash in native code (Ray, torch, grpc) prints every thread's Python stack on stderr instead of a bare
    # "Segmentation fault": the one clue a user or CI log has. Not where stderr is no file (main() called in-process
    # with stderr captured, as CliRunner-style tests do).
    with contextlib.suppress(AttributeError, ValueError, io.UnsupportedOperation):
        faulthandler.enable()
    _load_commands()
    reflow_help(app)
    try:
        # not standalone: click's errors reach us instead of its multi-line usage box; an explicit Exit comes back
        # as its code (a command that returns normally returns None)
        rv = app(standalone_mode=False, prog_name="cachetuner")
    except CacheTunerError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    except UsageError as e:
        if type(e).__name__ == "NoArgsIsHelpError":  # a command group run bare: its help (rich prints it already)
            if text := e.format_message().strip():  # type: ignore[attr-defined]
                print(text)
            sys.exit(2)
        print(usage_line(e), file=sys.stderr)
        sys.exit(2)
    except ClickException as e:  # e.g. a file argument that cannot be opened
        print(f"error: {' '.join(e.format_message().split())}", file=sys.stderr)  # type: ignore[attr-defined]
        sys.exit(int(e.exit_code))  # type: ignore[attr-defined]
    except (KeyboardInterrupt, typer.Abort):
        print("interrupted", file=sys.stderr)
        sys.exit(130)
    sys.exit(rv if isinstance(rv, int) and not isinstance(rv, bool) else 0)  # as click's standalone mode exits


if __name__ == "__main__":
    main()
