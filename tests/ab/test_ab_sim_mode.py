"""Simulation mode on the real simulator: A/A finds nothing, a known-better treatment is detected."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from abtest_support import LARGE, SMALL, ab_config

from cachetuner.ab.runner import run_ab
from cachetuner.ab.stats import BETTER, INCONCLUSIVE, NO_DIFFERENCE, WORSE
from cachetuner.cli.main import main


def test_aa_same_tuner_in_both_arms_finds_no_difference() -> None:
    res = run_ab(ab_config({"tuner": "static-default"}, {"tuner": "static-default"}))
    assert res.intervals == 36
    assert res.verdict.verdict == NO_DIFFERENCE
    for ci in res.verdict.deltas.values():
        assert ci.mean == 0.0 and ci.ci == (0.0, 0.0)  # same stream, same seed: identical arms
    np.testing.assert_array_equal(res.control.series("gets"), res.treatment.series("gets"))


def test_larger_memory_is_detected_as_better_and_smaller_as_worse() -> None:
    res = run_ab(ab_config({"config": SMALL}, {"config": LARGE}))
    v = res.verdict
    assert v.verdict == BETTER
    assert v.deltas["hit_ratio"].ci[0] > 1.0  # > 1 percentage point more hits, with confidence
    assert v.deltas["cost"].ci[1] < 0
    assert (res.treatment.series("maxmemory_mb") > res.control.series("maxmemory_mb")).all()
    # both arms saw exactly the same requests, interval by interval
    np.testing.assert_array_equal(res.control.series("requests"), res.treatment.series("requests"))
    swapped = run_ab(ab_config({"config": LARGE}, {"config": SMALL}))
    assert swapped.verdict.verdict == WORSE
    assert swapped.verdict.deltas["cost"].mean == -v.deltas["cost"].mean


def test_early_stop_is_inconclusive_under_a_fixed_horizon() -> None:
    res = run_ab(ab_config({"config": SMALL}, {"config": LARGE}), max_intervals=12)
    assert res.intervals == 12
    assert res.verdict.verdict == INCONCLUSIVE
    assert res.verdict.deltas["cost"].ci[1] < 0  # the data already lean one way: peeking is refused anyway


def test_msprt_may_stop_early() -> None:
    res = run_ab(ab_config({"config": SMALL}, {"config": LARGE}, stats={"method": "msprt"}), max_intervals=30)
    assert res.verdict.verdict == BETTER
    assert res.verdict.deltas["cost"].stopped_at is not None


def test_cli_trace_options_override_the_workload(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    config = Path(__file__).resolve().parents[2] / "experiments" / "ab_lfu_vs_lru.yaml"
    monkeypatch.setattr(sys, "argv", [
        "cachetuner", "ab", "--config", str(config), "--trace", "synthetic:zipf", "--rate", "1000",
        "--limit", "60000", "--size-model", "fixed:2048", "--max-intervals", "6", "--no-track", "--json",
    ])
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        main()
    assert exc.value.code in (0, None)
    out = capsys.readouterr().out
    doc = json.loads(out)  # exactly one JSON object on stdout
    assert out.strip().count("\n") == 0
    (w,) = doc["meta"]["workload"]
    assert (w["trace"], w["rate"], w["limit"], w["size_model"]) == ("synthetic:zipf", 1000.0, 60000, "fixed:2048")
    assert doc["intervals"] == 6 and doc["verdict"] == INCONCLUSIVE
    assert set(doc) >= {"hit_ratio_delta_pp", "byte_hit_ratio_delta_pp", "p95_delta_ms", "cost_delta", "mlflow_run_id"}


def test_an_arm_whose_controller_reads_the_request_stream_gets_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """A controller that declares ``needs_sample`` (a policy trained with hotness features) gets each
    interval's requests in an A/B arm, as in ``evaluate`` (before, the A/B loop and ``live-eval`` built
    their context without them and such a policy raised)."""
    from cachetuner.control.base import CONTROLLERS
    from cachetuner.control.static import StaticDefault

    seen: list[int] = []

    class Sampling(StaticDefault):
        name = "sampling-probe"
        needs_sample = True

        def decide(self, ctx):  # noqa: ANN001, ANN202
            assert ctx.sample is not None, "ctx.sample missing"
            seen.append(len(ctx.sample.keys))
            return super().decide(ctx)

    # registered for this test only: other tests list the registry
    monkeypatch.setitem(CONTROLLERS._items, "sampling-probe", Sampling)
    res = run_ab(ab_config({"tuner": "static-default"}, {"tuner": "sampling-probe"}), max_intervals=12)
    assert res.intervals == len(seen) > 0
    assert sum(seen) > 0


def test_cli_rate_profile_reaches_the_workload(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``ab --trace FILE --rate-profile bursts:...`` re-times the arms' shared trace (before, only an A/B YAML's
    ``workload.rate_profile`` could): both arms see the lull, so an interval with no requests is in the run."""
    root = Path(__file__).resolve().parents[2]
    config = root / "experiments" / "ab_lfu_vs_lru.yaml"
    trace = root.parent / "shared" / "traces" / "cache2k" / "web12.trace"
    monkeypatch.setattr(sys, "argv", [
        "cachetuner", "ab", "--config", str(config), "--trace", str(trace), "--format", "raw-be-i4",
        "--rate", "100", "--rate-profile", "bursts:200,0.5", "--start", "30000", "--limit", "20000",
        "--max-intervals", "8", "--no-track", "--json",
    ])  # fmt: skip
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        main()
    assert exc.value.code in (0, None)
    doc = json.loads(capsys.readouterr().out)
    (w,) = doc["meta"]["workload"]
    assert (w["rate"], w["rate_profile"], w["start"], w["limit"]) == (100.0, "bursts:200,0.5", 30_000, 20_000)
    assert doc["intervals"] == 8


@pytest.mark.parametrize(("args", "match"), [
    (["--rate-profile", "bursts:600,0.25"], "--rate-profile/--seed/--start/--limit/--params need --trace"),
    (["--start", "1000"], "--rate-profile/--seed/--start/--limit/--params need --trace"),
    (["--trace", "bundled:web12", "--rate-profile", "bursts:600,2"], "--rate-profile: "),
])  # fmt: skip
def test_cli_rate_profile_mistakes_are_one_line(args: list[str], match: str) -> None:
    from typer.testing import CliRunner

    import cachetuner.cli.ab_cmds  # noqa: F401  (registers the commands)
    from cachetuner.cli.app import app
    from cachetuner.errors import ConfigError

    config = Path(__file__).resolve().parents[2] / "experiments" / "ab_lfu_vs_lru.yaml"
    res = CliRunner().invoke(app, ["ab", "--config", str(config), *args, "--no-track"])
    assert isinstance(res.exception, ConfigError), (res.exception, res.output)
    assert match in str(res.exception) and "\n" not in str(res.exception), str(res.exception)


def test_an_arms_first_move_away_from_its_initial_config_is_a_change() -> None:
    """Fixed arms start at their own config: no change. ``mrc`` moves at its first decision, and that move counts
    (comparing consecutive intervals alone left it out); without a known initial config it cannot count."""
    from cachetuner.ab.result import ArmSeries

    fixed = run_ab(ab_config({"config": SMALL}, {"config": LARGE}, horizon=6))
    assert fixed.control.totals()["config_changes"] == fixed.treatment.totals()["config_changes"] == 0
    res = run_ab(ab_config({"tuner": "static-default"}, {"tuner": "mrc"}, horizon=6))
    t = res.treatment
    assert t.initial is not None and t.configs[0]["maxmemory"] != t.initial["maxmemory"]
    moves = sum(a != b for a, b in zip(t.configs, t.configs[1:], strict=False))
    assert t.totals()["config_changes"] == moves + 1
    a, b = {"maxmemory": 1}, {"maxmemory": 2}
    assert ArmSeries("treatment", "x", configs=[b, b, a], initial=a).config_changes() == 2
    assert ArmSeries("treatment", "x", configs=[b, b, a]).config_changes() == 1
