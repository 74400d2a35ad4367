"""``cachetuner evaluate --suite``: every controller x every held-out trace x price regimes x seeds.

Each cell (trace, prices, seed) runs every controller on its own fresh env over identical traffic
(:func:`~cachetuner.evaluation.compare.evaluate_controllers`); the summary gives, per controller,
``savings_vs_default`` and ``regret`` (vs the cheapest hindsight reference of each cell) with a 95 %
t-interval over cells, the worst regret, mean hit ratio and mean maxmemory. Traces the model was
trained on are refused: a suite measures generalisation, not recall.

MLflow: one parent run (``tags.kind = suite``) with a child run per cell, the cells and summary as
JSON artifacts and a summary plot (cost relative to the best hindsight reference, per controller and
trace).

With ``ray_address`` the cells run as Ray tasks (:func:`cachetuner.cluster.map_tasks`), one CPU each,
on this machine (``local``) or a cluster; every cell is the same pure function of its arguments
(:func:`suite_cell`), so the results equal the serial run's (only the per-controller ``seconds``
differ) and the driver logs them to MLflow in grid order.
"""

from __future__ import annotations

import functools
import json
import tempfile
from pathlib import Path
from typing import Annotated, Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator
from rich.console import Console

from cachetuner.agent.config import TrainConfig
from cachetuner.control import build_controllers
from cachetuner.control.learned import PolicyArtifact, load_policy
from cachetuner.env import EnvConfig
from cachetuner.env.prices import PRESETS, PricesConfig
from cachetuner.errors import ConfigError
from cachetuner.evaluation.compare import evaluate_controllers
from cachetuner.reports.evaluate import evaluation_env, resolve_train_config, wall_time_note, with_history
from cachetuner.reports.intervals import t_interval
from cachetuner.reports.paired import log_paired_metrics, paired_against, paired_figure
from cachetuner.yamlconfig import load_model, with_overrides


class SuiteTrace(BaseModel):
    """One held-out trace (the arguments of ``cachetuner evaluate --trace``)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    trace: str
    name: str | None = None
    format: str = "auto"
    size_model: str | None = "fixed:4096"
    rate: float | None = Field(100.0, gt=0)
    rate_profile: str | None = Field(None, description="diurnal:PERIOD_S,AMPLITUDE or bursts:PERIOD_S,DUTY[,LOW] "
                                     "around `rate` (docs/traces.md); None = steady")
    limit: int | None = Field(None, ge=1)
    start: int = Field(0, ge=0, description="read from this request on (a window of a long trace; `limit` counts from "
                       "here)")
    params: dict[str, Any] = Field(default_factory=dict, description="reader params (e.g. the csv format's columns)")

    @property
    def label(self) -> str:
        return self.name or Path(self.trace).name


class SuitePrices(PricesConfig):
    """A price regime spelled out (``{name: budget-10pct, preset: budget, budget_fraction: 0.1}``) where a
    preset name is not enough: the ``budget`` regime needs its cap, and a user may price misses their way."""

    name: str | None = Field(None, description="the regime's label in the cells and tables; None = the preset")

    @property
    def label(self) -> str:
        return self.name or self.preset


PriceEntry = str | SuitePrices


def _check_prices(entries: list[PriceEntry] | None) -> list[PriceEntry] | None:
    """A preset name must exist and carry everything it needs (``budget`` needs its cap: spell it out)."""
    for p in entries or []:
        if isinstance(p, str) and (p not in PRESETS or p == "budget"):
            hint = ("the budget regime needs its cap: {name: ..., preset: budget, budget_fraction: 0.1}"
                    if p == "budget" else f"expected one of {', '.join(k for k in PRESETS if k != 'budget')} or a mapping")
            raise ValueError(f"price regime {p!r}: {hint}")
    labels = [price_label(p) for p in entries or []]
    if len(set(labels)) != len(labels):
        raise ValueError(f"price regimes need distinct names, got {labels}")
    return entries


def price_label(p: PriceEntry) -> str:
    return p if isinstance(p, str) else p.label


def _default_prices() -> list[PriceEntry]:
    """The default suite's price regime (a fresh list per model)."""
    return ["scaled"]


def _check_traces(entries: list[SuiteTrace] | None) -> list[SuiteTrace] | None:
    """Each trace entry needs its own label: cells and the summary are keyed by it, so two entries of one name
    (the same file at two rates) would be reported as one trace."""
    labels = [t.label for t in entries or []]
    dup = sorted({x for x in labels if labels.count(x) > 1})
    if dup:
        raise ValueError(f"two or more entries are labelled {', '.join(map(repr, dup))}: give each a distinct name:")
    return entries


#: a seed list of a suite: at least one, none negative
Seeds = Annotated[list[Annotated[int, Field(ge=0)]], Field(min_length=1)]


class SuiteVariant(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    traces: list[SuiteTrace] | None = Field(None, min_length=1)
    prices: list[PriceEntry] | None = Field(None, min_length=1)
    seeds: Seeds | None = None
    intervals: int | None = Field(None, ge=1)
    controllers: list[str] | None = Field(None, min_length=1)

    _prices = field_validator("prices")(_check_prices)
    _traces = field_validator("traces")(_check_traces)


class SuiteConfig(BaseModel):
    """``experiments/suite.yaml``: the default suite, and its ``full`` variant (``--full``)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    name: str = "suite"
    model: str | None = Field("default", description="policy for the ppo controller: a path, runs:/ URI or default")
    config: str | None = Field(
        None, description="experiment YAML for the env and controller settings; None = the model's training config"
    )
    controllers: list[str] = Field(
        default_factory=lambda: ["ppo", "mrc", "static-default", "best-static", "dp-hindsight", "hill-climb"],
        min_length=1,
    )
    traces: list[SuiteTrace] = Field(..., min_length=1)
    prices: list[PriceEntry] = Field(
        default_factory=_default_prices, min_length=1,
        description="price regimes: preset names (cachetuner.env.prices) or mappings of PricesConfig fields with a name",
    )
    seeds: Seeds = Field(default_factory=lambda: [0])
    intervals: int | None = Field(None, ge=1, description="episode length; None = whole traces")
    history: float | None = Field(
        None, gt=0, lt=1, description="replay only the rest of each trace after this share; the `recommended` "
        "controller is sized on that share with `cachetuner recommend` (an operator with last week's traffic)"
    )
    redraw_keys: bool = Field(
        False, description="each seed also redraws the key sample the curves read: the cell's trace is relabelled with "
        "key_draw = seed (Trace.relabelled). Off, every seed of a trace samples the same keys (the hash is fixed), and "
        "the spread over seeds leaves out the sampling's luck"
    )
    full: SuiteVariant | None = None

    _prices = field_validator("prices")(_check_prices)
    _traces = field_validator("traces")(_check_traces)

    def resolved(self, full: bool, source: object = "suite") -> SuiteConfig:
        """The suite, or with ``full`` its ``full:`` variant; ``--full`` on a suite without one is refused (it would
        run the plain suite under the full suite's label)."""
        if full and self.full is None:
            raise ConfigError(f"{source}: --full: the suite has no full: section")
        if not full or self.full is None:
            return self
        # attributes, not model_dump(): a spelled-out price regime must stay a SuitePrices
        upd = {k: getattr(self.full, k) for k in SuiteVariant.model_fields if getattr(self.full, k) is not None}
        upd["traces"] = self.full.traces or self.traces
        return self.model_copy(update={**upd, "full": None})

    def located(self, path: Path) -> SuiteConfig:
        """The suite with every file it names (trace files and workload YAMLs, and ``config:``) found: as written when
        it exists from the working directory (as on the command line: the shipped suites say ``../shared/...``),
        else relative to the suite file ``path``, so a suite kept next to its traces runs from anywhere. A file in
        neither place stops the suite before its first cell with one line naming the entry (else a long suite
        would fail at that cell, hours in)."""

        def find(ref: str, field: str) -> str:
            if ref.startswith(("synthetic:", "bundled:")) or Path(ref).exists():
                return ref
            beside = path.parent / ref
            if not Path(ref).is_absolute() and beside.exists():
                return str(beside)
            where = "" if Path(ref).is_absolute() else f" (looked in {Path.cwd()} and {path.parent.resolve()})"
            raise ConfigError(f"{path}: {field}: {ref!r}: no such file{where}")

        traces = [t.model_copy(update={"trace": find(t.trace, f"traces[{i}].trace")}) for i, t in enumerate(self.traces)]
        config = None if self.config is None else find(self.config, "config")
        return self.model_copy(update={"traces": traces, "config": config})


def _ci95(xs: list[float]) -> list[float] | None:
    """The 95 % t interval of the mean over cells (a normal 1.96 factor until 2026-12-06: 5 % narrower at 26 cells)."""
    ci = t_interval(xs)
    return None if ci is None else [ci[0], ci[1]]


def summarise_cells(cells: list[dict[str, Any]]) -> dict[str, Any]:
    """Per controller: mean and CI of savings and regret over cells, worst regret, mean hit ratio/memory, and the
    mean and worst regret from the first decision on (see :func:`~cachetuner.evaluation.compare.add_relative_figures`)."""
    out: dict[str, Any] = {}
    names = list(dict.fromkeys(t for c in cells for t in c["tuners"]))
    for t in names:
        rows = [c["tuners"][t] for c in cells if t in c["tuners"]]
        sav = [r["savings_vs_default"] for r in rows if r.get("savings_vs_default") is not None]
        reg = [r["regret"] for r in rows if r.get("regret") is not None]
        # results written before 2026-12-07 carry no regret_from_first_decision: None then, not a mean of a subset
        rfd = [r.get("regret_from_first_decision") for r in rows]
        out[t] = {
            "savings_vs_default": {"mean": float(np.mean(sav)) if sav else None, "ci": _ci95(sav)},
            "regret": {"mean": float(np.mean(reg)) if reg else None, "ci": _ci95(reg),
                       "max": float(np.max(reg)) if reg else None},
            "regret_from_first_decision": (
                {"mean": float(np.mean(rfd)), "max": float(np.max(rfd))} if rfd and None not in rfd else None
            ),
            "hit_ratio": float(np.mean([r["hit_ratio"] for r in rows])),
            "mean_maxmemory_bytes": float(np.mean([r["mean_maxmemory_bytes"] for r in rows])),
            "costlier_than_default": int(sum(1 for s in sav if s < -1e-9)),
            "hindsight": bool(rows[0].get("hindsight", False)),
            "cells": len(rows),
        }
    return out


def log_summary_metrics(summary: dict[str, Any]) -> None:
    """The summary's means as metrics of the active MLflow run: ``<controller>.{savings_vs_default,regret}.mean``."""
    import mlflow

    for k, v in summary.items():
        for m in ("savings_vs_default", "regret"):
            if v[m]["mean"] is not None:
                mlflow.log_metric(f"{k}.{m}.mean", v[m]["mean"])


def _training_traces(raw: dict[str, Any]) -> set[str]:
    env = raw.get("env") or {}
    found = {str(w.get("trace")) for w in env.get("workloads", [])}
    return {Path(t).name if not t.startswith(("synthetic:", "bundled:")) else t for t in found}


@functools.lru_cache(maxsize=8)
def cached_policy(model: str) -> PolicyArtifact:
    """One load per process of each policy the cells evaluate (the driver, or each Ray worker); shared by the
    suite and the selection set."""
    return load_policy(model)


def trace_env(cfg: TrainConfig, tr: SuiteTrace, price: PriceEntry, seed: int, intervals: int | None = None,
              key_draw: int = 0) -> EnvConfig:
    """The evaluation env of one suite trace under one price regime and seed: every reading option of ``tr`` passed
    on (the suite cells and the hotness ablation build their cells alike)."""
    env_cfg, _ = evaluation_env(cfg, trace=tr.trace, fmt=tr.format, size_model=tr.size_model, rate=tr.rate,
                                seed=seed, limit=tr.limit, params=tr.params, intervals=intervals,
                                prices=price, rate_profile=tr.rate_profile, key_draw=key_draw, start=tr.start)
    return env_cfg


def suite_cell(cfg: TrainConfig, names: list[str], model: str | None, tr: SuiteTrace, price: PriceEntry, seed: int,
               intervals: int | None, history: float | None = None, key_draw: int = 0) -> dict[str, Any]:
    """One cell: every controller on one trace, price regime and seed (a Ray task, or called in turn). With
    ``history``, the cell replays the rest of the trace after that share, and ``recommended`` is sized on it; with
    ``key_draw``, the trace's keys are relabelled (another draw of the curves' key sample)."""
    artifact = cached_policy(model) if (model is not None and "ppo" in names) else None
    env_cfg = trace_env(cfg, tr, price, seed, intervals, key_draw)
    params: dict[str, dict[str, Any]] = {}
    if history is not None:
        env_cfg, params = with_history(env_cfg, history)
    ctls = build_controllers(names, cfg.controllers, seed=seed, model=artifact, params=params)
    rep = evaluate_controllers(env_cfg, ctls, seed=seed)
    out = {"trace": tr.label, "prices": price_label(price), "seed": seed, **rep.to_json(),
           "replaced": replaced_by_options(env_cfg)}
    if history is not None:
        out["history"] = {"share": history, "requests": env_cfg.workloads[0].skip}
    if key_draw:
        out["key_draw"] = key_draw
    if tr.start:
        out["window"] = {"start": tr.start, "limit": tr.limit}
    return out


def replaced_by_options(env_cfg: EnvConfig) -> list[str]:
    """What the suite's trace options replaced in the trace itself: its own sizes (``size_model``, fixed:4096 unless
    the entry says ``size_model: null``) and its own timestamps (``rate``, 100 req/s unless ``rate: null``). The
    suites' convention follows the issue's measurements (4 KiB values, a stated request rate) and is what makes cells
    comparable, but a user's trace with real sizes or a real clock should know it was not replayed as recorded.
    Read from the trace the cell's envs loaded (cached in this process, so free)."""
    from cachetuner.env.sim_backend import load_workload

    meta = load_workload(env_cfg.workloads[0]).meta
    out = []
    if "overrides trace sizes" in str(meta.get("size_model", "")):
        out.append(f"sizes (with {str(meta['size_model']).split(' ')[0]})")
    if meta.get("timing") == "re-timed uniformly at --rate":
        out.append(f"timestamps (re-timed uniformly at {meta.get('rate', 0):g} req/s)")
    return out


#: what a suite entry sets to keep what :func:`replaced_by_options` reports replaced (by its first word)
_KEEP = {"sizes": "size_model: null", "timestamps": "rate: null"}


def replacement_notes(cells: list[dict[str, Any]]) -> list[str]:
    """One line per trace whose own sizes or timestamps the suite's options replaced (see :func:`replaced_by_options`)."""
    seen: dict[str, list[str]] = {}
    for c in cells:
        if c.get("replaced"):
            seen.setdefault(c["trace"], c["replaced"])
    return [f"{t}: replaced the trace's own {' and '.join(r)}; to replay it as recorded, set "
            f"{' and '.join(_KEEP[v.split(' ', 1)[0]] for v in r)} in its suite entry" for t, r in seen.items()]


def run_suite(
    path: Path,
    *,
    model: str | None = None,
    full: bool = False,
    tracking_uri: str | None = None,
    console: Console | None = None,
    ray_address: str | None = None,
    num_cpus: int | None = None,
    redraw_keys: bool | None = None,
    overrides: list[str] | None = None,
    controllers: list[str] | None = None,
) -> dict[str, Any]:
    """Run the suite at ``path``; one JSON-ready dict ``{"cells": [...], "summary": {...}, ...}``.

    ``ray_address``: None = cells in turn in this process; ``local`` = Ray started here with
    ``num_cpus`` workers; ``auto`` / ``HOST:PORT`` / ``ray://HOST:PORT`` = a Ray cluster. ``redraw_keys``: overrides
    the suite's (None keeps it). ``overrides``: ``PATH=VALUE`` settings applied to the experiment config (the model's
    ``train_config.yaml`` or the suite's ``config:``; :func:`~cachetuner.yamlconfig.with_overrides`), recorded in the
    result; ``controllers``: run these instead of the suite's (a candidate's run needs only the controllers it
    changes: ``cachetuner compare`` prices them against the base run's hindsight references)."""
    suite = load_model(SuiteConfig, path).resolved(full, path).located(path)
    if redraw_keys is not None:
        suite = suite.model_copy(update={"redraw_keys": redraw_keys})
    if controllers is not None:
        if not controllers:
            raise ConfigError("--tuners: give at least one controller name (omit --tuners for the suite's)")
        suite = suite.model_copy(update={"controllers": list(controllers)})
    if ray_address is not None:
        from cachetuner.cluster import check_address

        check_address(ray_address)
    model = model or suite.model
    names = [n for n in suite.controllers if n != "ppo" or model is not None]
    if model is not None and "ppo" in names and Path(str(model)).is_file():
        model = str(Path(str(model)).resolve())  # Ray workers may start elsewhere
    artifact = cached_policy(str(model)) if (model is not None and "ppo" in names) else None
    # without `ppo` a model still lends its training config (its train_config.yaml) when the suite names no config
    cfg, src = resolve_train_config(model, Path(suite.config) if suite.config else None)
    if artifact is None and src is None:
        raise ConfigError(f"{path}: without a model (or its train_config.yaml), set `config:` (an experiment YAML) for "
                          "the env and controller settings")
    if overrides:
        cfg = with_overrides(cfg, overrides)
    if artifact is not None:
        trained = _training_traces(artifact.raw_config)
        for t in suite.traces:
            if Path(t.trace).name in trained or t.trace in trained:
                raise ConfigError(f"{path}: trace {t.trace!r} is in the model's training workloads; a suite needs held-out traces")
    grid = [(t, p, s) for t in suite.traces for p in suite.prices for s in suite.seeds]
    if "recommended" in names and suite.history is None:
        raise ConfigError(f"{path}: controller 'recommended' needs `history:` (the share of each trace it is sized on)")
    if "mrc-history" in names and suite.history is None:
        raise ConfigError(f"{path}: controller 'mrc-history' needs `history:` (the share of each trace its curves watch)")
    args = [(cfg, names, None if artifact is None else str(model), tr, p, s, suite.intervals, suite.history,
             s if suite.redraw_keys else 0) for tr, p, s in grid]
    params = {"controllers": ",".join(names), "prices": ",".join(map(price_label, suite.prices)),
              "seeds": ",".join(map(str, suite.seeds)), "traces": ",".join(t.label for t in suite.traces),
              "history": str(suite.history), "redraw_keys": str(suite.redraw_keys),
              "overrides": " ".join(overrides or [])[:6000]}
    res = track_cells(
        suite_cell, args, name=f"suite-{suite.name}{'-full' if full else ''}", experiment="cachetuner-suite", kind="suite",
        params=params, tracking_uri=tracking_uri, console=console, ray_address=ray_address, num_cpus=num_cpus,
        describe=lambda a: f"{a[3].label} / {price_label(a[4])} / seed {a[5]}",
        tags={"suite": suite.name, "model": str(model or "")}, extra={"suite": suite.name, "full": full, "model": model, "redraw_keys": suite.redraw_keys,
               "overrides": list(overrides or [])},
    )
    note = wall_time_note(cfg.eval_env_config(), cfg.controllers.mrc.reference_interval_s)
    res["notes"] = replacement_notes(res["cells"]) + ([note] if note else [])
    return res


def track_cells(
    fn: Any,
    args: list[tuple[Any, ...]],
    *,
    name: str,
    experiment: str,
    kind: str,
    params: dict[str, str],
    tracking_uri: str | None,
    console: Console | None,
    ray_address: str | None,
    describe: Any,
    num_cpus: int | None = None,
    tags: dict[str, str] | None = None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """``fn(*a)`` for every ``a`` (in turn, or as Ray tasks), each a cell dict (``trace``, ``prices``, ``seed``,
    ``tuners``), under one MLflow parent run with a child per cell, the summary's means as metrics, the whole
    result as JSON and the summary plot. Returns ``{**extra, "cells", "summary", "mlflow_run_id"}``. Shared by
    the evaluation suite and the selection set (:mod:`cachetuner.reports.selection`)."""
    import mlflow
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from cachetuner.tracking import log_figure_png, setup_tracking

    console = console or Console(stderr=True)
    cells: list[dict[str, Any]] = []
    setup_tracking(tracking_uri, experiment=experiment)
    with mlflow.start_run(run_name=name) as parent, Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console
    ) as prog:
        mlflow.set_tags({"kind": kind, **(tags or {})})
        mlflow.log_params(params)
        mlflow.set_tag("ray_address", ray_address or "none (serial)")
        task = prog.add_task(kind, total=len(args))

        def record(_i: int, cell: dict[str, Any]) -> None:
            with mlflow.start_run(run_name=f"{cell['trace']}-{cell['prices']}-s{cell['seed']}", nested=True):
                mlflow.set_tags({"kind": f"{kind}-cell", "trace": cell["trace"], "prices": cell["prices"]})
                mlflow.log_metrics({f"{t}.{k}": float(v) for t, s in cell["tuners"].items() for k, v in s.items()
                                    if isinstance(v, int | float) and not isinstance(v, bool)})
            prog.advance(task)
            if not console.is_terminal:  # a log file gets no live bar until the end: a line per cell instead
                done = int(prog.tasks[task].completed)
                console.print(f"{kind} {done}/{len(args)}: {cell['trace']} / {cell['prices']} / seed {cell['seed']}",
                              highlight=False)

        if ray_address is None:
            for i, a in enumerate(args):
                prog.update(task, description=describe(a))
                cells.append(fn(*a))
                record(i, cells[-1])
        else:
            from cachetuner.cluster import map_tasks

            prog.update(task, description=f"{kind} cells on Ray ({ray_address})")
            cells, _nodes = map_tasks(fn, args, address=ray_address, num_cpus=num_cpus, on_done=record)
        summary = summarise_cells(cells)
        paired = paired_against(cells)
        result = {**(extra or {}), "cells": cells, "summary": summary, "paired": paired,
                  "mlflow_run_id": parent.info.run_id}
        log_summary_metrics(summary)
        log_paired_metrics(paired)
        with tempfile.TemporaryDirectory() as d:
            p = Path(d) / f"{kind}.json"
            p.write_text(json.dumps(result, default=str))
            mlflow.log_artifact(str(p), artifact_path=kind)
        log_figure_png(suite_figure(cells), f"{kind}_regret")
        if paired:
            log_figure_png(paired_figure(cells, list(paired)), f"{kind}_paired")
    return result


def suite_figure(cells: list[dict[str, Any]]) -> Any:
    """Cost relative to the best hindsight reference (1 + regret), per controller, grouped by trace."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    traces = list(dict.fromkeys(c["trace"] for c in cells))
    names = [n for n in dict.fromkeys(t for c in cells for t in c["tuners"])]
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(traces) * max(len(names), 1) / 4), 4))
    w = 0.8 / max(len(names), 1)
    for j, n in enumerate(names):
        vals = []
        for t in traces:
            rs = [c["tuners"][n]["regret"] for c in cells if c["trace"] == t and n in c["tuners"]
                  and c["tuners"][n]["regret"] is not None]
            vals.append(1.0 + float(np.mean(rs)) if rs else np.nan)
        ax.bar(np.arange(len(traces)) + j * w, vals, width=w, label=n)
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_xticks(np.arange(len(traces)) + 0.4 - w / 2)
    ax.set_xticklabels(traces, rotation=20, ha="right")
    ax.set_ylabel("cost / best hindsight cost")
    ax.set_title("evaluation suite: cost relative to the best hindsight reference")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    return fig


def _pct(x: Any) -> str:
    return "n/a" if x is None else f"{x:+.1%}"


def _ci(x: Any) -> str:
    return "n/a" if not x else f"[{x[0]:+.1%}, {x[1]:+.1%}]"


def _pp(x: Any) -> str:
    """A regret difference (a share of the best hindsight cost) in percentage points."""
    return "n/a" if x is None else f"{100 * x:+.2f} pp"


def _pp_ci(x: Any) -> str:
    return "n/a" if not x else f"[{100 * x[0]:+.2f}, {100 * x[1]:+.2f}] pp"


def summary_table(summary: dict[str, Any], title: str) -> Any:
    """The per-controller summary of a suite (or of pooled suites) as a rich table."""
    from rich.table import Table

    table = Table(title=title)
    for col in ("controller", "savings vs default", "95% CI", "regret", "95% CI", "max regret", "costlier than default",
                "hit ratio", "mean maxmemory"):
        # the two long headers may wrap; figures never do (a cut figure reads as another number)
        table.add_column(col, justify="left" if col == "controller" else "right",
                         no_wrap=col not in ("costlier than default", "mean maxmemory"))
    for n, s in summary.items():
        table.add_row(n + (" (hindsight)" if s["hindsight"] else ""), _pct(s["savings_vs_default"]["mean"]),
                      _ci(s["savings_vs_default"]["ci"]), _pct(s["regret"]["mean"]), _ci(s["regret"]["ci"]),
                      _pct(s["regret"]["max"]), f"{s['costlier_than_default']}/{s['cells']}", f"{s['hit_ratio']:.3f}",
                      f"{s['mean_maxmemory_bytes'] / 2**20:.1f} MiB")
    return table


def by_suite_table(by_suite: dict[str, dict[str, Any]]) -> Any:
    """One row per suite, one column per controller that is not a hindsight reference: mean regret / worst cell,
    cells costlier than static-default; the cheapest online mean of each row in bold."""
    from rich.table import Table

    names = list(dict.fromkeys(t for summ in by_suite.values() for t, v in summ.items() if not v["hindsight"]))
    table = Table(title="per suite: mean regret / worst cell, cells costlier than static-default")
    table.add_column("suite (cells)", no_wrap=True)
    for n in names:
        table.add_column(n, justify="right", no_wrap=True)
    for suite, summ in by_suite.items():
        means = {n: summ[n]["regret"]["mean"] for n in names if n in summ and summ[n]["regret"]["mean"] is not None}
        online = {n: m for n, m in means.items() if n != "static-default"}
        best = min(online.values()) if online else None
        row = []
        for n in names:
            v = summ.get(n)
            if v is None or v["regret"]["mean"] is None:
                row.append("–")
                continue
            # two decimals: suite means of online controllers sit within a point or two of each other
            text = f"{100 * v['regret']['mean']:+.2f}% / {_pct(v['regret']['max'])}, {v['costlier_than_default']}"
            row.append(f"[bold]{text}[/bold]" if n in online and online[n] == best else text)
        cells = max((v["cells"] for v in summ.values()), default=0)
        table.add_row(f"{suite} ({cells})", *row)
    return table


def paired_table(paired: dict[str, Any]) -> Any:
    """The paired comparisons (:func:`cachetuner.reports.paired.paired_against`) as a rich table: per pair the cells
    each is the cheaper in, the mean regret difference with its 95 % CI over cells and with whole traces resampled
    (their number in brackets), the sign test and the largest cell."""
    from rich.table import Table

    table = Table(title="paired, cell by cell (regret of the first − regret of the second)")
    for col in ("pair", "cheaper / dearer / same", "mean difference", "95% CI", "95% CI, traces resampled", "sign test p",
                "verdict", "largest"):
        table.add_column(col, justify="left" if col in ("pair", "verdict", "largest") else "right",
                         no_wrap=col not in ("cheaper / dearer / same", "95% CI, traces resampled", "verdict", "largest"),
                         overflow="fold" if col == "largest" else "ellipsis")
    for k, v in paired.items():
        big = v["largest"] or {}
        p = "n/a" if v["sign_test_p"] is None else f"{v['sign_test_p']:.2g}"
        table.add_row(k, f"{v['cheaper']} / {v['dearer']} / {v['same']}", _pp(v["mean_regret_diff"]), _pp_ci(v["ci"]),
                      f"{_pp_ci(v.get('ci_by_trace'))} ({v.get('traces', 0)})", p,
                      v["verdict"], f"{big.get('trace')} / {big.get('prices')} ({_pp(big.get('diff'))})" if big else "")
    return table


def print_suite(res: dict[str, Any], out: Console, *, title: str | None = None, experiment: str = "cachetuner-suite") -> None:
    title = title or f"suite {res['suite']}{' (full)' if res['full'] else ''}"
    out.print(summary_table(res["summary"], f"{title}: {len(res['cells'])} cells"))
    if res.get("paired"):
        out.print(paired_table(res["paired"]))
    out.print(f"MLflow run {res['mlflow_run_id']} (experiment {experiment})")
