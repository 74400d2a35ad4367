"""``cachetuner select``: the selection set and the rule that chooses which trained policy ships.

Why a command: the rule (docs/agent.md, *Selection rule*) decided which of several training seeds became
the shipped policy, so reproducing the recipe means reproducing that choice too. Validation during training
picks each seed's checkpoint, but on three workloads it is too noisy to rank seeds (it ranked first a policy
that was the dearest of its peers on everything else), so between seeds the *selection set* decides:

- the recipe's own training and validation workloads, whole, from a cold start, each at the recipe's prices
  with the memory price times each factor (x0.2 / x1 / x5 by default: the training randomisation's range),
  and optionally under memory budgets (``budgets``: shares of each workload's working set, the ``budget``
  regime at the recipe's miss price), where the policy is the lever;
- in every cell `mrc`, static-default and the hindsight references (`best-static`, `dp-hindsight`) on the
  recipe's env, and each policy on the env of its *own* training config (its observation and anchor), the
  same workload and prices;
- the rule (``--rule``; docs/agent.md says when each was written and why):

  - ``v2`` (the default since 2026-12-02): a policy is eligible if it is dearer than `mrc` in no cell, cheaper
    in at least one (a policy that only repeats `mrc` adds nothing to it), and costlier than static-default in
    no more cells than `mrc`. The eligible one with the lowest mean regret is chosen; it replaces the
    incumbent (``--incumbent``, e.g. the shipped ``default``) if the incumbent is not eligible itself or has
    a higher mean regret. Why: the target is "at least as cheap as `mrc`", and a policy's deviations from `mrc`
    on its own training workloads foretold them on held-out traffic (the policy shipped on 2026-12-02 was
    dearer than `mrc` in 6 selection-set cells and in 5 held-out cells; the one seed dearer in none was
    dearer in no held-out cell either).
  - ``v1``: eligible if costlier than static-default in no more cells than `mrc`; the eligible one with the
    lowest mean regret replaces the incumbent only if its mean regret is lower (the rule that chose the
    policy shipped on 2026-12-02).

The selection set is *not* held out: it is what the policies trained on, so it says nothing about
generalisation (the evaluation suites measure that, after the choice). The cells, summary and MLflow
logging are the evaluation suite's (:mod:`cachetuner.reports.suite`), so the tables and the plot read alike.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from rich.console import Console

from cachetuner.agent.config import TrainConfig
from cachetuner.env.config import EnvConfig, WorkloadSpec
from cachetuner.errors import ConfigError
from cachetuner.reports.suite import cached_policy

#: the memory-price factors of the selection set (the shipped recipe's randomize_memory range and its middle)
DEFAULT_FACTORS = (0.2, 1.0, 5.0)
#: Largest ``--factors`` value: a memory price this many times the recipe's (well past any regime of interest).
MAX_FACTOR = 1000.0
#: the references every cell runs on the recipe's env
BASELINE = ("mrc", "static-default", "best-static", "dp-hindsight")


#: a cell's price regime: ("memory", factor) or ("budget", share of the working set)
Regime = tuple[str, float]


def regimes(factors: tuple[float, ...], budgets: tuple[float, ...] = ()) -> list[Regime]:
    return [("memory", f) for f in factors] + [("budget", b) for b in budgets]


def regime_label(regime: Regime) -> str:
    kind, v = regime
    return f"memory x{v:g}" if kind == "memory" else f"budget {v:.0%}"


def selection_grid(cfg: TrainConfig, regs: list[Regime]) -> list[tuple[str, int, Regime]]:
    """``(train|eval, workload index, regime)`` for every cell of the recipe's selection set."""
    envs = (("train", cfg.env), ("eval", cfg.eval_env_config()))
    return [(which, i, r) for which, env in envs for i in range(len(env.workloads)) for r in regs]


def cell_env(env: EnvConfig, workload: WorkloadSpec, prices: Any, regime: Regime) -> EnvConfig:
    """``env`` on one workload, whole, without per-episode randomisation, at ``prices`` with the memory price
    times the regime's factor, or under its budget (memory free up to that share of the working set)."""
    kind, v = regime
    if kind == "memory":
        mem, _ = prices.resolve()
        p = prices.model_copy(update={"memory_per_gib_hour": mem * v, "randomize_memory": None})
    else:
        p = prices.model_copy(update={"preset": "budget", "budget_fraction": v, "budget_bytes": None,
                                      "memory_per_gib_hour": None, "randomize_memory": None})
    data = env.model_dump()
    data.update(workloads=[workload.model_dump()], episode_intervals=None, rate_factor=None, prices=p.model_dump())
    return EnvConfig.model_validate(data)


def selection_cell(recipe: str, which: str, index: int, regime: Regime, models: tuple[tuple[str, str], ...]) -> dict[str, Any]:
    """One cell: the references on the recipe's env, each policy on its own training env (a pure function of
    its arguments, so it can run as a Ray task)."""
    from cachetuner.control import build_controllers
    from cachetuner.evaluation.compare import EvalReport, add_relative_figures, evaluate_controllers

    cfg = TrainConfig.from_yaml(recipe)
    env = cfg.env if which == "train" else cfg.eval_env_config()
    if env.prices is None:
        raise ConfigError(f"{recipe}: the selection set needs env.prices (the memory price it multiplies)")
    wl = env.workloads[index]
    base = cell_env(env, wl, env.prices, regime)
    rep = evaluate_controllers(base, build_controllers(list(BASELINE), cfg.controllers, seed=0), seed=0)
    results = dict(rep.results)
    for label, path in models:
        art = cached_policy(path)
        own = cell_env(art.env_config, wl, env.prices, regime)
        ctl = build_controllers(["ppo"], cfg.controllers, seed=0, model=art)["ppo"]
        results[label] = evaluate_controllers(own, {label: ctl}, seed=0).results[label]
    best = add_relative_figures(results)
    out = EvalReport(rep.workload, results, base, best, rep.currency).to_json()
    return {"trace": f"{which}-{wl.label}", "prices": regime_label(regime), "seed": 0, **out}


#: the rules ``apply_rule`` knows (see the module doc)
RULES = ("v1", "v2")
#: relative difference below which two costs of one cell count as equal (the same decisions replay exactly)
SAME_COST = 1e-9


def check_rule(rule: str) -> None:
    """Refuse an unknown ``--rule`` in one line (before any cell runs, and again where it is applied)."""
    if rule not in RULES:
        raise ConfigError(f"--rule {rule!r}: expected one of {', '.join(RULES)}")


def versus_mrc(cells: list[dict[str, Any]], labels: list[str]) -> dict[str, dict[str, int]]:
    """Per policy: in how many cells it is dearer than `mrc` and in how many cheaper (the rest are ties)."""
    out = {m: {"dearer": 0, "cheaper": 0} for m in labels}
    for c in cells:
        ref = c["tuners"]["mrc"]["cost"]
        for m in labels:
            x = c["tuners"][m]["cost"]
            if x > ref * (1 + SAME_COST):
                out[m]["dearer"] += 1
            elif x < ref * (1 - SAME_COST):
                out[m]["cheaper"] += 1
    return out


def apply_rule(summary: dict[str, Any], labels: list[str], incumbent: str | None, *, rule: str = "v2",
               cells: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The selection rule ``rule`` on a selection-set summary (see the module doc); ``v2`` also needs the cells."""
    check_rule(rule)
    if rule == "v2" and cells is None:
        raise ConfigError("rule v2 compares each cell with mrc: give the cells")
    bar = summary["mrc"]["costlier_than_default"]
    vs = versus_mrc(cells, labels) if rule == "v2" and cells is not None else None

    def eligible_(m: str) -> bool:
        ok = summary[m]["costlier_than_default"] <= bar
        return ok and (vs is None or (vs[m]["dearer"] == 0 and vs[m]["cheaper"] > 0))

    mean = {m: summary[m]["regret"]["mean"] for m in labels}
    eligible = [m for m in labels if m != incumbent and eligible_(m)]
    best = min(eligible, key=mean.__getitem__, default=None)
    if best is None or incumbent is None:
        ships = best is not None
    elif rule == "v2":
        ships = not eligible_(incumbent) or mean[best] < mean[incumbent]
    else:
        ships = mean[best] < mean[incumbent]
    return {"rule": rule, "costlier_bar": bar, "versus_mrc": vs, "eligible": eligible, "best_eligible": best,
            "incumbent": incumbent, "incumbent_eligible": None if incumbent is None else eligible_(incumbent),
            "choice": best if ships else incumbent}


def run_selection(
    recipe: Path,
    models: dict[str, str],
    *,
    incumbent: str | None = None,
    rule: str = "v2",
    factors: tuple[float, ...] = DEFAULT_FACTORS,
    budgets: tuple[float, ...] = (),
    tracking_uri: str | None = None,
    console: Console | None = None,
    ray_address: str | None = None,
) -> dict[str, Any]:
    """The selection set of ``recipe`` for ``models`` (label -> path, ``default`` or MLflow URI), the summary,
    and the rule's choice; logged like an evaluation suite (experiment ``cachetuner-selection``)."""
    from cachetuner.reports.suite import track_cells

    if not models:
        raise ConfigError("select: give at least one policy (--model LABEL=PATH)")
    check_rule(rule)
    if incumbent is not None and incumbent not in models:
        raise ConfigError(f"--incumbent {incumbent!r}: not one of the --model labels ({', '.join(models)})")
    clash = sorted(set(models) & set(BASELINE))
    if clash:
        raise ConfigError(f"--model labels must differ from the references' names: {', '.join(clash)}")
    for f in factors:
        if not (math.isfinite(f) and 0 < f <= MAX_FACTOR):  # NaN fails too
            raise ConfigError(f"--factors: a memory-price factor must be a finite number in (0, {MAX_FACTOR:g}], "
                              f"got {f!r}")  # fmt: skip
    if any(not 0 < b <= 1 for b in budgets):  # NaN fails too
        raise ConfigError(f"--budgets: shares of the working set in (0, 1], got {list(budgets)}")
    regs = regimes(tuple(factors), tuple(budgets))
    if not regs:
        raise ConfigError("select: no price regime (give --factors, --budgets or both)")
    if ray_address is not None:
        from cachetuner.cluster import check_address

        check_address(ray_address)
    cfg = TrainConfig.from_yaml(recipe)
    resolved = tuple((k, str(Path(v).resolve()) if Path(v).is_file() else v) for k, v in models.items())
    for _label, path in resolved:
        cached_policy(path)  # a missing or broken model fails here, in one line, before any cell runs
    args = [(str(recipe.resolve()), which, i, r, resolved) for which, i, r in selection_grid(cfg, regs)]
    params = {"recipe": str(recipe), "rule": rule, "models": ",".join(f"{k}={v}" for k, v in resolved),
              "regimes": ",".join(map(regime_label, regs))}
    result = track_cells(
        selection_cell, args, name=f"selection-{cfg.experiment}", experiment="cachetuner-selection",
        kind="selection", params=params, tracking_uri=tracking_uri, console=console, ray_address=ray_address,
        describe=lambda a: f"{a[1]}-{a[2]} / {regime_label(a[3])}",
    )
    result["rule"] = apply_rule(result["summary"], list(models), incumbent, rule=rule, cells=result["cells"])
    return result


def print_selection(res: dict[str, Any], out: Console) -> None:
    from cachetuner.reports.suite import print_suite

    print_suite(res, out, title="selection set", experiment="cachetuner-selection")
    r = res["rule"]
    if r.get("versus_mrc"):
        out.print("against mrc, cells dearer / cheaper: "
                  + "; ".join(f"{m} {v['dearer']} / {v['cheaper']}" for m, v in r["versus_mrc"].items()))
    test = (f"costlier than static-default in at most {r['costlier_bar']} cells, as mrc"
            + (", dearer than mrc in none and cheaper in some" if r["rule"] == "v2" else ""))
    out.print(f"rule {r['rule']}: eligible ({test}): {', '.join(r['eligible']) or 'none'}; lowest mean regret among "
              f"them: {r['best_eligible'] or 'none'}; choice: {r['choice'] or 'none'}"
              + (f" (incumbent {r['incumbent']}, {'eligible' if r['incumbent_eligible'] else 'not eligible'})"
                 if r["incumbent"] else ""))


__all__ = ["BASELINE", "DEFAULT_FACTORS", "RULES", "apply_rule", "cell_env", "check_rule", "print_selection", "regime_label", "regimes",
           "run_selection", "selection_cell", "selection_grid", "versus_mrc"]
