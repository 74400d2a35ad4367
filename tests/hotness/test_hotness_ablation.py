"""The hotness ablation end to end at a tiny budget: LSTM on the training workloads, both arms of the
shipped recipe's PPO (deadline stop + resume), the artifacts the ``ppo`` controller rebuilds, the
held-out evaluation and the summary table."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import yaml

from cachetuner.control.learned import load_policy
from cachetuner.reports.hotness_ablation import (
    ARMS,
    arm_config,
    evaluate_runs,
    format_table,
    run_dir,
    summarise,
    train_arm,
    train_hotness_lstm,
)

SMALL = {"n_requests": 12000, "n_keys": 2000}


def tiny_recipe(tmp_path: Path) -> Path:
    """experiments/general.yaml with two small synthetic training workloads and a short evaluation."""
    raw = yaml.safe_load(Path("experiments/general.yaml").read_text())
    raw["env"]["workloads"] = [
        {"trace": "synthetic:shifting", "name": "s1", "rate": 100, "seed": 1, "params": SMALL},
        {"trace": "synthetic:scan", "name": "loops", "rate": 100, "seed": 2,
         "params": {**SMALL, "scan_every": 500, "scan_length": 300, "cold_keys": 5000}},
    ]
    raw["env"]["episode_intervals"] = 8
    raw["env"]["mrc"]["n_sizes"] = 8
    raw["eval"]["eval_freq"] = 64
    raw["eval"]["env"] = {**raw["env"], "prices": raw["eval"]["env"]["prices"],
                          "workloads": [{"trace": "synthetic:shifting", "name": "val", "rate": 100, "seed": 9, "params": SMALL}]}
    raw["ppo"]["n_steps"] = 16
    raw["ppo"]["batch_size"] = 32
    raw["ppo"]["n_epochs"] = 1
    p = tmp_path / "recipe.yaml"
    p.write_text(yaml.safe_dump(raw))
    suite = {"name": "tiny", "controllers": ["ppo", "static-default", "best-static"], "prices": ["scaled"], "seeds": [0],
             "intervals": 6, "traces": [{"trace": "synthetic:zipf", "name": "zipf", "size_model": None, "rate": 100}]}
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump(suite))
    return p


def test_ablation_arms_train_resume_and_evaluate(tmp_path: Path) -> None:
    recipe = tiny_recipe(tmp_path)
    lstm = train_hotness_lstm(arm_config(recipe, "without_hotness", 0), tmp_path / "lstm", epochs=1, max_train_rows=2000)
    runs = {}
    for arm in ARMS:
        cfg = arm_config(recipe, arm, 0, lstm_path=lstm, timesteps=160, n_envs=2, vec_env="dummy", max_keys=256)
        d = run_dir(tmp_path / "runs", arm, 0)
        first = train_arm(cfg, d, deadline=time.time())  # stops at once: a checkpoint to resume from
        assert not first["finished"] and first["steps"] < 160
        st = train_arm(cfg, d)
        assert st["finished"] and st["steps"] >= 160 and st["pieces"] == 2 and st["evals"] >= 1
        runs[(arm, 0)] = d
    dims = {arm: load_policy(runs[(arm, 0)] / "model.zip").model.observation_space.shape[0] for arm in ARMS}
    assert dims["with_hotness"] == dims["without_hotness"] + 4
    side = yaml.safe_load((runs[("with_hotness", 0)] / "train_config.yaml").read_text())
    assert side["hotness"]["enabled"] and side["hotness"]["lstm_path"] == "hotness.pt"
    assert (runs[("with_hotness", 0)] / "hotness.pt").is_file()
    assert load_policy(runs[("without_hotness", 0)] / "model.zip").hotness is None

    rows = evaluate_runs(runs, tmp_path / "suite.yaml")
    assert {r["arm"] for r in rows} == {*ARMS, "ref:mrc"}
    assert all(np.isfinite(r["savings_vs_default"]) and np.isfinite(r["regret"]) for r in rows)
    summary = summarise(rows, {k: yaml.safe_load((d / "state.json").read_text()) for k, d in runs.items()})
    assert summary["arms"]["with_hotness"]["obs_dim"] == dims["with_hotness"]
    assert "with_hotness" in format_table(summary) and "mrc" in summary["references"]
