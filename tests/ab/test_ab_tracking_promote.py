"""MLflow layout of an A/B run (tmp sqlite store) and promotion into a daemon config."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import mlflow
import pytest
import yaml
from abtest_support import SMALL, ab_config
from mlflow.tracking import MlflowClient

from cachetuner.ab.promote import PromotionRefusedError, promote
from cachetuner.ab.runner import arm_env_config, run_ab
from cachetuner.ab.tracking import log_ab
from cachetuner.cli.main import main
from cachetuner.daemon.config import load_daemon_config

DAEMON = {
    "interval_s": 5.0,
    "policy": {"name": "hold"},
    "targets": [{"name": "cache-a", "backend": "sim",
                 "bounds": {"maxmemory_min": 1_000_000, "maxmemory_max": 200_000_000}}],
}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, mlflow_store) -> dict:
    """Two logged experiments: one the treatment wins (static-default vs a starved cache), one it loses."""
    d = tmp_path_factory.mktemp("mlflow")
    uri = mlflow_store(d)
    starved = {"config": {"maxmemory": 2_000_000, "maxmemory_policy": "allkeys-lru"}}
    runs = {}
    for label, control, treatment in (
        ("better", starved, {"tuner": "static-default"}),
        ("worse", {"tuner": "static-default"}, {"config": SMALL}),
    ):
        cfg = ab_config(control, treatment, horizon=24, name=f"ab-{label}")
        res = run_ab(cfg)
        run_id = log_ab(res, cfg, arm_env_config(cfg), tracking_uri=uri)
        runs[label] = (run_id, res)
    return {"uri": uri, "dir": d, "runs": runs}


def test_parent_run_with_one_child_per_arm(store: dict) -> None:
    run_id, res = store["runs"]["better"]
    assert res.verdict.verdict == "better"
    client = MlflowClient(tracking_uri=store["uri"])
    parent = client.get_run(run_id)
    tags = parent.data.tags
    assert tags["ab.kind"] == "ab" and tags["ab.verdict"] == "better"
    assert tags["ab.treatment_model"] == "static-default"
    assert tags["ab.control"].startswith("config:allkeys-lru@2000000B")
    assert parent.data.metrics["cost_delta.ci_high"] < 0
    children = client.search_runs([parent.info.experiment_id], f"tags.mlflow.parentRunId = '{run_id}'")
    assert sorted(c.data.tags["ab.arm"] for c in children) == ["control", "treatment"]
    for child in children:
        assert child.data.tags["ab.kind"] == "arm"
        assert len(client.get_metric_history(child.info.run_id, "hit_ratio")) == res.intervals
        assert {"arm.config.maxmemory", "initial_config.maxmemory"} & set(child.data.params)
        arts = {a.path for a in client.list_artifacts(child.info.run_id, "config")}
        assert f"config/{child.data.tags['ab.arm']}_arm.yaml" in arts
    top = {a.path for a in client.list_artifacts(run_id)}
    assert {"ab_report.json", "config", "plots"} <= top
    plots = {a.path for a in client.list_artifacts(run_id, "plots")}
    assert {"plots/ab_timeseries.png", "plots/ab_delta_ci.png"} <= plots
    local = Path(client.download_artifacts(run_id, "plots/ab_delta_ci.png", str(store["dir"])))
    assert local.read_bytes()[:4] == b"\x89PNG"
    assert len(client.get_metric_history(run_id, "delta.cost")) == res.intervals


def test_tag_filter_lists_the_ab_runs_of_a_model(store: dict) -> None:
    mlflow.set_tracking_uri(store["uri"])
    df = mlflow.search_runs(
        experiment_names=["cachetuner-ab"],
        filter_string="tags.ab.kind = 'ab' and tags.ab.treatment_model = 'static-default'",
    )
    assert list(df["run_id"]) == [store["runs"]["better"][0]]


def test_promote_refuses_a_verdict_that_is_not_better(
    store: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id, res = store["runs"]["worse"]
    assert res.verdict.verdict == "worse"
    daemon = tmp_path / "daemon.yaml"
    daemon.write_text(yaml.safe_dump(DAEMON))
    before = daemon.read_text()
    log = tmp_path / "promotions.jsonl"
    with pytest.raises(PromotionRefusedError, match="only 'better' is promoted"):
        promote(run_id, daemon_config=daemon, log_path=log, tracking_uri=store["uri"])
    assert daemon.read_text() == before
    (line,) = log.read_text().splitlines()
    assert json.loads(line)["decision"] == "refused"
    tags = MlflowClient(tracking_uri=store["uri"]).get_run(run_id).data.tags
    assert tags["ab.promotion"] == "refused"
    # the CLI: one line on stderr, exit 2, nothing on stdout
    monkeypatch.setenv("MLFLOW_TRACKING_URI", store["uri"])
    monkeypatch.setattr(sys, "argv", ["cachetuner", "ab", "promote", run_id, "--daemon-config", str(daemon),
                                      "--log", str(log)])
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        main()
    assert exc.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert len(captured.err.strip().splitlines()) == 1 and "verdict is 'worse'" in captured.err
    assert daemon.read_text() == before
    assert len(log.read_text().splitlines()) == 2


def test_promote_writes_a_better_treatment_into_the_daemon_config(store: dict, tmp_path: Path) -> None:
    run_id, _ = store["runs"]["better"]
    daemon = tmp_path / "daemon.yaml"
    daemon.write_text(yaml.safe_dump(DAEMON))
    log = tmp_path / "promotions.jsonl"
    entry = promote(run_id, daemon_config=daemon, log_path=log, tracking_uri=store["uri"])
    assert entry["decision"] == "promoted"
    cfg = load_daemon_config(daemon)
    assert cfg.policy.name == "static-default"
    assert cfg.targets[0].name == "cache-a"  # everything else kept
    assert (tmp_path / "daemon.yaml.bak").is_file()
    assert json.loads(log.read_text().splitlines()[-1])["run_id"] == run_id
    tags = MlflowClient(tracking_uri=store["uri"]).get_run(run_id).data.tags
    assert tags["ab.promotion"] == "promoted" and tags["ab.promoted_to"] == str(daemon)


def test_a_model_treatment_becomes_a_ppo_policy(tmp_path: Path) -> None:
    from cachetuner.ab.config import ArmConfig
    from cachetuner.ab.promote import daemon_policy_for, write_policy

    model = tmp_path / "m" / "model.zip"
    model.parent.mkdir()
    model.write_bytes(b"zip")
    (model.parent / "train_config.yaml").write_text("env: {}\n")
    policy = daemon_policy_for(ArmConfig(model=str(model)))
    assert policy == {"name": "ppo", "model": str(model.resolve()),
                      "env_config": str((model.parent / "train_config.yaml").resolve())}
    daemon = tmp_path / "daemon.yaml"
    daemon.write_text(yaml.safe_dump(DAEMON))
    write_policy(daemon, policy)
    assert load_daemon_config(daemon).policy.model == str(model.resolve())
    with pytest.raises(Exception, match="fixed-config policy"):
        daemon_policy_for(ArmConfig(config=SMALL))
