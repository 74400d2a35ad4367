"""Files a command writes where the user said (cachetuner.outputs): a folder, a missing folder, a format
matplotlib cannot write or an existing file without --force is refused in one line before any work."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cachetuner.errors import ConfigError
from cachetuner.outputs import IMAGE_SUFFIXES, check_output_file

CLI = [sys.executable, "-m", "cachetuner.cli.main"]


def test_check_output_file(tmp_path: Path) -> None:
    (tmp_path / "old.csv").write_text("x")
    assert check_output_file(tmp_path / "a.png", "--plot", suffixes=IMAGE_SUFFIXES) == tmp_path / "a.png"
    assert check_output_file(tmp_path / "A.PNG", "--plot", suffixes=IMAGE_SUFFIXES)  # suffixes in any case
    for path, kw, why in (
        (tmp_path, {}, "a directory; give a file name"),
        (tmp_path / "no" / "a.png", {}, f"folder {tmp_path / 'no'} does not exist"),
        (tmp_path / "a.txt", {"suffixes": IMAGE_SUFFIXES}, "expected a file ending in .png, .svg, .pdf"),
        (tmp_path / "old.csv", {"force": False}, "exists; pass --force to overwrite it"),
        (tmp_path / "old.csv" / "x" / "a.png", {}, f"{tmp_path / 'old.csv'} is a file, not a folder"),
    ):
        with pytest.raises(ConfigError, match=why):
            check_output_file(path, "--out", **kw)


@pytest.mark.parametrize(
    ("args", "why"),
    [
        (["recommend", "--no-mlflow", "--plot", "{tmp}"], "--plot {tmp}: a directory; give a file name"),
        (["recommend", "--no-mlflow", "--plot", "{tmp}/r.txt"], "--plot {tmp}/r.txt: expected a file ending in .png"),
        (["recommend", "--no-mlflow", "--plot", "{tmp}/no/r.png"], "--plot {tmp}/no/r.png: folder {tmp}/no does not exist"),
        (["recommend", "--no-mlflow", "--memory-price", "inf"], "--memory-price: must be a finite number >= 0, got inf"),
        (["recommend", "--no-mlflow", "--current", "0"], "--current '0': the size must be at least 1 byte"),
        (["recommend", "--no-mlflow", "--min-size", "0"], "--min-size: the smallest size must be at least 1 byte"),
        (["recommend", "--no-mlflow", "--budget", "0"], "--budget '0': the cap must be at least 1 byte"),
        (["trace", "convert", "--trace", "bundled:web07", "--to", "csv", "--out", "{tmp}/no/a.csv"],
         "--out {tmp}/no/a.csv: folder {tmp}/no does not exist"),
        (["trace", "convert", "--trace", "bundled:web07", "--to", "csv", "--out", "{tmp}", "--force"],
         "--out {tmp}: a directory; give a file name"),
    ],
)
def test_cli_refuses_bad_output_paths_in_one_line(tmp_path: Path, args: list[str], why: str) -> None:
    r = subprocess.run(CLI + [a.format(tmp=tmp_path) for a in args], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stderr.startswith(f"error: {why.format(tmp=tmp_path)}"), r.stderr
    assert r.stderr.count("\n") == 1
    assert list(tmp_path.iterdir()) == []  # nothing written, no folder made


def test_run_directories_are_claimed_once_even_by_concurrent_trainings(tmp_path: Path) -> None:
    """Two trainings of one config started in the same second have the same run name (a sweep's concurrent trials
    share a seed); each must get its own directory, or one reads the other's half-written ``best_model.zip``."""
    from concurrent.futures import ThreadPoolExecutor

    from cachetuner.outputs import claim_dir

    name = "SimRedisDiscrete-v0__sweep__0__1796465155"
    with ThreadPoolExecutor(8) as pool:
        dirs = list(pool.map(lambda _: claim_dir(tmp_path / "trials", name), range(16)))
    assert len(set(dirs)) == 16 and all(d.is_dir() for d in dirs)
    assert {d.name for d in dirs} == {name, *(f"{name}-{n}" for n in range(2, 17))}
