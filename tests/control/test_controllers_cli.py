"""``cachetuner controllers``: every registered controller, its hindsight flag and a whole-sentence summary."""

from __future__ import annotations

import json

from typer.testing import CliRunner

import cachetuner.cli.mrc_cmds  # noqa: F401  (registers the command)
from cachetuner.cli.app import app
from cachetuner.cli.mrc_cmds import summary_line
from cachetuner.control import CONTROLLERS, controller_names

runner = CliRunner()


def test_controllers_json_lists_every_controller_with_its_first_paragraph() -> None:
    res = runner.invoke(app, ["controllers", "--json"])
    assert res.exit_code == 0, res.output
    rows = {r["name"]: r for r in json.loads(res.stdout)["controllers"]}
    assert list(rows) == controller_names()
    assert {n for n, r in rows.items() if r["hindsight"]} == {"best-static", "dp-hindsight", "oracle"}
    for name, r in rows.items():
        assert "\n" not in r["summary"] and "``" not in r["summary"], name
        assert r["summary"] == summary_line(CONTROLLERS.get(name).__doc__)
    # the whole first paragraph, not its first line cut mid-sentence
    assert rows["sized-once"]["summary"].endswith("an operator who sized the cache with the curves.")


def test_summary_line_joins_the_first_paragraph() -> None:
    assert summary_line("One ``x``\n    and two.\n\n    Not this.") == "One `x` and two."
    assert summary_line(None) == ""
