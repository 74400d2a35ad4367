"""Hotness YAML and ``hotness ablation`` options a user got wrong are refused in one line before any work: an
``output_dir`` that is a file (save_model used to fail only after training), an unknown ``trace.format`` (silently
ignored for a synthetic trace), and ``--seeds ,`` / ``--seeds -1`` / ``--out FILE`` of the ablation."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from cachetuner.errors import ConfigError
from cachetuner.hotness_model.config import load_experiment

BASE = {"name": "t", "trace": {"path": "synthetic:periodic-rotation"}, "train": {"epochs": 1}}


def _cfg(tmp_path: Path, **over: object) -> Path:
    p = tmp_path / "hotness.yaml"
    p.write_text(yaml.safe_dump({**BASE, **over}))
    return p


@pytest.mark.parametrize(
    ("over", "why"),
    [
        ({"output_dir": "AFILE"}, "field 'output_dir': "),
        ({"output_dir": "AFILE/sub"}, "is a file, not a folder"),
        ({"trace": {"path": "synthetic:periodic-rotation", "format": "bogus"}},
         "field 'trace.format': unknown trace format 'bogus'; valid: auto, "),
    ],
)
def test_bad_hotness_yaml_fails_at_load(tmp_path: Path, over: dict, why: str) -> None:
    (tmp_path / "AFILE").write_text("x")
    over = {k: (str(tmp_path / v) if k == "output_dir" else v) for k, v in over.items()}
    p = _cfg(tmp_path, **over)
    with pytest.raises(ConfigError) as e:
        load_experiment(p)
    msg = str(e.value)
    assert msg.startswith(f"{p}: ") and why in msg and "\n" not in msg, msg


def test_good_hotness_yaml_still_loads(tmp_path: Path) -> None:
    cfg = load_experiment(_cfg(tmp_path, output_dir=str(tmp_path / "new" / "runs"),
                               trace={"path": "synthetic:periodic-rotation", "format": "lirs"}))
    assert cfg.trace.format == "lirs" and not (tmp_path / "new").exists()


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cachetuner.cli.main", *args], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)


def test_train_with_output_dir_a_file_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "AFILE").write_text("x")
    p = _cfg(tmp_path, output_dir="AFILE")
    r = _cli(tmp_path, "hotness", "train", "--config", str(p))
    assert r.returncode == 2 and r.stderr.strip().splitlines() == [
        f"error: {p}: field 'output_dir': AFILE: exists and is not a folder"], r.stderr


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["--from-runs", "--seeds", ","], "error: --seeds: give at least one seed, e.g. 0,1"),
        (["--from-runs", "--seeds", "-1"], "error: --seeds: seeds must be >= 0, got -1"),
        (["--seeds", "0", "--eval-seeds", ","], "error: --eval-seeds: give at least one seed, e.g. 0,1"),
        (["--out", "AFILE"], "error: --out AFILE: exists and is not a folder"),
        (["--from-runs", "--seeds", "0", "--out", "empty"],
         "error: --from-runs: no trained run without_hotness_s0 (model.zip) under --out empty (and 1 more); "
         "train it or pass the --seeds that were trained"),
    ],
)
def test_ablation_options_are_one_line_before_work(tmp_path: Path, args: list[str], line: str) -> None:
    (tmp_path / "AFILE").write_text("x")
    (tmp_path / "empty").mkdir()
    r = _cli(tmp_path, "hotness", "ablation", *args)
    assert r.returncode == 2 and r.stdout == "" and r.stderr.strip().splitlines() == [line], r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["AFILE", "empty"]  # no runs/ folder, no LSTM training
