"""Every YAML config is read by cachetuner.yamlconfig.load_yaml: what a user can hand it by mistake gets one line
naming the file (and the line), never a traceback, and a key written twice is refused instead of losing a value."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cachetuner.errors import ConfigError
from cachetuner.yamlconfig import load_yaml

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b"seed: 1\nenv:\n  interval_s: 5\n  interval_s: 10\n", ":4: invalid YAML (duplicate key 'interval_s'"),
        (b"seed: \xff\xfe\n", "not UTF-8 text (byte 0xff at offset 6)"),
        (bytes(range(256)), "not UTF-8 text"),
        (b"a: [1, 2\n", "invalid YAML"),
    ],
)
def test_bad_files_are_one_line_errors_naming_the_file(tmp_path: Path, content: bytes, why: str) -> None:
    f = tmp_path / "c.yaml"
    f.write_bytes(content)
    with pytest.raises(ConfigError) as e:
        load_yaml(f)
    assert str(e.value).startswith(str(f)) and why in str(e.value) and "\n" not in str(e.value)


def test_paths_that_are_not_config_files(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path, why in ((tmp_path, "a directory, not a config file"), (tmp_path / "none.yaml", "config file not found"),
                      (fifo, "not a regular file")):
        with pytest.raises(ConfigError, match=why):
            load_yaml(path)


def test_merge_keys_may_override_what_they_merge(tmp_path: Path) -> None:
    f = tmp_path / "m.yaml"
    f.write_text("base: &b {a: 1, b: 2}\nx:\n  <<: *b\n  b: 3\n")
    assert load_yaml(f)["x"] == {"a": 1, "b": 3}


def test_every_shipped_yaml_still_loads() -> None:
    files = [*ROOT.glob("experiments/*.yaml"), *ROOT.glob("deploy/*.y*ml"), *ROOT.glob("cachetuner/**/*.yaml")]
    assert len(files) > 30
    for f in files:
        assert isinstance(load_yaml(f), dict), f


def test_cli_prints_the_one_line(tmp_path: Path) -> None:
    f = tmp_path / "suite.yaml"
    f.write_bytes(b"traces: \xff\n")
    r = subprocess.run([sys.executable, "-m", "cachetuner.cli.main", "evaluate", "--suite", str(f)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stderr == f"error: {f}: not UTF-8 text (byte 0xff at offset 8); a config file is YAML\n"


def test_a_dotted_section_reads_a_nested_one(tmp_path: Path) -> None:
    from cachetuner.env import EnvConfig

    f = tmp_path / "exp.yaml"
    f.write_text("eval:\n  env:\n    interval_s: 7\n")
    assert EnvConfig.from_yaml(f, key="eval.env").interval_s == 7
    with pytest.raises(ConfigError, match=r"field 'eval.nope': missing section"):
        EnvConfig.from_yaml(f, key="eval.nope")
    with pytest.raises(ConfigError, match=r"field 'eval.env.interval_s'"):
        f.write_text("eval:\n  env:\n    interval_s: -1\n")
        EnvConfig.from_yaml(f, key="eval.env")
    r = subprocess.run([sys.executable, "-m", "cachetuner.cli.main", "env", "info", "--section", "env"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stderr == "error: --section: only with --config (the section of that YAML to read)\n"
