"""Sweep YAML mistakes that used to pass ``load_sweep`` and fail late (after MLflow's store was made, inside every
Ray trial, or after all trials ran) are refused at load in one line naming the file and the field."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from sweeptest_support import TINY_ENV, sweep_yaml

from cachetuner.errors import ConfigError
from cachetuner.sweep import load_sweep

SEARCH3 = {"ppo.learning_rate": {"loguniform": [1e-4, 1e-3]}, "ppo.ent_coef": {"uniform": [0.0, 0.1]},
           "seed": {"randint": [0, 3]}}
GOOD_POINT = {"ppo.learning_rate": 1e-4, "ppo.ent_coef": 0.01, "seed": 1}


def _sweep(tmp_path: Path, **over: object) -> Path:
    return sweep_yaml(tmp_path, TINY_ENV, **over)


@pytest.mark.parametrize(
    ("over", "why"),
    [
        ({"output_dir": "AFILE"}, "AFILE: exists and is not a folder"),
        ({"output_dir": "AFILE/sub"}, "is a file, not a folder"),
        ({"search": SEARCH3, "points_to_evaluate": [GOOD_POINT, {**GOOD_POINT, "ppo.learning_rate": -5}]},
         "field 'points_to_evaluate.1.ppo.learning_rate': Input should be greater than 0 (got -5)"),
        ({"search": SEARCH3, "points_to_evaluate": [{**GOOD_POINT, "ppo.ent_coef": "abc"}]},
         "field 'points_to_evaluate.0.ppo.ent_coef': Input should be a valid number"),
        ({"search": SEARCH3, "points_to_evaluate": [{**GOOD_POINT, "seed": -1}]},
         "field 'points_to_evaluate.0.seed': Input should be greater than or equal to 0 (got -1)"),
        ({"search": {"ppo.n_epochs": {"uniform": [4, 8]}}},
         "field 'search.ppo.n_epochs.uniform': draws fractional values (e.g. 4.5) but ppo.n_epochs is an integer "
         "field; use randint: [4, 8]"),
        ({"search": {"total_timesteps": {"loguniform": [1024, 4096]}}}, "field 'search.total_timesteps.loguniform'"),
        ({"register_as": "bad name/with:colon"}, "field 'register_as': String should match pattern"),
        ({"experiment": ""}, "field 'experiment': String should have at least 1 character"),
    ],
)
def test_late_failing_sweep_configs_fail_at_load(tmp_path: Path, over: dict, why: str) -> None:
    (tmp_path / "AFILE").write_text("x")
    over = {k: (str(tmp_path / v) if k == "output_dir" else v) for k, v in over.items()}
    p = _sweep(tmp_path, **over)
    with pytest.raises(ConfigError) as e:
        load_sweep(p)
    msg = str(e.value)
    assert msg.startswith(f"{p}: ") and why in msg and "\n" not in msg, msg


def test_float_ranges_on_float_fields_and_good_points_still_load(tmp_path: Path) -> None:
    sweep = load_sweep(_sweep(tmp_path, search={**SEARCH3, "ppo.gamma": {"uniform": [0.9, 0.99]}},
                              points_to_evaluate=[{**GOOD_POINT, "ppo.gamma": 0.95}], register_as="cachetuner-ok.v1",
                              output_dir=str(tmp_path / "new" / "out")))
    assert sweep.cfg.model_name == "cachetuner-ok.v1"
    assert not (tmp_path / "new").exists()  # checked, not created at load


def test_cli_output_dir_file_is_one_line_before_any_store_is_made(tmp_path: Path) -> None:
    (tmp_path / "AFILE").write_text("x")
    p = _sweep(tmp_path, output_dir=str(tmp_path / "AFILE"))
    r = subprocess.run([sys.executable, "-m", "cachetuner.cli.main", "sweep", str(p), "--json"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stdout == "", r.stderr
    assert r.stderr.strip().splitlines() == [f"error: {p}: field 'output_dir': {tmp_path / 'AFILE'}: exists and is not a folder"]
    assert sorted(x.name for x in tmp_path.iterdir()) == ["AFILE", "sweep.yaml"]  # no mlflow.db, no mlruns
