"""Bad input to ``cachetuner env sweep`` and ``cachetuner select``: one line naming the option (fuzz items A15,
A16/B4, A17/B6/D2)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from cachetuner.cli.main import _load_commands, app
from cachetuner.errors import ConfigError, UnknownNameError

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = str(ROOT / "experiments/quickstart.yaml")
runner = CliRunner()
_load_commands()


def _one_line(res, match: str, cls: type[Exception] = ConfigError) -> str:  # noqa: ANN001
    assert isinstance(res.exception, cls), (res.exception, res.output)
    msg = str(res.exception)
    assert match in msg and "\n" not in msg, msg
    return msg


def test_sweep_unknown_policy_lists_the_valid_ones() -> None:
    res = runner.invoke(app, ["env", "sweep", "--config", QUICKSTART, "--section", "env", "--policy", "lru"])
    msg = _one_line(res, "--policy 'lru': unknown maxmemory-policy; valid: noeviction, allkeys-lru", UnknownNameError)
    assert "volatile-ttl" in msg


@pytest.mark.parametrize(("fractions", "match"), [
    ("nan", "--fractions: a maxmemory fraction of the working set must be a finite number in (0, 100], got nan"),
    ("0.1,inf", "got inf"),
    ("0,-1", "got 0.0"),
    ("0.1,-1", "got -1.0"),
    ("0.1,1e30", "got 1e+30"),
    ("5", "--fractions '5': give at least two different fractions"),
    ("0.2,0.2", "--fractions '0.2,0.2': give at least two different fractions"),
])  # fmt: skip
def test_sweep_refuses_bad_fractions(fractions: str, match: str) -> None:
    res = runner.invoke(app, ["env", "sweep", "--config", QUICKSTART, "--section", "env", "--fractions", fractions])
    _one_line(res, match)


@pytest.mark.parametrize("recipe", ["general", "quickstart"])
@pytest.mark.parametrize("factors", ["nan", "inf", "0.2,nan", "-1", "0", "1e9"])
def test_select_refuses_bad_factors(recipe: str, factors: str) -> None:
    """Checked before the recipe's cells run (``inf`` hung, ``nan`` named the wrong cause or a pydantic dump)."""
    res = runner.invoke(app, ["select", str(ROOT / f"experiments/{recipe}.yaml"), "--model", "a=default",
                              "--factors", factors])  # fmt: skip
    _one_line(res, "--factors: a memory-price factor must be a finite number in (0, 1000], got ")


def test_select_refuses_nan_budget() -> None:
    res = runner.invoke(app, ["select", str(ROOT / "experiments/general.yaml"), "--model", "a=default", "--budgets", "nan"])
    _one_line(res, "--budgets: shares of the working set in (0, 1]")
