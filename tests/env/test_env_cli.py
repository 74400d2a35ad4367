"""``cachetuner bench env --json`` and ``cachetuner env info --json``: one JSON object on stdout."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

import cachetuner.cli.env_cmds  # noqa: F401  (registers the commands)
from cachetuner.cli.app import app

YAML = """
workloads:
  - {trace: "synthetic:zipf", params: {n_keys: 3000, n_requests: 60000, rate: 50.0}}
episode_intervals: 4
warmup_intervals: 1
"""


def test_bench_env_json(tmp_path: Path) -> None:
    cfg = tmp_path / "env.yaml"
    cfg.write_text(YAML)
    res = CliRunner().invoke(app, ["bench", "env", "--config", str(cfg), "--steps", "10", "--json"])
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    assert report["whatif_on"]["steps"] == 10 and report["whatif_on"]["sim_requests_per_s"] > 0
    assert report["whatif_cost_ratio"] > 0 and report["mrc_cost_ratio"] > 0
    assert report["whatif_and_mrc_on"]["steps"] == 10
    assert report["whatif_on"]["resets"] >= 2


def test_env_info_json(tmp_path: Path) -> None:
    cfg = tmp_path / "env.yaml"
    cfg.write_text(YAML)
    res = CliRunner().invoke(app, ["env", "info", "--config", str(cfg), "--json"])
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    assert report["observation"][0] == "hit_ratio" and report["bounds"][0] < report["bounds"][1]


def test_env_sweep_json(tmp_path: Path) -> None:
    cfg = tmp_path / "env.yaml"
    cfg.write_text(YAML)
    res = CliRunner().invoke(app, ["env", "sweep", "--config", str(cfg), "--fractions", "0.1,0.5", "--json"])
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    assert set(report) == {"policy", "reward", "workloads"} and report["policy"] == "allkeys-lru"
    (row,) = report["workloads"]
    assert set(row) == {"workload", "working_set", "sizes", "best_fraction", "interior"}
    assert [s["fraction"] for s in row["sizes"]] == [0.1, 0.5]
    assert set(row["sizes"][0]) == {"fraction", "maxmemory", "hit_ratio", "cost_per_get", "memory_per_get", "mean_reward"}
    assert row["best_fraction"] in (0.1, 0.5) and row["interior"] is False


def test_env_sweep_bad_fractions(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["env", "sweep", "--fractions", "a,b"])
    assert res.exit_code != 0 and "--fractions" in str(res.exception)
