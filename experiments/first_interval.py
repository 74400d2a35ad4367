"""How much of a suite's regret is the first interval, spent at static-default before any decision.

Every online controller starts at the operator's config and first decides after one interval; the hindsight
references hold their config from the first request. At decisions every 300 s that first interval is five minutes of
a trace 30-60 intervals long, so it is a visible share of the regret (2026-12-07: 0.75 pp of the shipped policy's
3.00 % on interval audits 29-32). This script re-evaluates a suite's cells, built exactly as ``evaluate --suite``
builds them, and prints each controller's mean regret as measured and with its first interval priced at the best
hindsight reference's own first interval. Development analysis only: the product's figures are the measured ones.

Usage (from the repository root)::

    .venv/bin/python experiments/first_interval.py --interval 300 experiments/suite-interval-audit-29.yaml ...
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from cachetuner.control.base import build_controllers
from cachetuner.evaluation.compare import evaluate_controllers
from cachetuner.reports.suite import SuiteConfig, cached_policy, price_label, resolve_train_config, trace_env
from cachetuner.yamlconfig import load_model, with_overrides

ONLINE = ("ppo", "mrc", "static-default")
HINDSIGHT = ("best-static", "dp-hindsight")


def cell_costs(suite_path: str, interval_s: float) -> list[dict[str, Any]]:
    """Per cell of one suite: each controller's cost in its first interval and in the rest."""
    suite = load_model(SuiteConfig, Path(suite_path)).resolved(False, suite_path).located(Path(suite_path))
    cfg, _ = resolve_train_config("default", None)
    cfg = with_overrides(cfg, [f"eval.env.interval_s={interval_s}"])
    artifact = cached_policy("default")
    names = [*ONLINE, *HINDSIGHT]
    rows = []
    for tr in suite.traces:
        for price in suite.prices:
            for seed in suite.seeds:
                env_cfg = trace_env(cfg, tr, price, seed, suite.intervals, seed if suite.redraw_keys else 0)
                ctls = build_controllers(names, cfg.controllers, seed=seed, model=artifact, params={})
                rep = evaluate_controllers(env_cfg, ctls, seed=seed)
                row: dict[str, Any] = {"suite": suite.name, "trace": tr.label, "prices": price_label(price), "seed": seed}
                for n in names:
                    costs = [sum(r.cost.values()) for r in rep.results[n].records]
                    row[n] = {"first": costs[0], "rest": sum(costs[1:])}
                rows.append(row)
                print(json.dumps(row), file=sys.stderr, flush=True)
    return rows


def regrets(row: dict[str, Any], name: str) -> tuple[float, float]:
    """(regret as measured, regret with the first interval at the best hindsight reference's first-interval cost)."""
    best = min(HINDSIGHT, key=lambda h: row[h]["first"] + row[h]["rest"])
    best_cost = row[best]["first"] + row[best]["rest"]
    cost = row[name]["first"] + row[name]["rest"]
    return cost / best_cost - 1, (row[best]["first"] + row[name]["rest"]) / best_cost - 1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--interval", type=float, required=True, help="decision interval in seconds (eval.env.interval_s)")
    ap.add_argument("suites", nargs="+")
    args = ap.parse_args()
    rows = [r for s in args.suites for r in cell_costs(s, args.interval)]
    for name in ONLINE:
        measured, without_first = zip(*(regrets(r, name) for r in rows), strict=True)
        print(json.dumps({"controller": name, "cells": len(rows),
                          "mean_regret": sum(measured) / len(rows),
                          "mean_regret_first_interval_at_reference": sum(without_first) / len(rows),
                          "over_5pct": sum(x > 0.05 for x in measured),
                          "over_5pct_first_interval_at_reference": sum(x > 0.05 for x in without_first)}))


if __name__ == "__main__":
    main()
