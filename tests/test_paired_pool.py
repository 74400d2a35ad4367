"""Paired comparison of controllers over suite cells, and ``cachetuner pool`` over several suite results."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.stats import binomtest
from scipy.stats import t as student_t

from cachetuner.errors import ConfigError
from cachetuner.reports.paired import (
    CHEAPER,
    DEARER,
    MORE_OFTEN_CHEAPER,
    MORE_OFTEN_DEARER,
    NO_DIFFERENCE,
    compare_pair,
    paired_against,
)
from cachetuner.reports.pool import pool_results
from cachetuner.reports.suite import summarise_cells


def _cell(trace: str, best: float, costs: dict[str, float], seed: int = 0, hindsight: tuple[str, ...] = ()) -> dict[str, Any]:
    """A suite cell as run_suite writes it: each tuner's cost, regret against ``best`` and saving against
    static-default (the fields the summary and the paired comparison read)."""
    default = costs["static-default"]
    tuners = {n: {"cost": c, "regret": c / best - 1.0, "savings_vs_default": 1.0 - c / default, "hit_ratio": 0.5,
                  "mean_maxmemory_bytes": 1 << 20, "hindsight": n in hindsight} for n, c in costs.items()}
    return {"trace": trace, "prices": "scaled", "seed": seed, "tuners": tuners}


def _cells() -> list[dict[str, Any]]:
    """ppo cheaper than mrc in 2 cells, dearer in 1 (by much), the same in 2; best-static is hindsight."""
    rows = [("a", 10.0, 10.2, 10.5), ("b", 10.0, 10.1, 10.3), ("c", 20.0, 25.0, 21.0), ("d", 5.0, 5.0, 5.0),
            ("e", 8.0, 8.4, 8.4)]
    return [_cell(t, best, {"ppo": p, "mrc": m, "static-default": 2 * best, "best-static": best},
                  hindsight=("best-static",)) for t, best, p, m in rows]


def test_compare_pair_counts_cells_and_gives_the_t_interval_and_the_sign_test() -> None:
    cells = _cells()
    pc = compare_pair(cells, "ppo", "mrc")
    assert pc is not None
    assert (pc.cells, pc.cheaper, pc.dearer, pc.same) == (5, 2, 1, 2)
    d = np.array([0.2 / 10 - 0.5 / 10, 0.1 / 10 - 0.3 / 10, 5 / 20 - 1 / 20, 0.0, 0.0])
    assert pc.mean_diff == pytest.approx(d.mean())
    half = student_t.ppf(0.975, 4) * d.std(ddof=1) / math.sqrt(5)
    assert pc.ci == pytest.approx((d.mean() - half, d.mean() + half))
    assert pc.sign_p == pytest.approx(binomtest(2, 3, 0.5).pvalue)
    assert pc.largest is not None and pc.largest["trace"] == "c" and pc.largest["diff"] == pytest.approx(0.2)
    assert pc.verdict == NO_DIFFERENCE  # one large loss against two small wins: the CI spans zero
    j = pc.to_json()
    assert j["verdict"] == NO_DIFFERENCE and j["ci"] == [pc.ci[0], pc.ci[1]] and j["cells"] == 5


def test_verdict_follows_the_ci_and_a_cell_without_both_controllers_is_left_out() -> None:
    cells = [_cell(f"t{i}", 10.0, {"ppo": 10.0 + i * 0.01, "mrc": 11.0, "static-default": 20.0}) for i in range(6)]
    cells.append(_cell("only-mrc", 10.0, {"mrc": 10.0, "static-default": 20.0}))
    cheap = compare_pair(cells, "ppo", "mrc")
    dear = compare_pair(cells, "mrc", "ppo")
    assert cheap is not None and dear is not None
    assert cheap.cells == 6 and cheap.cheaper == 6 and cheap.verdict == CHEAPER
    assert dear.verdict == DEARER and dear.mean_diff == pytest.approx(-cheap.mean_diff)
    assert compare_pair(cells, "ppo", "hill-climb") is None  # no cell ran both
    one = compare_pair(cells[:1], "ppo", "mrc")
    assert one is not None and one.ci is None and one.verdict == NO_DIFFERENCE


def test_a_significant_sign_test_with_a_mean_that_is_not_is_said_so() -> None:
    """Eight small wins and one large loss: the mean's CI spans zero, the sign test (8 of 9, p = 0.039) does not;
    the verdict says which one wins more cells instead of "no significant difference"."""
    cells = [_cell(f"w{i}", 10.0, {"ppo": 10.0, "mrc": 10.01, "static-default": 20.0}) for i in range(8)]
    cells.append(_cell("loss", 10.0, {"ppo": 12.0, "mrc": 10.0, "static-default": 20.0}))
    pc, back = compare_pair(cells, "ppo", "mrc"), compare_pair(cells, "mrc", "ppo")
    assert pc is not None and back is not None and pc.ci is not None
    assert pc.ci[0] < 0 < pc.ci[1] and pc.sign_p == pytest.approx(binomtest(8, 9, 0.5).pvalue) and pc.sign_p < 0.05
    assert pc.verdict == MORE_OFTEN_CHEAPER and back.verdict == MORE_OFTEN_DEARER
    assert pc.to_json()["verdict"] == "cheaper in more cells; mean not different"
    # one win fewer: 7 of 8 (p = 0.07) is no longer significant either way
    assert compare_pair(cells[1:], "ppo", "mrc").verdict == NO_DIFFERENCE  # type: ignore[union-attr]


def test_pool_keeps_each_suites_own_summary(tmp_path: Path) -> None:
    """A pooled mean can hide a controller that wins one suite and loses another: ``by_suite`` has each suite's own."""
    cells = _cells()
    a = _write(tmp_path / "a.json", "audit-a", cells[:3])
    b = _write(tmp_path / "b.json", "audit-b", cells[3:])
    res = pool_results([a, b])
    assert list(res["by_suite"]) == ["audit-a", "audit-b"]
    for name, part in (("audit-a", cells[:3]), ("audit-b", cells[3:])):
        want = summarise_cells(part)
        got = res["by_suite"][name]
        assert got["ppo"]["regret"]["mean"] == pytest.approx(want["ppo"]["regret"]["mean"])
        assert got["mrc"]["regret"]["max"] == pytest.approx(want["mrc"]["regret"]["max"])
        assert got["ppo"]["cells"] == len(part)
    # audit-a: ppo 2 %, 1 %, 25 % against mrc 5 %, 3 %, 5 %: dearer on the mean; audit-b: 0 % and 5 % for both
    assert res["by_suite"]["audit-a"]["ppo"]["regret"]["mean"] > res["by_suite"]["audit-a"]["mrc"]["regret"]["mean"]
    assert res["by_suite"]["audit-b"]["ppo"]["regret"]["mean"] == pytest.approx(
        res["by_suite"]["audit-b"]["mrc"]["regret"]["mean"])


def test_the_ci_by_trace_resamples_whole_traces() -> None:
    """Cells of one trace move together (here: each trace's five cells share one difference), which the t interval
    over cells ignores; resampling whole traces gives the wider interval those four traces support."""
    per_trace = {"t1.trace": 10.0, "t2.trace": 10.1, "t3.trace": 10.3, "t4.trace": 10.5}  # ppo's cost; mrc 10.2
    cells = []
    for tr, cost in per_trace.items():
        for i in range(5):
            c = _cell(f"{tr}-{i}", 10.0, {"ppo": cost, "mrc": 10.2, "static-default": 20.0}, seed=i)
            cells.append({**c, "workload": f"../traces/{tr}"})
    pc = compare_pair(cells, "ppo", "mrc")
    assert pc is not None and pc.ci is not None and pc.ci_by_trace is not None and pc.traces == 4
    assert pc.ci_by_trace[1] - pc.ci_by_trace[0] > 1.5 * (pc.ci[1] - pc.ci[0])
    assert pc.ci_by_trace[0] >= -0.02 - 1e-12 and pc.ci_by_trace[1] <= 0.03 + 1e-12  # within the traces' own diffs
    assert compare_pair(cells, "ppo", "mrc").ci_by_trace == pc.ci_by_trace  # type: ignore[union-attr]  # seeded
    j = pc.to_json()
    assert j["traces"] == 4 and j["ci_by_trace"] == [pc.ci_by_trace[0], pc.ci_by_trace[1]]
    # every trace with the same mean difference: nothing to resample, the interval is that difference
    same = [{**c, "workload": f"w{i % 3}"} for i, c in enumerate(_cell(f"x{i}", 10.0, {"ppo": 10.1, "mrc": 10.3,
            "static-default": 20.0}) for i in range(9))]
    flat = compare_pair(same, "ppo", "mrc")
    assert flat is not None and flat.ci_by_trace == pytest.approx((-0.02, -0.02))
    # cells without a workload fall back to their labels; one trace only: no interval
    one = compare_pair([{**c, "workload": "only"} for c in cells], "ppo", "mrc")
    assert one is not None and one.ci_by_trace is None and one.traces == 1
    assert compare_pair(_cells(), "ppo", "mrc").traces == 5  # type: ignore[union-attr]


def test_paired_against_compares_every_online_controller_with_each_reference_once() -> None:
    paired = paired_against(_cells(), "mrc")
    assert set(paired) == {"ppo vs mrc", "static-default vs mrc"}  # best-static is hindsight, mrc the reference
    assert paired["static-default vs mrc"]["dearer"] == 5
    assert paired_against(_cells(), "hill-climb") == {}
    both = paired_against(_cells())  # static-default, then mrc: the pair of the two references only once
    assert list(both) == ["ppo vs static-default", "mrc vs static-default", "ppo vs mrc"]
    assert both["mrc vs static-default"]["cheaper"] == 5


def _write(path: Path, suite: str, cells: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps({"suite": suite, "full": False, "cells": cells, "summary": summarise_cells(cells)}))
    return path


def test_pool_results_keeps_every_cell_once_with_its_suite(tmp_path: Path) -> None:
    cells = _cells()
    a = _write(tmp_path / "a.json", "audit-a", cells[:3])
    b = _write(tmp_path / "b.json", "audit-b", cells[3:])
    res = pool_results([a, b])
    assert [s["cells"] for s in res["suites"]] == [3, 2]
    assert [c["suite"] for c in res["cells"]] == ["audit-a"] * 3 + ["audit-b"] * 2
    assert res["summary"]["ppo"]["regret"]["mean"] == pytest.approx(summarise_cells(cells)["ppo"]["regret"]["mean"])
    assert res["paired"]["ppo vs mrc"]["cheaper"] == 2 and res["paired"]["ppo vs mrc"]["largest"]["suite"] == "audit-a"
    # the same cells under another suite's name are other cells; the same file twice is not
    c = _write(tmp_path / "c.json", "audit-c", cells[:3])
    assert len(pool_results([a, c])["cells"]) == 6
    with pytest.raises(ConfigError, match=r"a\.json: cell a / scaled / seed 0 of suite 'audit-a' is also in .*a\.json"):
        pool_results([a, a])


def test_pool_rejects_bad_files_with_one_line_naming_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"cells": [\n  {"trace": "x",}\n]}')
    with pytest.raises(ConfigError, match=r"bad\.json:2: not JSON"):
        pool_results([bad])
    other = tmp_path / "other.json"
    other.write_text('{"summary": {}}')
    with pytest.raises(ConfigError, match=r"other\.json: not a suite result \(no `cells` list"):
        pool_results([other])
    partial = tmp_path / "partial.json"
    partial.write_text(json.dumps({"cells": [{"trace": "x", "prices": "scaled", "seed": 0, "tuners": {"mrc": {}}}]}))
    with pytest.raises(ConfigError, match=r"partial\.json: cells\[0\]\.tuners\.mrc lacks cost"):
        pool_results([partial])
    with pytest.raises(ConfigError, match=r"missing\.json: no such file"):
        pool_results([tmp_path / "missing.json"])


def test_pool_command_prints_json_or_tables_and_one_error_line(tmp_path: Path) -> None:
    cells = _cells()
    a = _write(tmp_path / "a.json", "audit-a", cells[:3])
    b = _write(tmp_path / "b.json", "audit-b", cells[3:])

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "cachetuner.cli.main", "pool", *args], capture_output=True,
                              text=True, timeout=120, check=False, env={**os.environ, "COLUMNS": "200"})

    uri = f"sqlite:///{tmp_path}/mlflow.db"
    p = run(str(a), str(b), "--json", "--tracking-uri", uri)
    assert p.returncode == 0, p.stderr
    res = json.loads(p.stdout)
    assert len(res["cells"]) == 5 and res["references"] == ["static-default", "mrc"]
    assert res["paired"]["ppo vs mrc"]["same"] == 2
    import mlflow

    mlflow.set_tracking_uri(uri)
    run_ = mlflow.get_run(res["mlflow_run_id"])
    assert run_.data.tags["kind"] == "pool" and run_.data.params["cells"] == "5"
    assert run_.data.metrics["paired.ppo_vs_mrc.cheaper"] == 2
    names = {f.path for f in mlflow.MlflowClient().list_artifacts(run_.info.run_id, "plots")}
    assert names == {"plots/pool_regret.png", "plots/pool_paired.png"}
    p = run(str(a), str(b), "--tracking-uri", uri)
    assert p.returncode == 0, p.stderr
    assert "5 cells pooled from audit-a (3), audit-b (2)" in p.stdout and "ppo vs mrc" in p.stdout
    assert "ppo vs static-default" in p.stdout
    assert "2 / 1 / 2" in p.stdout  # cheaper / dearer / same
    assert "per suite: mean regret" in p.stdout and "audit-a (3)" in p.stdout and "audit-b (2)" in p.stdout
    # piped with no COLUMNS (| tee, > file): 160 columns, and no figure or name cut to "…" (rich's 80 cut them)
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    p = subprocess.run([sys.executable, "-m", "cachetuner.cli.main", "pool", str(a), str(b), "--tracking-uri", uri],
                       capture_output=True, text=True, timeout=120, check=False, env=env)
    assert p.returncode == 0 and "…" not in p.stdout, p.stdout
    assert max(map(len, p.stdout.splitlines())) <= 160 and "2 / 1 / 2" in p.stdout
    p = run(str(a), str(b), "--reference", "hill-climb", "--json", "--tracking-uri", uri)
    assert p.returncode == 0 and json.loads(p.stdout)["paired"] == {}
    p = run(str(a), str(tmp_path / "nope.json"), "--tracking-uri", uri)
    assert p.returncode == 2 and p.stdout == ""
    err = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(err) == 1 and err[0].startswith("error: ") and "nope.json: no such file" in err[0]
