"""``cachetuner train``, ``cachetuner evaluate`` and ``cachetuner select``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from cachetuner.cli.app import app, console, emit_json, out, wide_out
from cachetuner.cli.trace_options import (
    FormatOpt,
    LimitOpt,
    ParamsOpt,
    RateOpt,
    RateProfileOpt,
    SeedOpt,
    SizeModelOpt,
    StartOpt,
    load_params_file,
)

_JSON = typer.Option("--json", help="print exactly one JSON object on stdout")
_URI = typer.Option("--tracking-uri", help="MLflow store (default: MLFLOW_TRACKING_URI, else sqlite:///mlflow.db here)")


@app.command("train")
def train_cmd(
    config: Annotated[Path, typer.Argument(help="experiment YAML (see experiments/)")],
    json_out: Annotated[bool, _JSON] = False,
    tracking_uri: Annotated[str | None, _URI] = None,
    timesteps: Annotated[int | None, typer.Option("--timesteps", min=1, help="override total_timesteps")] = None,
    seed: Annotated[int | None, typer.Option("--seed", min=0, help="override seed")] = None,
    output_dir: Annotated[Path | None, typer.Option("--output-dir", help="override output_dir")] = None,
) -> None:
    """Train PPO on the simulated cache; log config, metrics, model and plots to MLflow."""
    from cachetuner.agent.config import TrainConfig
    from cachetuner.agent.train import train

    cfg = TrainConfig.from_yaml(config)
    updates: dict[str, Any] = {}
    if timesteps is not None:
        updates["total_timesteps"] = timesteps
    if seed is not None:
        updates["seed"] = seed
    if output_dir is not None:
        updates["output_dir"] = output_dir
    if updates:
        cfg = cfg.model_copy(update=updates)
    res = train(cfg, tracking_uri=tracking_uri, config_path=config, console=console)
    summary = {
        "mlflow_run_id": res.run_id,
        "model_path": str(res.model_path),
        "run_name": res.run_name,
        "timesteps": res.timesteps,
        "stopped_early": res.stopped_early,
        "final_eval_ppo": res.final_eval,
    }
    if json_out:
        emit_json(summary)
    else:
        out.print(f"run {res.run_name} ({res.run_id}): {res.timesteps} steps, model {res.model_path}")
        fe = res.final_eval
        out.print(
            f"final evaluation episode: cost {fe['cost']:.4f}, hit ratio {fe['hit_ratio']:.3f}, "
            f"mean maxmemory {fe['mean_maxmemory_bytes'] / 2**20:.1f} MiB"
        )


@app.command("evaluate")
def evaluate_cmd(
    model: Annotated[
        str | None, typer.Option("--model", help="model.zip from cachetuner train, runs:/<id>/model, or 'default' (the shipped policy)")
    ] = None,
    trace: Annotated[
        str | None,
        typer.Option("--trace", help="trace file, synthetic:NAME or a workload .yaml; default: the config's evaluation workload"),
    ] = None,
    fmt: FormatOpt = "auto",
    size_model: SizeModelOpt = None,
    rate: RateOpt = None,
    rate_profile: RateProfileOpt = None,
    seed: SeedOpt = 0,
    limit: LimitOpt = None,
    start: StartOpt = 0,
    params: ParamsOpt = None,
    config: Annotated[
        Path | None,
        typer.Option("--config", help="experiment YAML (env + controllers); default: the model's train_config.yaml"),
    ] = None,
    tuners: Annotated[str | None, typer.Option("--tuners", help="comma-separated controller names (default: all)")] = None,
    workload: Annotated[int, typer.Option("--workload", min=0, help="workload index when --trace is not given")] = 0,
    intervals: Annotated[int | None, typer.Option("--intervals", min=1, help="episode length; default: the whole trace")] = None,
    prices: Annotated[
        str | None, typer.Option("--prices", help="price preset: list | scaled | cheap-backend | budget (default: the config's)")
    ] = None,
    budget: Annotated[
        str | None,
        typer.Option("--budget", help="the budget regime's maxmemory cap: bytes (64mb, 1GiB) or a share of the working set (10%)"),
    ] = None,
    history: Annotated[
        float | None, typer.Option("--history", min=0.0, max=1.0, help="replay only the trace after this share (0.5: the "
                                   "second half); `recommended` is sized on it and `mrc-history` watches it (both added "
                                   "to the default controllers)")
    ] = None,
    suite: Annotated[
        Path | None, typer.Option("--suite", help="evaluation suite YAML (experiments/suite.yaml): controllers x traces x prices x seeds")
    ] = None,
    full: Annotated[bool, typer.Option("--full", help="with --suite: the suite's full variant")] = False,
    redraw_keys: Annotated[bool, typer.Option(
        "--redraw-keys", help="with --suite: each seed also redraws the key sample the curves read (the suite's "
        "redraw_keys: true)")] = False,
    ray_address: Annotated[
        str | None, typer.Option("--ray-address", help="with --suite: cells as Ray tasks on local (this machine), auto, HOST:PORT or ray://HOST:PORT")
    ] = None,
    overrides: Annotated[
        list[str] | None, typer.Option("--set", help="PATH=VALUE: one field of the experiment config (the model's "
                                       "train_config.yaml, --config or the suite's config:), e.g. "
                                       "controllers.mrc.confirm=4; repeatable; recorded in the result")
    ] = None,
    json_out: Annotated[bool, _JSON] = False,
    tracking_uri: Annotated[str | None, _URI] = None,
) -> None:
    """Run the trained policy and the other controllers on the same traffic.

    Reports cost, hit ratio, memory, savings vs static-default and regret vs the best hindsight reference. With
    --suite, --tuners runs only those controllers and --set changes settings: a candidate's run that
    `cachetuner compare` pairs with the suite's run as it ships."""
    names = [t.strip() for t in tuners.split(",") if t.strip()] if tuners is not None else None
    if suite is not None:
        from cachetuner.errors import ConfigError
        from cachetuner.reports.suite import print_suite, run_suite

        if prices is not None or budget is not None:
            raise ConfigError("--prices/--budget: with --suite the prices come from the suite's `prices:` list")
        if history is not None:
            raise ConfigError("--history: with --suite the share comes from the suite's `history:`")
        # everything else a single evaluation takes comes from the suite file: given here it would be ignored
        ignored = [name for name, given in (
            ("--trace", trace is not None), ("--format", fmt != "auto"), ("--size-model", size_model is not None),
            ("--rate", rate is not None), ("--rate-profile", rate_profile is not None), ("--seed", seed != 0),
            ("--limit", limit is not None), ("--start", start != 0),
            ("--params", params is not None), ("--config", config is not None),
            ("--workload", workload != 0), ("--intervals", intervals is not None),
        ) if given]  # fmt: skip
        if ignored:
            raise ConfigError(f"{', '.join(ignored)}: with --suite these come from the suite file (its traces, "
                              "seeds, intervals and config:)")

        res = run_suite(suite, model=model, full=full, tracking_uri=tracking_uri, console=console, ray_address=ray_address,
                        redraw_keys=redraw_keys or None, overrides=overrides or None,
                        controllers=names)
        for note in res["notes"]:
            console.print(f"note: {note}", highlight=False)
        if json_out:
            emit_json(res)
        else:
            print_suite(res, wide_out())
        return
    from cachetuner.errors import ConfigError
    from cachetuner.reports.evaluate import price_option, run_evaluation

    if ray_address is not None:
        raise ConfigError("--ray-address: only with --suite (a single evaluation is one process)")
    if full:
        raise ConfigError("--full: only with --suite (the suite's full: variant)")
    if redraw_keys:
        raise ConfigError("--redraw-keys: only with --suite (a suite's seeds redraw the key sample)")

    if names == []:
        raise ConfigError("--tuners: give at least one controller name (omit --tuners for all)")
    result, report = run_evaluation(
        model=model, trace=trace, fmt=fmt, size_model=size_model, rate=rate, rate_profile=rate_profile, seed=seed, limit=limit,
        start=start, params=load_params_file(params) or {}, config=config, controllers=names, workload=workload,
        intervals=intervals, prices=price_option(prices, budget), history=history, tracking_uri=tracking_uri,
        console=console, overrides=overrides or None,
    )
    if json_out:
        emit_json(result)
        return
    print_evaluation(result, report)


@app.command("select")
def select_cmd(
    config: Annotated[Path, typer.Argument(help="the training recipe (experiments/general.yaml): its workloads and prices")],
    model: Annotated[
        list[str], typer.Option("--model", help="LABEL=PATH (model.zip, runs:/<id>/model or default); repeat for each policy")
    ],
    incumbent: Annotated[
        str | None, typer.Option("--incumbent", help="the label of the policy in place (e.g. the shipped default): a candidate "
                                 "replaces it by the rule (docs/agent.md)")
    ] = None,
    rule: Annotated[
        str, typer.Option("--rule", help="v2: eligible if dearer than mrc in no cell and cheaper in some, and costlier than "
                          "static-default in no more cells than mrc; v1: only the last test")
    ] = "v2",
    factors: Annotated[str, typer.Option("--factors", help="memory-price factors, comma-separated ('' for none)")] = "0.2,1,5",
    budgets: Annotated[
        str, typer.Option("--budgets", help="also under memory budgets: shares of the working set, comma-separated (0.05,0.2)")
    ] = "",
    ray_address: Annotated[
        str | None, typer.Option("--ray-address", help="cells as Ray tasks on local (this machine), auto, HOST:PORT or ray://HOST:PORT")
    ] = None,
    json_out: Annotated[bool, _JSON] = False,
    tracking_uri: Annotated[str | None, _URI] = None,
) -> None:
    """Choose between trained policies by the selection rule (docs/agent.md).

    Every policy, mrc, static-default and the
    hindsight references on the recipe's own workloads x memory prices; by rule v2 a policy is eligible if it
    is dearer than mrc in no cell and cheaper in some, and costlier than static-default in no more cells than
    mrc; the eligible one with the lowest mean regret is chosen."""
    from cachetuner.errors import ConfigError
    from cachetuner.reports.selection import print_selection, run_selection

    models: dict[str, str] = {}
    for m in model:
        label, sep, path = m.partition("=")
        if not sep or not label.strip() or not path.strip():
            raise ConfigError(f"--model {m!r}: expected LABEL=PATH")
        if label.strip() in models:
            raise ConfigError(f"--model: label {label.strip()!r} given twice")
        models[label.strip()] = path.strip()
    def numbers(opt: str, text: str) -> tuple[float, ...]:
        try:
            return tuple(float(x) for x in text.split(",") if x.strip())
        except ValueError:
            raise ConfigError(f"{opt} {text!r}: expected numbers, comma-separated") from None

    res = run_selection(config, models, incumbent=incumbent, rule=rule, factors=numbers("--factors", factors),
                        budgets=numbers("--budgets", budgets), tracking_uri=tracking_uri, console=console,
                        ray_address=ray_address)
    if json_out:
        emit_json(res)
    else:
        print_selection(res, wide_out())


@app.command("support")
def support_cmd(
    model: Annotated[str, typer.Option("--model", help="model.zip, runs:/<id>/model or default")] = "default",
    episodes: Annotated[int, typer.Option("--episodes", min=1, help="seeded training episodes to roll out")] = 100,
    seed: Annotated[int, typer.Option("--seed", help="the first episode's seed")] = 1000,
    json_out: Annotated[bool, _JSON] = False,
    tracking_uri: Annotated[str | None, _URI] = None,
) -> None:
    """The range of the price feature a policy saw on its training distribution: controllers.ppo.price_support.

    Rolls the policy out over seeded episodes of its training env (random windows, randomised prices) and prints
    the 0.5 % and 99.5 % quantiles of the feature; put them in the model's train_config.yaml (controllers.ppo) to
    let defer_outside hand decisions outside that range to the anchor rule (docs/agent.md)."""
    from rich.progress import Progress

    from cachetuner.agent.support import price_feature_samples, price_support
    from cachetuner.control.learned import load_policy

    art = load_policy(model, tracking_uri=tracking_uri)
    with Progress(console=console, transient=True) as bar:
        task = bar.add_task("training episodes", total=episodes)
        res = {"model": str(art.model_path), "episodes": episodes, "seed": seed,
               **price_support(price_feature_samples(art, episodes=episodes, seed=seed,
                                                     on_episode=lambda n: bar.update(task, completed=n)))}
    if json_out:
        emit_json(res)
        return
    if res["price_support"] is None:
        out.print(f"{art.model_path}: trained without price features; nothing to bound")
        return
    lo, hi = res["price_support"]
    out.print(f"{art.model_path}: price feature over {res['decisions']:,} decisions of {episodes} training episodes: "
              f"0.5-99.5 % range [{lo}, {hi}] (min {res['min']:.4f}, max {res['max']:.4f})\n"
              f"train_config.yaml: controllers: {{ppo: {{price_support: [{lo}, {hi}], defer_outside: true}}}}")


def _pct(x: Any) -> str:
    if x is None:
        return "n/a"
    return "0.0%" if abs(x) < 5e-4 else f"{x:+.1%}"


#: Episodes shorter than this many intervals get a note under the table: the audits' worst cells are all this short.
SHORT_EPISODE = 100


def print_evaluation(result: dict[str, Any], report: Any) -> None:
    """The evaluation table on stdout (rich)."""
    from rich.table import Table

    n = len(next(iter(report.results.values())).records)
    table = Table(title=f"evaluation on {report.workload} ({n} intervals; cost in {result['currency']})")
    for col in ("tuner", "cost", "vs default", "regret", "hit ratio", "byte hit", "p95 ms", "mean maxmemory",
                "SLO viol.", "changes"):
        table.add_column(col, justify="left" if col == "tuner" else "right", no_wrap=True)
    for t, s in result["tuners"].items():
        table.add_row(
            t + (" (hindsight)" if s.get("hindsight") else ""),
            f"{s['cost']:.4f}",
            _pct(-s["savings_vs_default"] if s.get("savings_vs_default") is not None else None),
            _pct(s.get("regret")),
            f"{s['hit_ratio']:.4f}",
            f"{s['byte_hit_ratio']:.4f}",
            f"{s['p95_latency_ms']:.2f}",
            f"{s['mean_maxmemory_bytes'] / 2**20:.2f} MiB",
            str(s["slo_violations"]),
            str(s["config_changes"]),
        )
    wide_out().print(table)
    bh = result.get("best_hindsight")
    ref = f"{bh['tuner']} ({bh['cost']:.4f})" if bh else "none run"
    out.print(
        f"vs default = cost relative to static-default; regret = cost / best hindsight reference - 1, "
        f"reference: {ref}. A negative regret means a controller beat every hindsight reference that was run "
        f"(they only search their own grid). MLflow run {result['mlflow_run_id']}"
    )
    over = [(t, s["regret"]) for t, s in result["tuners"].items() if s.get("regret") is not None and s["regret"] > 1.0]
    if over:  # a percentage above 100 % is read as "more than all of it": say what it is
        out.print("regret above 100 %: " + "; ".join(f"{t} costs {1 + r:.1f}x the reference" for t, r in over) + ".")
    if n < SHORT_EPISODE and any(not s.get("hindsight") and t != "static-default" for t, s in result["tuners"].items()):
        out.print(
            f"note: only {n} intervals. Online controllers learn the traffic during the episode, and on an episode "
            "this short that learning is most of their regret (README, 'Audit on drawn cells'); judge them on longer "
            "traffic where you can. A trace without timestamps runs at --rate (1000 req/s unless given): --rate 100 "
            "spreads it over ten times as many intervals."
        )
