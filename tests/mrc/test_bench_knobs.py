"""``cachetuner bench knobs``: the hindsight headroom of Redis's eviction knobs under a memory budget."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import cachetuner.cli.mrc_cmds  # noqa: F401  (registers the command)
from cachetuner.cli.app import app
from cachetuner.config import RedisConfig
from cachetuner.errors import ConfigError
from cachetuner.mrc.bench_knobs import DEFAULTS, KNOB_GRID, bench_knobs, knob_label
from cachetuner.sim import TieredCacheSim
from cachetuner.sim.params import SimParams
from cachetuner.sim.sizing import parse_size
from cachetuner.traces import read_trace


def test_the_grid_holds_both_defaults_once_each() -> None:
    labels = [knob_label(*k) for k in KNOB_GRID]
    assert len(labels) == len(set(labels)) == 22
    assert labels[:2] == list(DEFAULTS)


def test_headroom_is_the_best_setting_over_the_better_default_and_matches_a_direct_simulation() -> None:
    rep = bench_knobs([("bundled:web07", "auto")], budgets=("5%", "20%"), limit=20_000)
    assert [c["budget"] for c in rep["cells"]] == ["5%", "20%"] and rep["grid"][:2] == list(DEFAULTS)
    for c in rep["cells"]:
        hr = c["hit_ratio"]
        assert set(hr) == set(rep["grid"])
        assert c["best_hit_ratio"] == max(hr.values()) and hr[c["best"]] == c["best_hit_ratio"]
        assert c["headroom_pp"] == pytest.approx(100 * (c["best_hit_ratio"] - max(c["default_lru"], c["default_lfu"])),
                                                 abs=2e-3)
        assert c["headroom_pp"] >= 0  # the defaults are in the grid
    # one setting, simulated here directly, reads the same hit ratio as in the report
    tr = read_trace("bundled:web07", limit=20_000, size_model="fixed:4096")
    p = SimParams().model_copy(update={"model_latency": False})
    mm = parse_size("5%", tr, p)
    cfg = RedisConfig(maxmemory=mm, maxmemory_policy="allkeys-lfu", maxmemory_samples=10, lfu_log_factor=1, lfu_decay_time=0)
    direct = TieredCacheSim.for_trace(tr, cfg, p).run_counts(tr, 0, len(tr)).hit_ratio
    assert rep["cells"][0]["hit_ratio"][knob_label("allkeys-lfu", 10, 1, 0)] == pytest.approx(direct, abs=1e-5)
    s = rep["summary"]
    assert s["cells"] == 2 and s["headroom_pp"]["max"] == max(c["headroom_pp"] for c in rep["cells"])
    lru = s["as_one_choice_for_all"][DEFAULTS[0]]
    assert lru["mean_pp_vs_lru"] == 0.0 and lru["worst_pp"] <= 0.0  # LRU's default against itself, and the better one


def test_cli_json_and_one_line_mistakes() -> None:
    res = CliRunner().invoke(app, ["bench", "knobs", "--traces", "bundled:web07", "--limit", "5000", "--budgets", "10%",
                                   "--json"])  # fmt: skip
    assert res.exit_code == 0, res.output[-2000:]
    doc = json.loads(res.stdout)
    assert doc["budgets"] == ["10%"] and len(doc["cells"]) == 1
    for args, match in ((["--budgets", ","], "--budgets: give at least one cap"),
                        (["--budgets", "5%,lots"], "--budgets='lots': expected bytes"),
                        (["--budgets", "0%"], "--budgets='0%': percentage must be in (0, 1000]")):
        # a trace that does not exist: the caps are refused before anything is read
        bad = CliRunner().invoke(app, ["bench", "knobs", "--traces", "no/such.trace", "--limit", "5000", *args])
        assert isinstance(bad.exception, ConfigError), (bad.exception, bad.output)
        assert match in str(bad.exception) and "\n" not in str(bad.exception), str(bad.exception)


def test_predicted_reads_mrcs_knob_variants_from_the_curves_and_scores_their_pick() -> None:
    """``--predicted``: every arm at the cap (both defaults and mrc's four variants) with the curves' prediction and
    the full simulation's hit ratio; the pick is the arm predicted best, scored by its true hit ratio."""
    rep = bench_knobs([("bundled:web07", "auto")], budgets=("20%",), limit=20_000, predicted=True)
    c = rep["cells"][0]
    arms = c["predicted"]["arms"]
    assert set(DEFAULTS) <= set(arms) and len(arms) == 6
    for a, v in arms.items():
        assert v["true"] == c["hit_ratio"][a]  # the same full simulation as the headroom's
        assert 0.0 < v["predicted"] < 1.0 and abs(v["predicted"] - v["true"]) < 0.1
    pick = c["predicted"]["pick"]
    assert arms[pick]["predicted"] == max(v["predicted"] for v in arms.values())
    assert c["predicted"]["pick_vs_better_default_pp"] == pytest.approx(
        100 * (arms[pick]["true"] - max(arms[d]["true"] for d in DEFAULTS)), abs=2e-3)
    s = rep["summary"]["predicted"]
    assert s["knob_gap_error_pp"]["mean"] <= s["knob_gap_error_pp"]["max"]
    assert 0 <= s["knob_gaps_over_1pp_wrong_way"] <= s["knob_gaps_over_1pp"] <= 4
    res = CliRunner().invoke(app, ["bench", "knobs", "--traces", "bundled:web07", "--limit", "5000", "--budgets", "20%",
                                   "--predicted"])  # fmt: skip
    assert res.exit_code == 0 and "knob-gap error" in res.stdout, res.output[-2000:]
