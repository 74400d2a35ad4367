"""Pool the cells of several ``evaluate --suite --json`` results into one summary and one paired comparison.

Why: a claim such as "over the six fresh suites the policy reads 1.07 % against `mrc`'s 0.99 %" is about cells from
several suite runs; pooling them here, from the files the runs wrote, makes that figure a command anyone can rerun
instead of a sum done by hand. Cells are never merged or dropped: a cell that appears in two files (the same suite,
trace, prices, seed and key draw) is an error, since it would count twice.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cachetuner.errors import ConfigError
from cachetuner.reports.paired import REFERENCES, paired_against
from cachetuner.reports.suite import summarise_cells

_CELL_KEYS = ("trace", "prices", "seed", "tuners")


def read_suite_result(path: Path) -> dict[str, Any]:
    """One suite result as ``evaluate --suite --json`` printed it; a one-line error naming the file otherwise."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file (a JSON file written by `cachetuner evaluate --suite ... --json`)") from None
    except OSError as e:
        raise ConfigError(f"{path}: cannot read it ({e.strerror or e})") from None
    try:
        res = json.loads(text)
    except json.JSONDecodeError as e:
        raise ConfigError(f"{path}:{e.lineno}: not JSON ({e.msg})") from None
    if not isinstance(res, dict) or not isinstance(res.get("cells"), list):
        raise ConfigError(f"{path}: not a suite result (no `cells` list; write one with `cachetuner evaluate --suite "
                          "... --json`)")
    for i, c in enumerate(res["cells"]):
        missing = [k for k in _CELL_KEYS if not isinstance(c, dict) or k not in c]
        if missing:
            raise ConfigError(f"{path}: cells[{i}] lacks {', '.join(missing)}")
        for t, r in c["tuners"].items():
            if not isinstance(r, dict) or "cost" not in r:
                raise ConfigError(f"{path}: cells[{i}].tuners.{t} lacks cost")
    return res


def pool_results(paths: list[Path], references: tuple[str, ...] = REFERENCES) -> dict[str, Any]:
    """The cells of every file (each tagged with its suite's name), their summary and the paired comparisons
    against ``references``, in the shape of a suite result; ``by_suite`` holds each suite's own summary."""
    if not paths:
        raise ConfigError("pool: give at least one suite result file")
    cells: list[dict[str, Any]] = []
    seen: dict[tuple[Any, ...], Path] = {}
    suites: list[dict[str, Any]] = []
    for p in paths:
        res = read_suite_result(p)
        name = str(res.get("suite") or p.stem)
        suites.append({"file": str(p), "suite": name, "cells": len(res["cells"])})
        for c in res["cells"]:
            key = (name, c["trace"], c["prices"], c["seed"], c.get("key_draw"))
            if key in seen:
                raise ConfigError(f"{p}: cell {c['trace']} / {c['prices']} / seed {c['seed']} of suite {name!r} is "
                                  f"also in {seen[key]}; a pooled cell must count once")
            seen[key] = p
            cells.append({**c, "suite": name})
    # per suite as well: a pooled mean can hide that one controller wins some suites and loses others
    by_suite = {n: summarise_cells([c for c in cells if c["suite"] == n]) for n in dict.fromkeys(s["suite"] for s in suites)}
    return {"suites": suites, "cells": cells, "summary": summarise_cells(cells), "by_suite": by_suite,
            "paired": paired_against(cells, references), "references": list(references)}


def log_pool(res: dict[str, Any], tracking_uri: str | None = None) -> str:
    """One MLflow run (experiment ``cachetuner-suite``, ``tags.kind = pool``) for a pooled result: the files as a
    param, the summary means and paired figures as metrics, the JSON and both plots. Returns the run id."""
    import mlflow

    from cachetuner.reports.paired import log_paired_metrics, paired_figure
    from cachetuner.reports.suite import log_summary_metrics, suite_figure
    from cachetuner.tracking import log_figure_png, setup_tracking

    setup_tracking(tracking_uri, experiment="cachetuner-suite")
    with mlflow.start_run(run_name=f"pool-{len(res['suites'])}-suites") as run:
        mlflow.set_tags({"kind": "pool", "references": ",".join(res["references"])})
        mlflow.log_params({"files": ",".join(s["file"] for s in res["suites"])[:6000],
                           "suites": ",".join(s["suite"] for s in res["suites"])[:6000], "cells": len(res["cells"])})
        log_summary_metrics(res["summary"])
        log_paired_metrics(res["paired"])
        mlflow.log_dict(res, "pool/pool.json")
        log_figure_png(suite_figure(res["cells"]), "pool_regret")
        if res["paired"]:
            log_figure_png(paired_figure(res["cells"], list(res["paired"])), "pool_paired")
        return str(run.info.run_id)


__all__ = ["log_pool", "pool_results", "read_suite_result"]
