"""``cachetuner compare --base B.json --candidate C.json``: a candidate setting against the controllers as they ship,
cell by cell, over the same suite cells, judged by a rule written down before the runs.

Why a command: every change to ``mrc`` or to the shipped policy's anchor is adopted only by a rule fixed before fresh
suites run (docs/control.md): d = regret with − regret without per cell, adopted if (a) the mean of d is at most 0
(and, where the rule says so, the upper end of its 95 % t-interval at most a bound: ``ci_upper_pp``), (b) no more
cells are costlier than static-default, (c) the worst cell's regret is at most 1 pp higher, (d) some cell changed (a
fresh draw that never exercises a change adopts nothing). Until now each
session computed that with a script of its own around ``suite_cell``, and one such script set a candidate in the
training env's anchor instead of the evaluation anchor, so its policy arm silently equalled the policy as it ships.
Here the candidate runs through the product command (``evaluate --suite S --set PATH=VALUE --tuners ...``), its result
records the overrides, and this module pairs it with the base run (or several suites' runs, pooled: a rule is judged
on every fresh cell it was written for): the same cells (suite, trace, prices, seed, key draw), each candidate cost
priced against the base run's best hindsight cost (a candidate run that names only the
controllers it changes has no references of its own; one that has them and differs is refused, since then the
overrides changed the traffic or the prices, not a controller). A candidate run without overrides must change no
cell: that is the check that the two runs measure the same thing.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
from rich.table import Table

from cachetuner.errors import ConfigError
from cachetuner.reports.intervals import t_interval
from cachetuner.reports.paired import paired_figure, same_cost
from cachetuner.reports.pool import read_suite_result

#: the rule's defaults: (b) how many more cells may be costlier than static-default, (c) how much higher the worst
#: cell's regret may be (pp); docs/control.md
COSTLIER_SLACK = 0
WORST_SLACK_PP = 1.0
#: a cell over this regret counts as "over 5 %" (issue 11's per-cell target)
OVER = 0.05


def _key(res: dict[str, Any], c: dict[str, Any]) -> tuple[Any, ...]:
    return (str(res.get("suite") or ""), c["trace"], c["prices"], c["seed"], c.get("key_draw"))


def _cells(paths: list[Path], role: str) -> tuple[dict[tuple[Any, ...], dict[str, Any]], dict[str, list[str]]]:
    """Every cell of ``paths`` keyed by (suite, trace, prices, seed, key draw), and each file's overrides; a cell in
    two files is an error (it would count twice)."""
    if not paths:
        raise ConfigError(f"compare: give at least one {role} result file")
    cells: dict[tuple[Any, ...], dict[str, Any]] = {}
    where: dict[tuple[Any, ...], Path] = {}
    overrides: dict[str, list[str]] = {}
    for p in paths:
        res = read_suite_result(p)
        overrides[str(p)] = list(res.get("overrides") or [])
        for c in res["cells"]:
            k = _key(res, c)
            if k in cells:
                raise ConfigError(f"{p}: cell {c['trace']} / {c['prices']} / seed {c['seed']} of suite {k[0]!r} is also "
                                  f"in {where[k]}; a cell must count once")
            cells[k], where[k] = c, p
    return cells, overrides


def compare_results(bases: list[Path], candidates: list[Path], *, tuners: list[str] | None = None,
                    costlier_slack: int = COSTLIER_SLACK, worst_slack_pp: float = WORST_SLACK_PP,
                    ci_upper_pp: float | None = None) -> dict[str, Any]:
    """Each controller of the candidate runs (or ``tuners``) against itself in the base runs, over the cells the
    candidates ran (every one must be in a base run; several suites pool, matched by suite name): per controller the
    mean regret before / after, d's mean and t interval, cells cheaper / dearer / the same, costlier than
    static-default, over 5 %, the worst cell, every changed cell, and the rule's verdict. ``ci_upper_pp``: the rule's
    (a) also asks the upper end of d's 95 % t-interval to be at most this (pp; the rules since 2026-12-07 say
    +0.25); None: the mean alone, as the earlier rules said."""
    base, base_over = _cells(bases, "base")
    cand, cand_over = _cells(candidates, "candidate")
    pairs: list[tuple[dict[str, Any], dict[str, Any]]] = []
    for k, c in cand.items():
        b = base.get(k)
        if b is None:
            raise ConfigError(f"candidate cell {c['trace']} / {c['prices']} / seed {c['seed']} of suite {k[0]!r} is in no "
                              "base file: compare runs of the same suites")
        pairs.append((b, c))
    online = [t for t in dict.fromkeys(t for _, c in pairs for t, r in c["tuners"].items() if not r.get("hindsight"))]
    names = tuners or online
    for t in names:
        if not all(t in c["tuners"] and t in b["tuners"] for b, c in pairs):
            raise ConfigError(f"{t!r}: not run in every cell of both the base and the candidate files")
    for b, c in pairs:
        bh, ch = b.get("best_hindsight"), c.get("best_hindsight")
        if not bh:
            raise ConfigError(f"base cell {b['trace']} / {b['prices']} has no best hindsight reference: the base run "
                              "needs the suite's hindsight controllers (best-static, dp-hindsight)")
        if ch and not same_cost(float(ch["cost"]), float(bh["cost"])):
            raise ConfigError(f"candidate cell {c['trace']} / {c['prices']}: its best hindsight cost {ch['cost']:.6g} "
                              f"differs from the base run's {bh['cost']:.6g}: the overrides changed the traffic or the "
                              "prices, not only a controller")
        if "static-default" not in b["tuners"]:
            raise ConfigError(f"base cell {b['trace']} / {b['prices']} has no static-default (the rule's (b))")
    per = {t: _compare_one(t, pairs, costlier_slack, worst_slack_pp, ci_upper_pp) for t in names}
    suites = list(dict.fromkeys(k[0] for k in cand))
    over = list(dict.fromkeys(o for v in cand_over.values() for o in v))
    return {"bases": [str(p) for p in bases], "candidates": [str(p) for p in candidates], "suites": suites,
            "overrides": {"base": base_over, "candidate": cand_over, "candidate_all": over},
            "cells": len(pairs), "base_cells_not_compared": len(base) - len(pairs),
            "rule": {"costlier_slack": costlier_slack, "worst_slack_pp": worst_slack_pp, "ci_upper_pp": ci_upper_pp},
            "tuners": per}


def _compare_one(t: str, pairs: list[tuple[dict[str, Any], dict[str, Any]]], costlier_slack: int,
                 worst_slack_pp: float, ci_upper_pp: float | None = None) -> dict[str, Any]:
    before, after, changed = [], [], []
    costlier = [0, 0]
    counts = {"cheaper": 0, "dearer": 0, "same": 0}
    for b, c in pairs:
        best = float(b["best_hindsight"]["cost"])
        default = float(b["tuners"]["static-default"]["cost"])
        cb, cc = float(b["tuners"][t]["cost"]), float(c["tuners"][t]["cost"])
        rb, rc = cb / best - 1.0, cc / best - 1.0
        before.append(rb)
        after.append(rc)
        costlier[0] += cb > default
        costlier[1] += cc > default
        if same_cost(cb, cc):
            counts["same"] += 1
            continue
        counts["cheaper" if cc < cb else "dearer"] += 1
        changed.append({"trace": c["trace"], "prices": c["prices"], "seed": c["seed"], "regret_before": rb,
                        "regret_after": rc, "diff": rc - rb})
    d = np.asarray(after) - np.asarray(before)
    ci = t_interval(d)
    mean_d = float(d.mean())
    worst = (max(before), max(after))
    checks = {
        "a_mean_diff_at_most_0": mean_d <= 0.0,
        **({} if ci_upper_pp is None else {"a_ci_upper_within": ci is not None and ci[1] <= ci_upper_pp / 100.0}),
        "b_costlier_not_more": costlier[1] <= costlier[0] + costlier_slack,
        "c_worst_within_slack": worst[1] <= worst[0] + worst_slack_pp / 100.0,
        "d_some_cell_changed": bool(changed),
    }
    changed.sort(key=lambda x: -abs(x["diff"]))
    return {"cells": len(pairs), "mean_regret": [float(np.mean(before)), float(np.mean(after))], "mean_diff": mean_d,
            "ci": None if ci is None else [ci[0], ci[1]], **counts,
            "costlier_than_default": costlier, "over_5pct": [sum(x > OVER for x in before), sum(x > OVER for x in after)],
            "worst": [worst[0], worst[1]], "rule": checks, "meets_rule": all(checks.values()), "changed": changed}


def _pct(x: float) -> str:
    return f"{100 * x:.3f} %" if math.isfinite(x) else "-"


def compare_table(res: dict[str, Any]) -> Table:
    """One row per controller: the rule's figures, before → after."""
    over = " ".join(res["overrides"]["candidate_all"]) or "none"
    tab = Table(title=f"{', '.join(res['suites'])}: candidate ({over}) against base, {res['cells']} cells")
    checks = "a, a's CI bound, b, c, d" if res["rule"].get("ci_upper_pp") is not None else "a, b, c, d"
    for col in ("controller", "mean regret", "mean d (95 % CI)", "cheaper / dearer / same", "costlier than default",
                "over 5 %", "worst", f"rule ({checks})"):
        tab.add_column(col)
    for t, r in res["tuners"].items():
        ci = "" if r["ci"] is None else f" ({100 * r['ci'][0]:+.4f} to {100 * r['ci'][1]:+.4f})"
        marks = " ".join("ok" if v else "FAILS" for v in r["rule"].values())
        tab.add_row(t, f"{_pct(r['mean_regret'][0])} → {_pct(r['mean_regret'][1])}", f"{100 * r['mean_diff']:+.4f} pp{ci}",
                    f"{r['cheaper']} / {r['dearer']} / {r['same']}",
                    f"{r['costlier_than_default'][0]} → {r['costlier_than_default'][1]}",
                    f"{r['over_5pct'][0]} → {r['over_5pct'][1]}", f"{_pct(r['worst'][0])} → {_pct(r['worst'][1])}",
                    f"{marks}: {'meets' if r['meets_rule'] else 'fails'}")
    return tab


def compare_figure(res: dict[str, Any]) -> Any:
    """Every cell's d (candidate − base, pp), sorted, one panel per controller (the paired plot's form)."""
    cells, pairs = [], []
    for t, r in res["tuners"].items():
        name = f"{t} (candidate)"
        pairs.append(f"{name} vs {t}")
        same = r["cells"] - len(r["changed"])
        rows = [(x["regret_after"], x["regret_before"]) for x in r["changed"]] + [(0.0, 0.0)] * same
        cells += [{"tuners": {name: {"regret": a}, t: {"regret": b}}} for a, b in rows]
    return paired_figure(cells, pairs)


def log_compare(res: dict[str, Any], tracking_uri: str | None = None) -> str:
    """One MLflow run (experiment ``cachetuner-suite``, ``tags.kind = compare``): both files and the overrides as
    params, each controller's mean d and rule verdict as metrics, the JSON and the plot. Returns the run id."""
    import mlflow

    from cachetuner.tracking import log_figure_png, setup_tracking

    setup_tracking(tracking_uri, experiment="cachetuner-suite")
    with mlflow.start_run(run_name=f"compare-{len(res['suites'])}-suites") as run:
        mlflow.set_tags({"kind": "compare", "suites": ",".join(res["suites"])[:5000]})
        mlflow.log_params({"bases": ",".join(res["bases"])[:6000], "candidates": ",".join(res["candidates"])[:6000],
                           "cells": res["cells"], "overrides": " ".join(res["overrides"]["candidate_all"])[:6000]})
        for t, r in res["tuners"].items():
            mlflow.log_metrics({f"{t}.mean_diff": r["mean_diff"], f"{t}.meets_rule": float(r["meets_rule"]),
                                f"{t}.cheaper": r["cheaper"], f"{t}.dearer": r["dearer"]})
        mlflow.log_dict(res, "compare/compare.json")
        log_figure_png(compare_figure(res), "compare_diff")
        return str(run.info.run_id)


__all__ = ["compare_figure", "compare_results", "compare_table", "log_compare"]
