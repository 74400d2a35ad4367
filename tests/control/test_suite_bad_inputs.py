"""A suite file a user got wrong is refused before its first cell, in one line naming the file and the field:
an empty grid would print an empty report with exit 0, and two trace entries of one name would be reported as one."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from cachetuner.errors import ConfigError
from cachetuner.reports.suite import SuiteConfig
from cachetuner.yamlconfig import load_model

TRACE = {"trace": "synthetic:zipf"}


@pytest.mark.parametrize(
    ("over", "why"),
    [
        ({"seeds": []}, "field 'seeds': List should have at least 1 item"),
        ({"seeds": [0, -1]}, "field 'seeds.1': Input should be greater than or equal to 0"),
        ({"prices": []}, "field 'prices': List should have at least 1 item"),
        ({"controllers": []}, "field 'controllers': List should have at least 1 item"),
        ({"traces": [TRACE, {**TRACE, "rate": 50}]}, "field 'traces': two or more entries are labelled 'synthetic:zipf'"),
        ({"full": {"seeds": []}}, "field 'full.seeds': List should have at least 1 item"),
    ],
)
def test_bad_suites_are_refused_naming_the_field(tmp_path: Path, over: dict, why: str) -> None:
    f = tmp_path / "suite.yaml"
    f.write_text(yaml.safe_dump({"traces": [TRACE], **over}))
    with pytest.raises(ConfigError) as e:
        load_model(SuiteConfig, f)
    assert str(e.value).startswith(f"{f}: ") and why in str(e.value), str(e.value)


def test_distinct_names_make_one_file_two_traces(tmp_path: Path) -> None:
    f = tmp_path / "suite.yaml"
    f.write_text(yaml.safe_dump({"traces": [{**TRACE, "name": "a"}, {**TRACE, "name": "b", "rate": 50}]}))
    assert [t.label for t in load_model(SuiteConfig, f).traces] == ["a", "b"]


def test_full_needs_a_full_section(tmp_path: Path) -> None:
    f = tmp_path / "suite.yaml"
    f.write_text(yaml.safe_dump({"traces": [TRACE]}))
    suite = load_model(SuiteConfig, f)
    assert suite.resolved(False, f) is suite
    with pytest.raises(ConfigError, match=r"suite.yaml: --full: the suite has no full: section"):
        suite.resolved(True, f)


@pytest.mark.parametrize(
    ("args", "why"),
    [
        (["evaluate", "--tuners", ","], "--tuners: give at least one controller name (omit --tuners for all)"),
        (["evaluate", "--suite", "{tmp}/s.yaml", "--rate", "100", "--tuners", "mrc"],
         "--rate: with --suite these come from the suite file"),
        (["evaluate", "--suite", "{tmp}/s.yaml", "--tuners", ","],
         "--tuners: give at least one controller name (omit --tuners for the suite's)"),
        (["evaluate", "--suite", "{tmp}/s.yaml", "--model", "default", "--set", "controllers.mrc.confrim=4"],
         "--set 'controllers.mrc.confrim=4': no field 'confrim' in controllers.mrc (did you mean confirm?)"),
        (["evaluate", "--trace", "synthetic:zipf", "--set", "controllers.mrc.confirm=0"],
         "--set: field 'controllers.mrc.confirm': Input should be greater than or equal to 1"),
        (["evaluate", "--full"], "--full: only with --suite"),
        (["evaluate", "--redraw-keys"], "--redraw-keys: only with --suite"),
        (["bench", "mrc", "--traces", ","], "--traces: give at least one trace path (omit --traces for all)"),
        (["evaluate", "--model", "{tmp}/g.zip"], "{tmp}/g.zip: not a trained policy (model.zip from `cachetuner train`)"),
        (["evaluate", "--model", "{tmp}/other.zip"],
         "{tmp}/other.zip: not a trained policy (a zip without stable-baselines3's data and policy.pth)"),
    ],
)
def test_evaluate_inputs_are_one_line(tmp_path: Path, args: list[str], why: str) -> None:
    import subprocess
    import sys
    import zipfile

    (tmp_path / "g.zip").write_bytes(b"garbage")
    (tmp_path / "s.yaml").write_text(yaml.safe_dump({"traces": [TRACE]}))
    with zipfile.ZipFile(tmp_path / "other.zip", "w") as z:
        z.writestr("a.txt", "x")
    r = subprocess.run([sys.executable, "-m", "cachetuner.cli.main", *[a.format(tmp=tmp_path) for a in args]],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stderr.startswith(f"error: {why.format(tmp=tmp_path)}") and r.stderr.count("\n") == 1
