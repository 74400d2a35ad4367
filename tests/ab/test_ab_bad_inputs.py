"""Bad input to ``cachetuner bench ab-calibration / ab-shadow``: one line naming the option (fuzz items A18, C10)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

import cachetuner.cli.ab_cmds  # noqa: F401  (registers the commands)
from cachetuner.ab.validation import calibration, check_rates
from cachetuner.cli.app import app
from cachetuner.errors import ConfigError

runner = CliRunner()


def _one_line(res, match: str) -> None:  # noqa: ANN001
    assert isinstance(res.exception, ConfigError), (res.exception, res.output)
    msg = str(res.exception)
    assert match in msg and "\n" not in msg, msg


@pytest.mark.parametrize(("args", "match"), [
    (["--lengths", "0"], "--lengths: a number of intervals must be in [2, 10,000], got 0"),
    (["--lengths", "-5"], "--lengths: a number of intervals must be in [2, 10,000], got -5"),
    (["--lengths", "1"], "--lengths: a number of intervals"),
    (["--lengths", "30,100000000"], "got 100000000"),
    (["--lengths", ","], "--lengths: give at least one"),
    (["--lengths", "2.5"], "--lengths '2.5': expected comma-separated whole numbers"),
    (["--phis", "1.5"], "--phis: an AR(1) coefficient must be finite with |phi| < 1 (a stationary series), got 1.5"),
    (["--phis", "nan"], "--phis: an AR(1) coefficient must be finite with |phi| < 1"),
    (["--phis", "-1"], "got -1.0"),
    (["--phis", "0,x"], "--phis '0,x': expected comma-separated numbers"),
])  # fmt: skip
def test_calibration_refuses_bad_grid(args: list[str], match: str) -> None:
    _one_line(runner.invoke(app, ["bench", "ab-calibration", "--reps", "10", *args]), match)


def test_calibration_smallest_grid_runs() -> None:
    rows = calibration([2, 5], [-0.5], reps=10, n_resamples=50)
    assert [r["n"] for r in rows] == [2, 5]
    with pytest.raises(ConfigError, match="^phis: "):
        calibration([10], [float("inf")], reps=10)


@pytest.mark.parametrize("rates", ["0", "2", "nan", "0.05,-0.1", ","])
def test_shadow_rates_must_be_in_0_1(rates: str) -> None:
    """Refused before the A/B config is read or anything runs (a rate of 0 sampled no keys and reported 0.0 deltas)."""
    res = runner.invoke(app, ["bench", "ab-shadow", "--config", "/nonexistent/ab.yaml", "--rates", rates])
    _one_line(res, "--rates: ")


def test_check_rates_library() -> None:
    assert check_rates([0.01, 1.0]) == [0.01, 1.0]
    with pytest.raises(ConfigError, match=r"^rates: a sampling rate is a share of the key space in \(0, 1\], got 0.0"):
        check_rates([0.0])
