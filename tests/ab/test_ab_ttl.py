"""TTL A/B on the simulator: arms that differ only in TTL policy, the report's TTL fields, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import yaml
from abtest_support import TTL_CFG as CFG
from abtest_support import TTL_ENV as ENV
from typer.testing import CliRunner

import cachetuner.cli.ab_cmds  # noqa: F401  (registers the commands)
from cachetuner.ab.config import ABConfig, load_ab_config
from cachetuner.ab.runner import run_ab
from cachetuner.cli.app import app
from cachetuner.errors import ConfigError
from cachetuner.hotness_model.model import HotnessLSTM, LSTMConfig
from cachetuner.hotness_model.train import save_model


@pytest.fixture(scope="module")
def model_pt(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch.manual_seed(1)
    cfg = LSTMConfig(seq_len=16, hidden=8, layers=1)
    return save_model(HotnessLSTM(cfg), tmp_path_factory.mktemp("m"), {"seq_len": 16})


def ttl_ab(control: str, treatment: str, **kw: object) -> ABConfig:
    return ABConfig.model_validate({
        "name": "ttl-test", "horizon_intervals": 30, "warmup_intervals": 2, "primary_metric": "hit_ratio",
        "env": ENV, "control": {"config": CFG, "ttl": control}, "treatment": {"config": CFG, "ttl": treatment},
        "tracking": {"enabled": False}, **kw,
    })  # fmt: skip


def test_ttl_ab_report_fields_and_pairing(model_pt: Path) -> None:
    res = run_ab(ttl_ab("fixed:300", f"hotness,model={model_pt},bucket_s=30"))
    out = res.to_json()
    assert res.intervals == 30
    assert out["mean_ttl_s"]["control"] == 300.0 and 30.0 <= out["mean_ttl_s"]["treatment"] <= 3600.0
    lo, hi = out["stale_share_delta_pp"]["ci"]
    assert lo <= out["stale_share_delta_pp"]["mean"] <= hi
    assert list(out["tenants"]) == ["default"]
    t = out["tenants"]["default"]
    assert t["hit_ratio_delta_pp"]["mean"] == pytest.approx(out["hit_ratio_delta_pp"]["mean"])
    assert set(t["p95_delta_ms"]) == {"mean", "ci"}
    # same requests in every interval, same configuration, only the TTLs differ
    assert list(res.control.series("requests")) == list(res.treatment.series("requests"))
    assert res.control.configs == res.treatment.configs


def test_aa_ttl_finds_no_difference() -> None:
    res = run_ab(ttl_ab("rules", "rules"))
    out = res.to_json()
    assert out["hit_ratio_delta_pp"]["mean"] == 0.0 and out["stale_share_delta_pp"]["mean"] == 0.0
    assert res.verdict.verdict == "no significant difference"


def test_shorter_ttl_costs_hits() -> None:
    """A known answer: 10 s TTLs on traffic whose keys return after minutes lose hits against 1 h."""
    res = run_ab(ttl_ab("fixed:3600", "fixed:10"))
    assert res.verdict.verdict == "worse" and res.to_json()["hit_ratio_delta_pp"]["ci"][1] < 0


def test_ttl_ab_config_errors(tmp_path: Path) -> None:
    bad = tmp_path / "ab.yaml"
    cases = [
        ({"control": {"tuner": "mrc", "ttl": "fixed:300"}, "treatment": {"config": CFG, "ttl": "rules"}},
         "field 'control': a TTL A/B holds one fixed `config:`"),
        ({"control": {"config": CFG, "ttl": "fixed:300"}, "treatment": {"config": {**CFG, "maxmemory": 1}, "ttl": "rules"}},
         "field 'treatment.config': must equal control.config"),
        ({"control": {"config": CFG, "ttl": "fixed:300"}, "treatment": {"config": CFG, "ttl": "nope"}},
         "field 'treatment.ttl': unknown TTL policy 'nope'; valid: "),
        ({"control": {"config": CFG, "ttl": "fixed"}, "treatment": {"config": CFG, "ttl": "rules"}},
         "field 'control.ttl': 'fixed': fixed needs seconds"),
        ({"mode": "shadow", "shadow": {"modulus": 1000},
          "control": {"config": CFG, "ttl": "fixed:300"}, "treatment": {"config": CFG, "ttl": "rules"}},
         "field 'shadow.modulus': the live replayer samples modulo 2^24"),
    ]  # fmt: skip
    for doc, msg in cases:
        bad.write_text(yaml.safe_dump({"horizon_intervals": 10, **doc}))
        with pytest.raises(ConfigError) as e:
            load_ab_config(bad)
        assert str(e.value).startswith(f"{bad}: {msg}"), str(e.value)
    with pytest.raises(ConfigError, match="<ab config>: field 'treatment.ttl': unknown TTL policy 'nope'"):
        run_ab(ttl_ab("fixed:300", "nope"))


def test_cli_ab_ttl_json_with_trace_override(tmp_path: Path, model_pt: Path, mlflow_store) -> None:
    cfg = yaml.safe_load(Path("experiments/ab_ttl.yaml").read_text())
    cfg.update(horizon_intervals=6, warmup_intervals=1, tracking={"tracking_uri": mlflow_store(tmp_path)})
    cfg["treatment"]["ttl"] = f"hotness,model={model_pt},bucket_s=30"
    path = tmp_path / "ab_ttl.yaml"
    path.write_text(yaml.safe_dump(cfg))
    res = CliRunner().invoke(app, ["ab", "--config", str(path), "--trace", "bundled:web12", "--rate", "20",
                                   "--size-model", "fixed:1000", "--json"])  # fmt: skip
    assert res.exit_code == 0, res.output[-2000:]
    out = json.loads(res.stdout)
    assert out["intervals"] == 6 and out["mlflow_run_id"]
    for key in ("hit_ratio_delta_pp", "p95_delta_ms", "stale_share_delta_pp", "mean_ttl_s", "tenants"):
        assert key in out
    assert out["meta"]["workload_label"] == "bundled:web12" and out["tenants"]["default"]["p95_delta_ms"]["ci"]
