"""``cachetuner ttl compare / tenants / policies``: JSON on stdout, MLflow run with the plot, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from mlflow.tracking import MlflowClient
from typer.testing import CliRunner

import cachetuner.cli.ttl_cmds  # noqa: F401  (registers the commands)
from cachetuner.cli.app import app
from cachetuner.errors import ConfigError

runner = CliRunner()


def test_policies_lists_the_registry() -> None:
    res = runner.invoke(app, ["ttl", "policies"])
    assert res.exit_code == 0 and {"trace", "fixed", "rules", "multi-factor", "hotness"} <= set(res.stdout.split())


def test_compare_json_and_mlflow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mlflow_store) -> None:
    monkeypatch.setenv("MLFLOW_TRACKING_URI", mlflow_store(tmp_path))
    monkeypatch.chdir(tmp_path)
    res = runner.invoke(app, [
        "ttl", "compare", "--trace", "bundled:web07", "--trace", "bundled:web12", "--rate", "20", "--size-model",
        "fixed:2000", "--limit", "12000", "--policy", "fixed:300", "--policy", "rules", "--memory", "0.2", "--json",
    ])  # fmt: skip
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    rows = out["rows"]
    assert [(r["trace"], r["policy"]) for r in rows] == [
        ("bundled:web07", "fixed:300"), ("bundled:web07", "rules"), ("bundled:web12", "fixed:300"), ("bundled:web12", "rules")]
    assert rows[0]["delta_hit_ratio_pp"] == 0.0 and rows[0]["mean_ttl_s"] == 300.0
    assert rows[1]["delta_hit_ratio_pp"] == pytest.approx(100 * (rows[1]["hit_ratio"] - rows[0]["hit_ratio"]))
    arts = [a.path for a in MlflowClient().list_artifacts(out["mlflow_run_id"], "plots")]
    assert arts == ["plots/ttl_compare.png"]


def test_compare_option_count_mismatch_is_one_line() -> None:
    res = runner.invoke(app, ["ttl", "compare", "--trace", "bundled:web07", "--trace", "bundled:web12",
                              "--rate", "1", "--rate", "2", "--rate", "3", "--no-track"])  # fmt: skip
    assert isinstance(res.exception, ConfigError) and "--rate: give it once or once per --trace (2), got 3" in str(res.exception)


def test_tenants_json_and_figure(tmp_path: Path) -> None:
    wl = {"name": "cli2", "duration_s": 900, "tenants": [
        {"name": "gold", "qos": "gold", "trace": "synthetic:zipf", "rate": 20, "seed": 1,
         "params": {"n_requests": 18000, "n_keys": 400, "alpha": 1.2, "sizes": "fixed:2000"}},
        {"name": "bronze", "qos": "bronze", "trace": "synthetic:zipf", "rate": 20, "seed": 2,
         "params": {"n_requests": 18000, "n_keys": 20000, "alpha": 0.7, "sizes": "fixed:4000"}}]}  # fmt: skip
    path = tmp_path / "wl.yaml"
    path.write_text(yaml.safe_dump(wl))
    fig = tmp_path / "fig.png"
    res = runner.invoke(app, ["ttl", "tenants", "--workload", str(path), "--warmup", "3", "--figure", str(fig),
                              "--no-track", "--json"])  # fmt: skip
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert len(out["scenarios"]) == 3 and fig.stat().st_size > 10_000
    protected = out["scenarios"]["protected: volatile-lru, no TTL on gold"]["tenants"]
    assert protected["gold"]["p95_met_share"] == 1.0 and protected["gold"]["p95_threshold_ms"] == 80.0
