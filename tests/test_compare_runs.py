"""``cachetuner compare``: a candidate run of a suite against the base run, cell by cell, by the adoption rule; and
``--set PATH=VALUE`` overrides of an experiment config (``with_overrides``), which the candidate runs use."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from cachetuner.errors import ConfigError
from cachetuner.reports.compare_runs import compare_results
from cachetuner.reports.intervals import t_interval
from tests.control.test_learned_and_suite import TINY_ENV

BEST = {"a": 10.0, "b": 20.0, "c": 5.0, "d": 8.0}
DEFAULT = {"a": 11.0, "b": 30.0, "c": 5.2, "d": 9.0}
BASE_COST = {"ppo": {"a": 10.4, "b": 21.2, "c": 5.1, "d": 8.3}, "mrc": {"a": 10.6, "b": 21.0, "c": 5.0, "d": 8.4}}


def _result(suite: str, costs: dict[str, dict[str, float]], *, references: bool, overrides: list[str] | None = None,
            best: dict[str, float] | None = None) -> dict[str, Any]:
    """A suite result as ``evaluate --suite --json`` writes it: the base run with its references, a candidate run
    with only the controllers it changes."""
    best = best or BEST
    cells = []
    for tr in BEST:
        tuners = {t: {"cost": c[tr], "regret": c[tr] / best[tr] - 1, "hindsight": False} for t, c in costs.items()}
        if references:
            tuners["static-default"] = {"cost": DEFAULT[tr], "regret": DEFAULT[tr] / best[tr] - 1, "hindsight": False}
            tuners["best-static"] = {"cost": best[tr], "regret": 0.0, "hindsight": True}
        cells.append({"trace": tr, "prices": "scaled", "seed": 7, "key_draw": 7, "tuners": tuners,
                      "best_hindsight": {"tuner": "best-static", "cost": best[tr]} if references else None})
    return {"suite": suite, "overrides": overrides or [], "cells": cells}


def _write(path: Path, res: dict[str, Any]) -> Path:
    path.write_text(json.dumps(res))
    return path


def _candidate(**change: float) -> dict[str, dict[str, float]]:
    """The base costs with ppo's changed in the cells named."""
    return {"ppo": {**BASE_COST["ppo"], **change}, "mrc": dict(BASE_COST["mrc"])}


def test_compare_prices_the_candidate_against_the_base_runs_hindsight_and_applies_the_rule(tmp_path: Path) -> None:
    base = _write(tmp_path / "base.json", _result("audit-x", BASE_COST, references=True))
    # ppo: cheaper in b (21.2 -> 20.5), dearer in d (8.3 -> 9.2, now costlier than static-default's 9.0)
    cand = _write(tmp_path / "cand.json", _result("audit-x", _candidate(b=20.5, d=9.2), references=False,
                                                  overrides=["controllers.mrc.confirm=4"]))
    res = compare_results([base], [cand])
    assert res["cells"] == 4 and res["overrides"]["candidate_all"] == ["controllers.mrc.confirm=4"]
    ppo, mrc = res["tuners"]["ppo"], res["tuners"]["mrc"]
    d = np.array([0.0, 20.5 / 20 - 21.2 / 20, 0.0, 9.2 / 8 - 8.3 / 8])
    assert ppo["mean_diff"] == pytest.approx(d.mean())
    assert ppo["ci"] == pytest.approx(list(t_interval(d)))
    assert (ppo["cheaper"], ppo["dearer"], ppo["same"]) == (1, 1, 2)
    assert ppo["costlier_than_default"] == [0, 1] and ppo["over_5pct"] == [1, 1]
    assert ppo["worst"] == pytest.approx([0.06, 0.15])
    assert ppo["rule"] == {"a_mean_diff_at_most_0": False, "b_costlier_not_more": False, "c_worst_within_slack": False,
                           "d_some_cell_changed": True}
    assert not ppo["meets_rule"]
    assert [x["trace"] for x in ppo["changed"]] == ["d", "b"]  # the largest change first
    # mrc changed in no cell: (a)-(c) hold, (d) does not (a fresh draw that never exercises a fix adopts nothing)
    assert mrc["mean_diff"] == 0.0 and mrc["same"] == 4 and mrc["changed"] == []
    assert mrc["rule"]["a_mean_diff_at_most_0"] and not mrc["rule"]["d_some_cell_changed"] and not mrc["meets_rule"]
    # a cheaper candidate meets it; the slacks loosen (b) and (c)
    good = _write(tmp_path / "good.json", _result("audit-x", _candidate(b=20.0), references=False))
    assert compare_results([base], [good], tuners=["ppo"])["tuners"]["ppo"]["meets_rule"]
    assert list(compare_results([base], [good], tuners=["ppo"])["tuners"]) == ["ppo"]
    loose = compare_results([base], [cand], costlier_slack=1, worst_slack_pp=10.0)["tuners"]["ppo"]["rule"]
    assert loose["b_costlier_not_more"] and loose["c_worst_within_slack"]


def test_compare_refuses_runs_that_do_not_measure_the_same_thing(tmp_path: Path) -> None:
    base = _write(tmp_path / "base.json", _result("audit-x", BASE_COST, references=True))
    other = _write(tmp_path / "other.json", _result("audit-y", BASE_COST, references=False))
    with pytest.raises(ConfigError, match=r"candidate cell a / scaled / seed 7 of suite 'audit-y' is in no base file"):
        compare_results([base], [other])
    # the overrides changed the traffic or the prices: the candidate's own hindsight differs from the base's
    moved = _write(tmp_path / "moved.json", _result("audit-x", BASE_COST, references=True, best={**BEST, "c": 4.0}))
    with pytest.raises(ConfigError, match=r"candidate cell c / scaled: its best hindsight cost 4 differs"):
        compare_results([base], [moved])
    with pytest.raises(ConfigError, match=r"'hill-climb': not run in every cell"):
        compare_results([base], [_write(tmp_path / "c.json", _result("audit-x", BASE_COST, references=False))],
                        tuners=["hill-climb"])
    no_refs = _write(tmp_path / "norefs.json", _result("audit-x", BASE_COST, references=False))
    with pytest.raises(ConfigError, match=r"base cell a / scaled has no best hindsight reference"):
        compare_results([no_refs], [no_refs])
    with pytest.raises(ConfigError, match=r"base\.json: cell a / scaled / seed 7 of suite 'audit-x' is also in"):
        compare_results([base, base], [no_refs])


def test_compare_pools_several_suites_by_name(tmp_path: Path) -> None:
    """A rule is judged on every fresh cell it was written for: the candidate's runs of two suites against their base
    runs, matched by suite name whatever the order of the files."""
    bx = _write(tmp_path / "bx.json", _result("audit-x", BASE_COST, references=True))
    by = _write(tmp_path / "by.json", _result("audit-y", BASE_COST, references=True))
    cx = _write(tmp_path / "cx.json", _result("audit-x", _candidate(b=20.5), references=False))
    cy = _write(tmp_path / "cy.json", _result("audit-y", _candidate(d=8.0), references=False))
    res = compare_results([bx, by], [cy, cx])
    assert res["cells"] == 8 and res["suites"] == ["audit-y", "audit-x"]
    ppo = res["tuners"]["ppo"]
    assert (ppo["cheaper"], ppo["dearer"], ppo["same"]) == (2, 0, 6)
    assert ppo["mean_diff"] == pytest.approx(((20.5 - 21.2) / 20 + (8.0 - 8.3) / 8) / 8)
    assert ppo["meets_rule"]
    # one suite's candidate alone: the other base's cells are simply not compared
    assert compare_results([bx, by], [cx])["base_cells_not_compared"] == 4


def test_compare_command_prints_json_or_a_table_and_logs_to_mlflow(tmp_path: Path, mlflow_store) -> None:
    base = _write(tmp_path / "base.json", _result("audit-x", BASE_COST, references=True))
    cand = _write(tmp_path / "cand.json", _result("audit-x", _candidate(b=20.5), references=False,
                                                  overrides=["controllers.mrc.confirm=4"]))
    uri = mlflow_store(tmp_path)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "cachetuner.cli.main", "compare", *args, "--tracking-uri", uri],
                              capture_output=True, text=True, timeout=120, check=False, env={**os.environ, "COLUMNS": "200"})

    p = run("--base", str(base), "--candidate", str(cand), "--json")
    assert p.returncode == 0, p.stderr
    res = json.loads(p.stdout)
    assert res["tuners"]["ppo"]["meets_rule"] and res["tuners"]["ppo"]["cheaper"] == 1
    import mlflow

    mlflow.set_tracking_uri(uri)
    r = mlflow.get_run(res["mlflow_run_id"])
    assert r.data.tags["kind"] == "compare" and r.data.params["overrides"] == "controllers.mrc.confirm=4"
    assert r.data.metrics["ppo.meets_rule"] == 1.0 and r.data.metrics["mrc.meets_rule"] == 0.0
    assert {f.path for f in mlflow.MlflowClient().list_artifacts(r.info.run_id, "plots")} == {"plots/compare_diff.png"}
    p = run("--base", str(base), "--candidate", str(cand))
    assert p.returncode == 0, p.stderr
    assert "audit-x: candidate (controllers.mrc.confirm=4) against base, 4 cells" in p.stdout
    assert "ppo: b / scaled / seed 7: +6.00 → +2.50 %" in p.stdout
    p = run("--base", str(base), "--candidate", str(tmp_path / "nope.json"))
    err = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert p.returncode == 2 and len(err) == 1 and "nope.json: no such file" in err[0]
    p = run("--base", str(base), "--candidate", str(cand), "--ci-upper", "0.25", "--json")
    assert p.returncode == 0, p.stderr
    ppo = json.loads(p.stdout)["tuners"]["ppo"]
    assert "a_ci_upper_within" in ppo["rule"] and json.loads(p.stdout)["rule"]["ci_upper_pp"] == 0.25
    p = run("--base", str(base), "--candidate", str(cand), "--ci-upper", "inf")
    err = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert p.returncode == 2 and len(err) == 1 and "--ci-upper: must be a finite number" in err[0]


def test_a_bound_on_the_intervals_upper_end_refuses_a_mean_that_rests_on_one_cell(tmp_path: Path) -> None:
    """The rules since 2026-12-07 ask (a) for the upper end of d's 95 % interval too: a candidate much cheaper in one
    cell and a little dearer in two has a negative mean, and an interval that reaches far above 0."""
    base = _write(tmp_path / "base.json", _result("audit-x", BASE_COST, references=True))
    cand = _write(tmp_path / "cand.json", _result("audit-x", _candidate(b=16.0, c=5.15, d=8.5), references=False))
    plain = compare_results([base], [cand], tuners=["ppo"])["tuners"]["ppo"]
    assert plain["mean_diff"] < 0 and plain["meets_rule"] and "a_ci_upper_within" not in plain["rule"]
    assert plain["ci"][1] > 0.0025
    bounded = compare_results([base], [cand], tuners=["ppo"], ci_upper_pp=0.25)
    ppo = bounded["tuners"]["ppo"]
    assert ppo["rule"]["a_mean_diff_at_most_0"] and not ppo["rule"]["a_ci_upper_within"] and not ppo["meets_rule"]
    assert bounded["rule"]["ci_upper_pp"] == 0.25
    loose = compare_results([base], [cand], tuners=["ppo"], ci_upper_pp=100 * plain["ci"][1] + 0.01)["tuners"]["ppo"]
    assert loose["rule"]["a_ci_upper_within"] and loose["meets_rule"]


def test_overrides_set_one_field_and_name_a_bad_path_in_one_line() -> None:
    from cachetuner.agent.config import TrainConfig
    from cachetuner.yamlconfig import with_overrides

    cfg = TrainConfig.from_yaml("experiments/quickstart.yaml")
    new = with_overrides(cfg, ["controllers.mrc.confirm=5", "controllers.mrc.size_shortfall=null",
                               "env.mrc.anchor.free_shrink_full_at_size=true"])
    assert new.controllers.mrc.confirm == 5 and new.controllers.mrc.size_shortfall is None
    assert new.env.mrc.anchor.free_shrink_full_at_size and not cfg.env.mrc.anchor.free_shrink_full_at_size
    # nothing else moved
    assert new.model_copy(update={"controllers": cfg.controllers, "env": cfg.env}) == cfg
    for bad, why in [
        ("controllers.mrc.confrim=5", "no field 'confrim' in controllers.mrc (did you mean confirm?)"),
        ("controllers.mrc.confirm.x=5", "controllers.mrc.confirm is a value, not a section with fields"),
        ("controllers.mrc.confirm", "expected PATH=VALUE"),
        ("controllers.mrc.confirm=", "no value after '='"),
        ("controllers..confirm=3", "expected PATH=VALUE"),
    ]:
        with pytest.raises(ConfigError, match=r"^--set '" + bad.replace(".", r"\.") + "': " + why.replace("(", r"\(")
                           .replace(")", r"\)").replace("?", r"\?").replace(".", r"\.")):
            with_overrides(cfg, [bad])
    with pytest.raises(ConfigError, match=r"^--set: field 'controllers\.mrc\.confirm': Input should be greater"):
        with_overrides(cfg, ["controllers.mrc.confirm=0"])


def test_a_suite_run_with_overrides_and_fewer_controllers_records_them(tmp_path: Path, mlflow_store) -> None:
    """A candidate's run of a suite (``evaluate --suite S --set ... --tuners mrc``): only the named controllers, the
    setting in force (here one that moves `mrc`: a growth must win 6 intervals in a row, not 3), the overrides in the
    result; `compare` pairs it with the base run."""
    from cachetuner.reports.suite import run_suite

    exp = tmp_path / "exp.yaml"
    exp.write_text(yaml.safe_dump({"experiment": "suite-test", "total_timesteps": 1, "env": TINY_ENV,
                                   "controllers": {"grid": {"n_sizes": 3, "timeouts": [0]}}}))
    suite = tmp_path / "suite.yaml"
    suite.write_text(yaml.safe_dump({
        "name": "tiny", "model": None, "config": str(exp), "controllers": ["mrc", "static-default", "best-static"],
        "traces": [{"trace": "synthetic:zipf", "name": "zipf", "size_model": None, "rate": 200, "limit": 16000}],
        "prices": ["scaled"], "seeds": [0]}))
    uri = mlflow_store(tmp_path)
    base = run_suite(suite, tracking_uri=uri)
    same = run_suite(suite, tracking_uri=uri, controllers=["mrc"], overrides=[])
    cand = run_suite(suite, tracking_uri=uri, controllers=["mrc"], overrides=["controllers.mrc.confirm=6"])
    assert list(cand["cells"][0]["tuners"]) == ["mrc"] and cand["overrides"] == ["controllers.mrc.confirm=6"]
    assert same["cells"][0]["tuners"]["mrc"]["cost"] == base["cells"][0]["tuners"]["mrc"]["cost"]
    paths = [_write(tmp_path / f"{n}.json", r) for n, r in (("base", base), ("same", same), ("cand", cand))]
    # the same settings change no cell: the two runs measure the same thing
    assert compare_results(paths[:1], paths[1:2])["tuners"]["mrc"]["same"] == 1
    res = compare_results(paths[:1], paths[2:])["tuners"]["mrc"]
    assert res["cells"] == 1 and res["cheaper"] + res["dearer"] == 1, res
