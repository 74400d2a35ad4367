"""``cachetuner select``: the selection set of a recipe (its own workloads x memory prices) and the rule that
chooses between trained policies (docs/agent.md, *Selection rule*)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from cachetuner.errors import ConfigError
from cachetuner.reports.selection import apply_rule, run_selection

ROOT = Path(__file__).resolve().parents[2]


def _recipe(tmp_path: Path) -> Path:
    """experiments/general.yaml with one tiny synthetic workload for training and one for validation."""
    raw = yaml.safe_load((ROOT / "experiments/general.yaml").read_text())
    tiny = {"trace": "synthetic:zipf", "name": "zipf-tiny", "rate": 200, "seed": 3, "params": {"n_requests": 16000, "n_keys": 2000}}
    raw["env"]["workloads"] = [tiny]
    raw["eval"]["env"]["workloads"] = [{**tiny, "name": "zipf-tiny-val", "seed": 4}]
    p = tmp_path / "recipe.yaml"
    p.write_text(yaml.safe_dump(raw))
    return p


def test_selection_set_end_to_end(tmp_path: Path, mlflow_store) -> None:
    """Two policies (here the shipped one twice) against the references on 2 workloads x 1 memory price: every
    cell has hindsight at 0 regret, identical policies score identically, a tie does not replace the
    incumbent, and the run is logged like a suite (a parent and a child per cell)."""
    uri = mlflow_store(tmp_path)
    res = run_selection(_recipe(tmp_path), {"shipped": "default", "again": "default"}, incumbent="shipped",
                        factors=(1.0,), budgets=(0.2,), tracking_uri=uri)
    assert [(c["trace"], c["prices"]) for c in res["cells"]] == [
        ("train-zipf-tiny", "memory x1"), ("train-zipf-tiny", "budget 20%"),
        ("eval-zipf-tiny-val", "memory x1"), ("eval-zipf-tiny-val", "budget 20%")]
    by = {(c["trace"], c["prices"]): c["tuners"] for c in res["cells"]}
    for w in ("train-zipf-tiny", "eval-zipf-tiny-val"):  # memory is free under the budget and capped by it
        assert by[(w, "budget 20%")]["static-default"]["mean_maxmemory_bytes"] < by[(w, "memory x1")]["static-default"]["mean_maxmemory_bytes"]
    for c in res["cells"]:
        t = c["tuners"]
        assert set(t) == {"mrc", "static-default", "best-static", "dp-hindsight", "shipped", "again"}
        assert min(t["best-static"]["regret"], t["dp-hindsight"]["regret"]) == pytest.approx(0.0)
        assert t["shipped"]["cost"] == t["again"]["cost"] and not t["shipped"]["hindsight"]
        assert c["currency"] == "USD"
    rule = res["rule"]
    assert rule["rule"] == "v2" and rule["versus_mrc"]["shipped"] == rule["versus_mrc"]["again"]
    assert rule["costlier_bar"] == res["summary"]["mrc"]["costlier_than_default"]
    assert rule["incumbent"] == "shipped" and rule["choice"] == "shipped"  # equal mean: the incumbent stays
    import mlflow

    mlflow.set_tracking_uri(uri)
    runs = mlflow.search_runs(search_all_experiments=True)
    assert len(runs) == 5 and "selection" in set(runs["tags.kind"])


def test_the_rule_prefers_the_cheapest_eligible_policy() -> None:
    def row(mean: float, costlier: int) -> dict:
        return {"regret": {"mean": mean}, "costlier_than_default": costlier}

    summary = {"mrc": row(0.035, 2), "a": row(0.020, 3), "b": row(0.028, 1), "c": row(0.030, 2), "old": row(0.029, 1)}
    r = apply_rule(summary, ["a", "b", "c", "old"], "old", rule="v1")
    assert r["eligible"] == ["b", "c"] and r["best_eligible"] == "b" and r["choice"] == "b"
    assert apply_rule(summary, ["a", "c", "old"], "old", rule="v1")["choice"] == "old"  # c is eligible but dearer than old
    assert apply_rule(summary, ["a"], None, rule="v1")["choice"] is None  # nothing eligible


def test_rule_v2_wants_no_cell_dearer_than_mrc_and_some_cheaper() -> None:
    """v2 judges cell by cell against mrc: a policy dearer than mrc anywhere is out however low its mean, one that
    repeats mrc everywhere adds nothing, and an incumbent that fails v2 is replaced even by a higher mean."""
    def row(mean: float, costlier: int) -> dict:
        return {"regret": {"mean": mean}, "costlier_than_default": costlier}

    def cell(**costs: float) -> dict:
        return {"tuners": {k: {"cost": v} for k, v in {"mrc": 10.0, **costs}.items()}}

    summary = {"mrc": row(0.035, 2), "low": row(0.020, 1), "same": row(0.035, 2), "good": row(0.033, 2),
               "many": row(0.030, 3), "old": row(0.028, 1)}
    cells = [cell(low=9.0, same=10.0, good=9.5, many=9.0, old=10.5),
             cell(low=10.2, same=10.0, good=10.0, many=10.0, old=9.0),
             cell(low=9.0, same=10.0 * (1 + 1e-12), good=10.0, many=10.0, old=10.0)]
    r = apply_rule(summary, ["low", "same", "good", "many", "old"], "old", cells=cells)
    assert r["versus_mrc"]["low"] == {"dearer": 1, "cheaper": 2} and r["versus_mrc"]["same"] == {"dearer": 0, "cheaper": 0}
    assert r["eligible"] == ["good"] and r["incumbent_eligible"] is False and r["choice"] == "good"
    assert apply_rule(summary, ["low", "same", "many"], None, cells=cells)["choice"] is None
    assert apply_rule(summary, ["good", "old"], "old", rule="v1", cells=cells)["choice"] == "old"
    with pytest.raises(ConfigError, match="give the cells"):
        apply_rule(summary, ["good"], None)
    with pytest.raises(ConfigError, match="--rule"):
        apply_rule(summary, ["good"], None, rule="v3", cells=cells)


@pytest.mark.parametrize(("models", "incumbent", "match"), [
    ({}, None, "at least one"),
    ({"a": "default"}, "b", "--incumbent"),
    ({"mrc": "default"}, None, "references"),
    ({"a": "default"}, None, "no price regime"),
    ({"a": "default"}, None, "--budgets"),
])
def test_bad_selection_arguments_are_refused(tmp_path: Path, models: dict, incumbent: str | None, match: str) -> None:
    regimes = {"no price regime": {"factors": ()}, "--budgets": {"budgets": (1.5,)}}.get(match, {})
    with pytest.raises(ConfigError, match=match):
        run_selection(ROOT / "experiments/general.yaml", models, incumbent=incumbent, tracking_uri=f"sqlite:///{tmp_path}/m.db",
                      **regimes)


def test_select_cli_refuses_malformed_options_in_one_line() -> None:
    from typer.testing import CliRunner

    from cachetuner.cli.main import _load_commands, app
    from cachetuner.errors import CacheTunerError

    _load_commands()
    recipe = str(ROOT / "experiments/general.yaml")
    for args, match in ((["--model", "nolabel"], "LABEL=PATH"), (["--model", "a=default", "--model", "a=default"], "twice"),
                        (["--model", "a=default", "--factors", "x"], "--factors")):
        result = CliRunner().invoke(app, ["select", recipe, *args])
        assert isinstance(result.exception, CacheTunerError), (result.exception, result.output)
        assert match in str(result.exception) and "\n" not in str(result.exception)
