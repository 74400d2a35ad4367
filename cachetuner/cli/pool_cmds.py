"""``cachetuner pool``: several ``evaluate --suite --json`` results as one summary and one paired comparison;
``cachetuner compare``: a candidate run of a suite against the base run, cell by cell, by the adoption rule."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated

import typer

from cachetuner.cli.app import app, emit_json, out, wide_out
from cachetuner.cli.trace_options import JsonOpt


@app.command("pool")
def pool_cmd(
    files: Annotated[list[Path], typer.Argument(help="JSON files written by `cachetuner evaluate --suite ... --json`")],
    reference: Annotated[list[str] | None, typer.Option(
        "--reference", help="a controller every other online controller is compared with, cell by cell (repeatable; "
        "default: static-default and mrc)")] = None,
    json_out: JsonOpt = False,
    tracking_uri: Annotated[str | None, typer.Option(
        "--tracking-uri", help="MLflow store (default: MLFLOW_TRACKING_URI, else sqlite:///mlflow.db here)")] = None,
) -> None:
    """Pool the cells of several suite results: the summary and the paired comparison over all of them.

    Each cell keeps its suite's name; a cell found in two files is an error (it would count twice). The paired
    table (every online controller against static-default and mrc, or --reference) counts the cells in which each
    is the cheaper, and gives the mean regret difference with a 95 % CI (Student's t over cells, and with whole
    traces resampled) and a two-sided sign test; a table per suite shows each one's own figures; an MLflow run keeps the JSON and the plots."""
    from cachetuner.reports.paired import REFERENCES
    from cachetuner.reports.pool import log_pool, pool_results
    from cachetuner.reports.suite import by_suite_table, paired_table, summary_table

    refs = tuple(reference) if reference else REFERENCES
    res = pool_results(list(files), references=refs)
    res["mlflow_run_id"] = log_pool(res, tracking_uri)
    if json_out:
        emit_json(res)
        return
    names = ", ".join(f"{s['suite']} ({s['cells']})" for s in res["suites"])
    wide = wide_out()
    wide.print(summary_table(res["summary"], f"{len(res['cells'])} cells pooled from {names}"))
    if len(res["by_suite"]) > 1:
        wide.print(by_suite_table(res["by_suite"]))
    if res["paired"]:
        wide.print(paired_table(res["paired"]))
    else:
        out.print(f"no paired comparison: no cell ran {' or '.join(refs)}", highlight=False)
    out.print(f"MLflow run {res['mlflow_run_id']} (experiment cachetuner-suite)")


@app.command("compare")
def compare_cmd(
    base: Annotated[list[Path], typer.Option("--base", help="a suite run as the controllers ship (`evaluate --suite ... "
                                             "--json`); repeat for several suites")],
    candidate: Annotated[list[Path], typer.Option("--candidate", help="the same suite run with the candidate "
                                                  "(`evaluate --suite ... --set PATH=VALUE [--tuners ppo,mrc] --json`); "
                                                  "repeat for several suites")],
    tuners: Annotated[str | None, typer.Option("--tuners", help="controllers to compare, comma-separated (default: "
                                               "every online controller of the candidate runs)")] = None,
    costlier_slack: Annotated[int, typer.Option("--costlier-slack", min=0, help="the rule's (b): how many more cells "
                                                "may be costlier than static-default")] = 0,
    worst_slack: Annotated[float, typer.Option("--worst-slack", min=0.0, help="the rule's (c): how much higher the "
                                               "worst cell's regret may be, in pp")] = 1.0,
    ci_upper: Annotated[float | None, typer.Option("--ci-upper", help="the rule's (a) also asks the upper end of d's "
                                                   "95 % t-interval to be at most this, in pp (the rules since "
                                                   "2026-12-07: 0.25); omitted: the mean alone")] = None,
    json_out: JsonOpt = False,
    tracking_uri: Annotated[str | None, typer.Option(
        "--tracking-uri", help="MLflow store (default: MLFLOW_TRACKING_URI, else sqlite:///mlflow.db here)")] = None,
) -> None:
    """A candidate setting against the controllers as they ship, cell by cell, by the adoption rule.

    Pairs each cell of the candidate runs with the same cell (suite, trace, prices, seed, key draw) of the base runs,
    prices both costs against the base run's best hindsight cost, and gives per controller: mean regret before and
    after, the mean difference d with its 95 % CI, cells cheaper / dearer / the same, cells costlier than
    static-default, over 5 % and the worst, every changed cell, and the rule (docs/control.md): (a) mean d <= 0 (and
    its CI's upper end <= --ci-upper pp when given), (b)
    no more cells costlier than static-default, (c) the worst cell at most --worst-slack pp higher, (d) some cell
    changed. Logs the JSON and a plot to MLflow."""
    from cachetuner.errors import ConfigError
    from cachetuner.reports.compare_runs import compare_results, compare_table, log_compare

    names = None if tuners is None else [t.strip() for t in tuners.split(",") if t.strip()]
    if names == []:
        raise ConfigError("--tuners: give at least one controller name (omit --tuners for every online controller)")
    if ci_upper is not None and not math.isfinite(ci_upper):
        raise ConfigError(f"--ci-upper: must be a finite number of pp, got {ci_upper}")
    res = compare_results(base, candidate, tuners=names, costlier_slack=costlier_slack, worst_slack_pp=worst_slack,
                          ci_upper_pp=ci_upper)
    res["mlflow_run_id"] = log_compare(res, tracking_uri)
    if json_out:
        emit_json(res)
        return
    wide_out().print(compare_table(res))
    for t, r in res["tuners"].items():
        for x in r["changed"][:10]:
            out.print(f"  {t}: {x['trace']} / {x['prices']} / seed {x['seed']}: {100 * x['regret_before']:+.2f} → "
                      f"{100 * x['regret_after']:+.2f} %", highlight=False)
    out.print(f"MLflow run {res['mlflow_run_id']} (experiment cachetuner-suite)")
