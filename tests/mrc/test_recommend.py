"""``recommend``: the cheapest static config from the sampled curves, checked against full replays; the CLI
(JSON, table, one-line errors), its MLflow run and figure, and ``bench recommend``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import cachetuner.cli.recommend_cmds  # noqa: F401  (registers the commands)
from cachetuner.cli.app import app
from cachetuner.config import RedisConfig
from cachetuner.env.prices import PricesConfig
from cachetuner.errors import ConfigError
from cachetuner.mrc.offline import default_bounds
from cachetuner.mrc.recommend import recommend, trace_hours
from cachetuner.sim.params import SimParams
from cachetuner.sim.sizing import full_size
from cachetuner.traces import read_trace

runner = CliRunner()


@pytest.fixture(scope="module")
def web07():
    return read_trace("bundled:web07", size_model="fixed:4096", rate=100)


def _prices(preset: str) -> dict[str, float]:
    mem, miss = PricesConfig(preset=preset).resolve()  # type: ignore[arg-type]
    return {"memory_per_gib_hour": mem, "per_miss": miss}


def test_the_recommendation_is_as_cheap_as_the_best_replayed_config(web07) -> None:
    """The point of the command: from a sampled pass, a config whose *replayed* cost is within 2 % of the best
    of 2 x 10 full replays (hindsight), with the prediction close to what the replay measures. At `scaled`
    prices and 100 req/s this bundled excerpt's optimum is inside the range, not at an end."""
    rec = recommend(web07, **_prices("scaled"), grid=10)
    lo, hi = rec.bounds
    assert (lo, hi) == default_bounds(web07, SimParams())
    assert lo < rec.maxmemory < hi  # an interior optimum: memory and misses both matter here
    got = rec.replays["recommended"]
    best = rec.best_on_grid
    assert best is not None and len(rec.grid) == 20
    assert got.cost_per_hour <= 1.02 * best.cost_per_hour
    assert abs(got.hit_ratio - rec.predicted_hit_ratio) < 0.02
    assert abs(rec.cost.best_cost / got.cost_per_hour - 1) < 0.03
    # the band holds the optimum and every size in it is priced within the tolerance
    assert rec.band[0] <= rec.maxmemory <= rec.band[1]
    c = rec.cost.cost[rec.policy]
    inside = (rec.cost.sizes >= rec.band[0]) & (rec.cost.sizes <= rec.band[1])
    assert (c[inside] <= rec.cost.best_cost * (1 + rec.tolerance) + 1e-9).all()
    # hours and GETs per hour from the trace's clock: 50,000 requests at 100 req/s
    assert trace_hours(web07) == pytest.approx(500 / 3600)
    assert rec.gets_per_hour == pytest.approx(50_000 / (500 / 3600))
    # an operator's config is replayed and priced the same way
    cur = recommend(web07, **_prices("scaled"), current=RedisConfig(maxmemory=4 << 20), verify=True)
    assert cur.replays["current"].cost_per_hour > cur.replays["recommended"].cost_per_hour


def test_list_prices_recommend_the_largest_cache_and_a_budget_caps_it(web07) -> None:
    """At `list` prices a GiB-hour costs about eight model calls, so every hit pays for its bytes: the largest
    size wins. Under a budget memory is free below the cap, so the cap wins and only the policy is chosen."""
    big = recommend(web07, **_prices("list"), verify=False)
    assert big.maxmemory == big.bounds[1]
    cap = int(0.1 * full_size(web07, SimParams()))
    capped = recommend(web07, memory_per_gib_hour=0.0, per_miss=0.002, budget_bytes=cap, verify=False)
    assert capped.bounds[1] == cap and capped.maxmemory == cap
    assert capped.policy in ("allkeys-lru", "allkeys-lfu")
    # a budget above the working set is the size too (memory is free below it); explicit bounds still cap it
    ws = full_size(web07, SimParams())
    roomy = recommend(web07, memory_per_gib_hour=0.0, per_miss=0.002, budget_bytes=2 * ws, verify=False)
    assert roomy.maxmemory == 2 * ws
    bounded = recommend(web07, memory_per_gib_hour=0.0, per_miss=0.002, budget_bytes=2 * ws, verify=False,
                        bounds=(cap // 2, ws))
    assert bounded.maxmemory == ws
    with pytest.raises(ConfigError, match="--budget"):
        recommend(web07, memory_per_gib_hour=0.0, per_miss=0.002, budget_bytes=1000, verify=False)


def test_cli_json_and_table(web07, tmp_path: Path) -> None:
    args = ["recommend", "--trace", "bundled:web07", "--rate", "100", "--current", "10mb:allkeys-lfu", "--no-mlflow",
            "--plot", str(tmp_path / "r.png")]
    res = runner.invoke(app, [*args, "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)  # exactly one JSON object
    assert data["recommended"]["maxmemory_policy"] in ("allkeys-lru", "allkeys-lfu")
    assert set(data["replays"]) == {"recommended", "current"}
    assert data["replays"]["current"]["maxmemory"] == 10 << 20  # mb: MiB, as redis.conf reads it
    assert data["replays"]["current"]["policy"] == "allkeys-lfu"
    assert len(data["curves"]["sizes"]) == 24 and set(data["curves"]["hit_ratio"]) == {"allkeys-lru", "allkeys-lfu"}
    assert "mlflow_run_id" not in data
    assert data["timing"] == "uniform at 100 req/s" and data["size_model"] == "fixed:4096"
    assert (tmp_path / "r.png").stat().st_size > 10_000
    table = runner.invoke(app, args)
    assert table.exit_code == 0, table.output
    assert "recommended: maxmemory" in table.stdout and "recommended vs current" in table.stdout
    assert "the trace has no timestamps" in table.stdout


def test_run_is_logged_to_mlflow_with_its_figure(tmp_path: Path, mlflow_store, monkeypatch) -> None:
    import mlflow

    monkeypatch.chdir(tmp_path)
    uri = mlflow_store(tmp_path)
    res = runner.invoke(app, ["recommend", "--trace", "bundled:web07", "--rate", "100", "--grid", "3", "--tracking-uri",
                              uri, "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    client = mlflow.MlflowClient(uri)
    run = client.get_run(data["mlflow_run_id"])
    assert run.data.tags["kind"] == "recommend"
    assert run.data.metrics["recommended.maxmemory"] == data["recommended"]["maxmemory"]
    assert "recommended.regret_vs_grid" in run.data.metrics
    arts = {a.path for a in client.list_artifacts(run.info.run_id, "plots")}
    arts |= {a.path for a in client.list_artifacts(run.info.run_id, "recommend")}
    assert {"plots/recommend.png", "recommend/recommendation.json"} <= arts


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--policies", "volatile-lru"], "error: --policies: 'volatile-lru' evicts only keys with a TTL; the curves price allkeys-* policies"),
        (["--min-size", "50mb", "--max-size", "10mb"], "error: --min-size 52,428,800 B must be below --max-size 10,485,760 B"),
        (["--prices", "nosuch"], "error: --prices 'nosuch': expected one of list, scaled, cheap-backend, budget"),
        (["--current", "lots"], "error: --current='lots': expected bytes with an optional unit (k, kb, mb, gb, KiB, MiB, GiB) or a percentage like 20%"),
        (["--current", "64mb:"], "error: --current '64mb:': nothing after ':' (give SIZE, or SIZE:POLICY such as 64mb:allkeys-lru)"),
    ],
)
def test_user_errors_exit_2_with_one_line(args: list[str], message: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "cachetuner.cli.main", "recommend", "--no-mlflow", "--json", *args],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip().splitlines()[-1] == message


def test_bench_recommend_reports_regret_savings_and_prediction_error() -> None:
    res = runner.invoke(app, ["bench", "recommend", "--traces", "bundled:web07", "--grid", "6", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    (row,) = data["traces"]
    assert row["trace"] == "bundled:web07" and row["requests"] == 50_000
    assert row["regret"] <= 0.03  # within 3 % of the best of 12 replays (it may beat them: negative)
    assert row["savings_vs_default"] > 0  # the static default (25 % of the working set) is too small here
    assert abs(row["predicted_cost_error"]) < 0.05
    assert data["summary"]["regret"]["max"] == row["regret"]


def test_bench_recommend_split_sizes_on_the_past_and_judges_on_the_rest(web07) -> None:
    """``--split 0.5``: the recommendation comes from the first half only (so it cannot depend on the second),
    and everything it is judged by (the static default, the grid, the replays) runs on the second half."""
    from cachetuner.mrc.bench_recommend import bench_recommend
    from cachetuner.mrc.recommend import gets_per_hour

    prices = _prices("scaled")
    res = bench_recommend([("bundled:web07", "auto")], **prices, grid=4, split=0.5)
    (row,) = res["traces"]
    assert res["split"] == 0.5 and row["requests"] == 25_000  # the requests it was sized on
    first = recommend(web07.slice(0, 25_000), **prices, verify=False)
    assert row["recommended"] == {"maxmemory": first.maxmemory, "maxmemory_policy": first.policy}
    second = web07.slice(25_000, 50_000)
    grid = set(np.unique(np.geomspace(*default_bounds(second, SimParams()), 4).round().astype(np.int64)).tolist())
    assert default_bounds(second, SimParams()) != first.bounds
    assert row["best_on_grid"]["maxmemory"] in grid  # the grid was laid over the second half's working set
    assert gets_per_hour(second) == pytest.approx(25_000 / (250 / 3600))
    assert abs(row["regret"]) < 0.1
