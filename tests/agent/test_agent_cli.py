"""``cachetuner train`` and ``cachetuner evaluate`` end to end through the real CLI (subprocesses), with
tiny budgets and a throw-away MLflow store."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

CLI = [sys.executable, "-m", "cachetuner.cli.main"]

TINY_ENV = {
    "interval_s": 10,
    "episode_intervals": 6,
    "warmup_intervals": 1,
    "workloads": [{"trace": "synthetic:shifting", "rate": 100, "seed": 1, "params": {"n_requests": 12000, "n_keys": 2000}}],
    "actions": {"policies": ["allkeys-lru", "allkeys-lfu"], "timeouts": [0, 300]},
    "reward": {"miss_cost": 0.0002, "memory_cost_per_gb_hour": 100.0, "slo_penalty": 0.0, "switch_cost": 0.0002},
    "whatif": {"sizes": [0.7, 1.3]},
}


def _tiny_config(tmp: Path) -> dict:
    return {
        "experiment": "tiny",
        "seed": 0,
        "total_timesteps": 48,
        "n_envs": 2,
        "ppo": {"n_steps": 12, "batch_size": 12, "n_epochs": 2, "net_arch": [16]},
        "env": TINY_ENV,
        "eval": {"eval_freq": 24},
        "early_stop": {"enabled": True, "max_no_improvement_evals": 2, "min_evals": 1},
        "checkpoint_freq": 24,
        "output_dir": str(tmp / "runs"),
        "baselines": {"grid": {"n_sizes": 3}},
    }


def run_cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("MLFLOW_TRACKING_URI", None)
    return subprocess.run(CLI + args, cwd=cwd, env=env, capture_output=True, text=True, timeout=400)


@pytest.fixture(scope="module")
def trained(tmp_path_factory, mlflow_store) -> dict:
    tmp = tmp_path_factory.mktemp("train")
    cfg_path = tmp / "tiny.yaml"
    cfg_path.write_text(yaml.safe_dump(_tiny_config(tmp)))
    uri = mlflow_store(tmp)
    proc = run_cli(["train", str(cfg_path), "--json", "--tracking-uri", uri], tmp)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {"tmp": tmp, "uri": uri, "proc": proc, "result": json.loads(proc.stdout.strip().splitlines()[-1])}


def test_train_prints_one_json_object_on_stdout(trained) -> None:
    lines = [ln for ln in trained["proc"].stdout.splitlines() if ln.strip()]
    assert len(lines) == 1
    res = trained["result"]
    assert {"mlflow_run_id", "model_path"} <= set(res)
    assert res["timesteps"] >= 48


def test_train_writes_a_loadable_model_and_its_config(trained) -> None:
    from stable_baselines3 import PPO

    path = Path(trained["result"]["model_path"])
    assert path.is_file()
    model = PPO.load(path, device="cpu")
    assert model.action_space.nvec.tolist() == [5, 2, 2]
    assert (path.parent / "train_config.yaml").is_file()
    # the price feature's range on the training distribution, measured after training (support_episodes), is part
    # of the artifact, so defer_outside can be turned on for it; the run logs it too
    side = yaml.safe_load((path.parent / "train_config.yaml").read_text())
    lo, hi = side["controllers"]["ppo"]["price_support"]
    assert 0.0 <= lo <= hi < 1.0
    from cachetuner.control.learned import load_policy

    assert load_policy(path).ppo.price_support == (lo, hi)


def test_train_records_the_mlflow_run(trained) -> None:
    import mlflow

    mlflow.set_tracking_uri(trained["uri"])
    client = mlflow.MlflowClient()
    run = client.get_run(trained["result"]["mlflow_run_id"])
    assert run.info.run_name.startswith("SimRedis-v0__tiny__0__")
    assert run.data.params["ppo.n_steps"] == "12"
    for key in ("rollout.reward_mean", "rollout.hit_ratio", "rollout.cost_total", "rollout.maxmemory_mib_mean",
                "rollout.policy_share.allkeys-lru", "train.value_loss", "eval.mean_reward", "final_eval.ppo.cost",
                "support.price_low", "support.price_high"):
        assert key in run.data.metrics, key
    arts = {a.path for d in ("model", "config", "plots") for a in client.list_artifacts(run.info.run_id, d)}
    assert "model/model.zip" in arts
    assert "config/train_config.yaml" in arts
    assert {f"plots/eval_{k}.png" for k in ("hit_ratio", "maxmemory", "policy", "cost")} <= arts
    assert run.data.tags["model_path"] == trained["result"]["model_path"]


def test_evaluate_json_shape(trained) -> None:
    tmp = trained["tmp"]
    proc = run_cli(
        ["evaluate", "--model", trained["result"]["model_path"], "--trace", "synthetic:zipf", "--rate", "100",
         "--limit", "8000", "--json", "--tracking-uri", trained["uri"]],
        tmp,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
    assert len(lines) == 1
    res = json.loads(lines[0])
    assert set(res["tuners"]) == {"ppo", "mrc", "static-default", "best-static", "dp-hindsight", "hill-climb"}
    for summary in res["tuners"].values():
        assert {"cost", "hit_ratio", "byte_hit_ratio", "p95_latency_ms", "mean_maxmemory_bytes", "slo_violations",
                "config_changes", "savings_vs_default", "regret", "hindsight"} <= set(summary)
        assert 0.0 <= summary["hit_ratio"] <= 1.0
    hind = {k for k, s in res["tuners"].items() if s["hindsight"]}
    assert hind == {"best-static", "dp-hindsight"}
    assert res["best_hindsight"]["tuner"] in hind
    assert min(res["tuners"][k]["regret"] for k in hind) == 0.0
    assert res["tuners"]["static-default"]["savings_vs_default"] == 0.0
    intervals = {s["intervals"] for s in res["tuners"].values()}
    assert len(intervals) == 1  # same traffic for everyone
    assert "gap_closed" in res and res["mlflow_run_id"]
    import mlflow

    mlflow.set_tracking_uri(trained["uri"])
    client = mlflow.MlflowClient()
    run = client.get_run(res["mlflow_run_id"])
    assert "ppo.cost" in run.data.metrics
    assert "plots/eval_hit_ratio.png" in {a.path for a in client.list_artifacts(run.info.run_id, "plots")}


def _one_line_error(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr
    assert proc.stdout.strip() == ""
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr
    return lines[0]


def test_bad_config_field_is_one_line_naming_field_and_file(tmp_path) -> None:
    cfg = _tiny_config(tmp_path)
    cfg["ppo"]["learnin_rate"] = 0.1
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(cfg))
    line = _one_line_error(run_cli(["train", str(path)], tmp_path))
    assert "bad.yaml" in line and "ppo.learnin_rate" in line and "unknown field" in line


def _in_process_error(args: list[str]) -> str:
    """Run the CLI in-process (typer's CliRunner: no interpreter start-up) and return the CacheTunerError
    message that ``main()`` would print as its one line."""
    from typer.testing import CliRunner

    from cachetuner.cli.main import _load_commands, app
    from cachetuner.errors import CacheTunerError

    _load_commands()
    result = CliRunner().invoke(app, args)
    assert isinstance(result.exception, CacheTunerError), (result.exception, result.output)
    message = str(result.exception)
    assert "\n" not in message
    return message


def test_bad_env_value_names_field_and_file(tmp_path) -> None:
    cfg = _tiny_config(tmp_path)
    cfg["env"]["interval_s"] = -5
    path = tmp_path / "bad_env.yaml"
    path.write_text(yaml.safe_dump(cfg))
    line = _in_process_error(["train", str(path)])
    assert "bad_env.yaml" in line and "env.interval_s" in line


def test_missing_config_and_unknown_tuner_name_the_culprit(tmp_path) -> None:
    assert "nope.yaml" in _in_process_error(["train", str(tmp_path / "nope.yaml")])
    line = _in_process_error(["evaluate", "--trace", "synthetic:zipf", "--tuners", "static-default,magic"])
    assert "magic" in line and "best-static" in line


def test_budget_option_builds_the_regime_and_bad_prices_name_the_option() -> None:
    from cachetuner.reports.evaluate import price_option

    assert price_option("budget", "10%").budget_fraction == pytest.approx(0.1)
    by_bytes = price_option(None, "64mb")
    assert by_bytes.preset == "budget" and by_bytes.budget_bytes == 64 * 2**20
    assert price_option("list", None) == "list"
    assert "--budget" in _in_process_error(["evaluate", "--trace", "synthetic:zipf", "--prices", "budget"])
    assert "'luxury'" in _in_process_error(["evaluate", "--trace", "synthetic:zipf", "--prices", "luxury"])
    assert "--prices list" in _in_process_error(["evaluate", "--trace", "synthetic:zipf", "--prices", "list",
                                                 "--budget", "10%"])
    assert "--budget" in _in_process_error(["evaluate", "--trace", "synthetic:zipf", "--budget", "ten%"])


def test_a_bad_trace_option_value_names_the_option() -> None:
    """``--rate -5`` was a pydantic traceback in ``evaluate`` (and an unnamed "1 validation error" line in ``ab``)."""
    line = _in_process_error(["evaluate", "--trace", "synthetic:zipf", "--rate", "-5"])
    assert line == "--rate: Input should be greater than 0, got -5.0"
    line = _in_process_error(["ab", "run", "--config", "experiments/ab_quickstart.yaml", "--trace", "synthetic:zipf",
                              "--rate", "0"])
    assert line.startswith("--rate: ") and "got 0.0" in line


def test_a_trace_that_cannot_be_read_fails_before_the_progress_display(shared_traces) -> None:
    """``evaluate`` reads its trace before it shows a progress line per controller: the user sees the one-line
    error alone (it names the file once), not six "waiting" lines and then the error."""
    from typer.testing import CliRunner

    from cachetuner.cli.main import _load_commands, app

    _load_commands()
    orm = shared_traces / "cache2k" / "orm-night.trace.zst"  # raw keys: no magic number, so --format is needed
    result = CliRunner().invoke(app, ["evaluate", "--trace", str(orm), "--tuners", "static-default,mrc"])
    message = str(result.exception)
    assert message.startswith(f"env.workloads.0.trace: {orm}: cannot tell the trace format"), message
    assert message.count(str(orm)) == 1 and "--format" in message
    assert "waiting" not in result.output


def test_a_short_episode_gets_a_note_under_the_table(shared_traces, tmp_path, monkeypatch) -> None:
    """Online controllers' regret on a few dozen intervals is mostly learning (the audits' worst cells): the table
    says so under itself, and only when an online controller was run."""
    from typer.testing import CliRunner

    from cachetuner.cli.main import _load_commands, app

    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    monkeypatch.setenv("COLUMNS", "200")
    _load_commands()
    cs = str(shared_traces / "lirs" / "cs.trace")
    base = ["evaluate", "--trace", cs, "--format", "lirs", "--rate", "10"]  # 6,781 requests: a short episode
    online = CliRunner().invoke(app, [*base, "--tuners", "static-default,mrc"])
    assert online.exit_code == 0, online.output
    said = " ".join(online.output.split())
    assert re.search(r"note: only \d+ intervals\. Online controllers learn", said)
    assert "--rate 100 spreads it over ten times as many intervals" in said  # how to get a longer episode
    static = CliRunner().invoke(app, [*base, "--tuners", "static-default,best-static"])
    assert static.exit_code == 0, static.output
    assert "note: only" not in static.output


def test_support_prints_the_price_features_training_range_as_one_json_object() -> None:
    """``cachetuner support``: the shipped policy rolled out on seeded episodes of its training distribution; the range
    is the 0.5-99.5 % quantiles of the feature, so it lies within the values seen, and it is the same on a rerun."""
    cmd = [*CLI, "support", "--model", "default", "--episodes", "3", "--json"]
    runs = [subprocess.run(cmd, capture_output=True, text=True, timeout=300) for _ in range(2)]
    assert all(p.returncode == 0 for p in runs), runs[0].stderr[-2000:]
    a, b = (json.loads(p.stdout.strip()) for p in runs)
    assert a == b  # seeded
    lo, hi = a["price_support"]
    assert 0.0 <= a["min"] <= lo < hi <= a["max"] < 1.0 and a["decisions"] > 3 and a["episodes"] == 3
