"""Entry point: imports every command module (each registers its commands) and turns
:class:`CacheTunerError` into one line on stderr with exit code 2 — never a traceback for user mistakes."""

from __future__ import annotations

import importlib
import sys

from cachetuner.cli.app import app
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


def main() -> None:
    _load_commands()
    try:
        app()
    except CacheTunerError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)


if __name__ == "__main__":
    main()
