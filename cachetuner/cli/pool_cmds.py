"""``cachetuner pool``: several ``evaluate --suite --json`` results as one summary and one paired comparison."""

from __future__ import annotations

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
