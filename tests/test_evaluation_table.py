"""The evaluation table's footnotes (``print_evaluation``): every percentage can be read."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from cachetuner.cli.train_cmds import print_evaluation


def _row(cost: float, regret: float | None, *, hindsight: bool = False) -> dict:
    return {"cost": cost, "savings_vs_default": 0.0, "regret": regret, "hit_ratio": 0.5, "byte_hit_ratio": 0.5,
            "p95_latency_ms": 1.0, "mean_maxmemory_bytes": 2**20, "slo_violations": 0, "config_changes": 0,
            "hindsight": hindsight}


def test_a_regret_above_100_percent_is_said_as_a_multiple(capsys: pytest.CaptureFixture[str]) -> None:
    """A regret of +408 % reads as "more than everything"; the table says it is 5.1x the reference's cost
    (issue 11: no percentage above 100 % without saying why)."""
    result = {"currency": "USD", "mlflow_run_id": "r", "best_hindsight": {"tuner": "best-static", "cost": 1.0},
              "tuners": {"mrc": _row(1.037, 0.037), "static-default": _row(5.082, 4.082),
                         "best-static": _row(1.0, 0.0, hindsight=True)}}
    report = SimpleNamespace(workload="w", results={"mrc": SimpleNamespace(records=[0] * 200)})
    print_evaluation(result, report)
    text = " ".join(capsys.readouterr().out.split())
    assert "+408.2%" in text
    assert "regret above 100 %: static-default costs 5.1x the reference." in text
    assert "mrc costs" not in text  # only the ones above 100 %


def test_no_multiple_line_when_every_regret_is_below_100_percent(capsys: pytest.CaptureFixture[str]) -> None:
    result = {"currency": "USD", "mlflow_run_id": "r", "best_hindsight": {"tuner": "best-static", "cost": 1.0},
              "tuners": {"static-default": _row(1.5, 0.5), "best-static": _row(1.0, 0.0, hindsight=True)}}
    print_evaluation(result, SimpleNamespace(workload="w", results={"x": SimpleNamespace(records=[0] * 200)}))
    assert "regret above 100 %" not in capsys.readouterr().out
