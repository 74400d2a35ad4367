"""Hotness ablation: the shipped PPO recipe with vs without hotness features, several seeds, held-out traces.

Both arms train the recipe the shipped general policy was trained with (``experiments/general.yaml``:
mrc-offset actions, mrc cost-curve and price features, randomised memory prices, its 11 training
workloads, its timesteps, its periodic evaluation with early stopping and best-model selection);
the ``with_hotness`` arm adds :class:`~cachetuner.hotness_model.features.HotnessFeatures` through the
agent config's ``hotness:`` section, fed by one LSTM trained first on the recipe's *training*
workloads (never on the evaluation traces) and shared by every seed. Each trained policy is then
scored by the ``ppo`` controller on the held-out traces of an evaluation suite
(``experiments/suite.yaml``) against ``static-default`` and ``best-static`` (hindsight) on identical
traffic; per arm, savings vs static-default and regret vs best-static are averaged over traces and
evaluation seeds for each training seed, and the 95 % t-interval is taken across training seeds.

Training (:func:`train_arm`) imports neither MLflow nor anything that needs it, saves ``last.zip``
and ``state.json`` every ``checkpoint_s`` seconds, stops by itself at a wall-clock ``deadline`` and
resumes from its own checkpoint, so it can run on a borrowed machine in pieces
(``scripts/hotness_ablation_device.py`` runs every arm x seed in parallel there). MLflow logging
(:func:`log_mlflow`, experiment ``hotness-ablation``) happens where the evaluation runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cachetuner.reports.hotness_ablation.arms import (
    ARMS,
    DEFAULT_RECIPE,
    DEFAULT_SUITE,
    EXPERIMENT,
    Log,
    arm_config,
    quiet,
    read_state,
    resave_numpy2_models,
    run_dir,
    train_arm,
    train_hotness_lstm,
)
from cachetuner.reports.hotness_ablation.report import (
    evaluate_runs,
    format_table,
    log_mlflow,
    mean_ci,
    summarise,
    summary_figure,
)


# -- the whole ablation, locally -----------------------------------------------------------------------------
def check_ablation_options(
    seeds: Sequence[int], eval_seeds: Sequence[int] | None, out_dir: str | Path, *, train: bool = True
) -> None:
    """One-line :class:`~cachetuner.errors.ConfigError` (naming the CLI option) before any work: no seed, a negative
    seed, an ``--out`` that is a file, and (``train=False``, ``--from-runs``) a run that is not under ``--out``."""
    from cachetuner.errors import ConfigError

    for option, values in (("--seeds", seeds), ("--eval-seeds", eval_seeds)):
        if values is None:
            continue
        if not list(values):
            raise ConfigError(f"{option}: give at least one seed, e.g. 0,1")
        bad = [v for v in values if v < 0]
        if bad:
            raise ConfigError(f"{option}: seeds must be >= 0, got {bad[0]}")
    from cachetuner.outputs import check_output_dir

    root = check_output_dir(out_dir, "--out")
    if not train:
        missing = [run_dir(root, arm, s).name for s in seeds for arm in ARMS if not (run_dir(root, arm, s) / "model.zip").is_file()]
        if missing:
            raise ConfigError(f"--from-runs: no trained run {missing[0]} (model.zip) under --out {root}"
                              f"{f' (and {len(missing) - 1} more)' if len(missing) > 1 else ''}; train it or pass "
                              "the --seeds that were trained")


def run_ablation(
    *,
    recipe: str | Path = DEFAULT_RECIPE,
    seeds: Sequence[int] = (0, 1, 2, 3),
    timesteps: int | None = None,
    out_dir: str | Path = "runs/hotness-ablation",
    suite: str | Path = DEFAULT_SUITE,
    eval_seeds: Sequence[int] | None = (0,),
    traces: Sequence[str] | None = None,
    intervals: int | None = None,
    lstm_path: str | Path | None = None,
    train: bool = True,
    n_envs: int | None = None,
    vec_env: str | None = None,
    tracking_uri: str | None = None,
    shipped: bool = True,
    log: Log = quiet,
) -> dict[str, Any]:
    """Train (or, with ``train=False``, reuse) both arms x ``seeds`` under ``out_dir``, evaluate them on
    the suite's held-out traces (with the mrc controller and, ``shipped``, the shipped general policy as
    references), log to MLflow; ``{"summary", "rows", "table", ...}``.

    Arms are trained in turn here (slow: the recipe is ~14 core-minutes per arm and seed on this kind
    of machine); a run already finished under ``out_dir`` is reused, an unfinished one resumed."""
    check_ablation_options(seeds, eval_seeds, out_dir, train=train)
    root = Path(out_dir)
    root.mkdir(parents=True, exist_ok=True)
    if lstm_path is None and train:
        lstm_path = root / "lstm" / "model.pt"
        if not Path(lstm_path).is_file():
            train_hotness_lstm(arm_config(recipe, "without_hotness", 0), root / "lstm", log=log)
    runs: dict[tuple[str, int], Path] = {}
    for seed in seeds:
        for arm in ARMS:
            d = run_dir(root, arm, seed)
            runs[(arm, seed)] = d
            if train:
                cfg = arm_config(recipe, arm, seed, lstm_path=lstm_path, timesteps=timesteps, n_envs=n_envs, vec_env=vec_env)
                train_arm(cfg, d, log=log)
    states = {k: read_state(d) for k, d in runs.items()}
    rows = evaluate_runs(runs, suite, eval_seeds=eval_seeds, traces=traces, intervals=intervals, references=("mrc",),
                         extra_models={"shipped-general": "default"} if shipped else None, log=log)
    summary = summarise(rows, states)
    extra = {"recipe": str(recipe), "suite": str(suite), "eval_seeds": list(eval_seeds or []),
             "regret_reference": "best-static"}
    run_id = log_mlflow(runs, rows, summary, tracking_uri=tracking_uri, extra=extra)
    return {"summary": summary, "rows": rows, "table": format_table(summary), "states": {f"{a}_s{s}": v for (a, s), v in states.items()},
            "mlflow_run_id": run_id, **extra}




__all__ = [
    "ARMS",
    "DEFAULT_RECIPE",
    "DEFAULT_SUITE",
    "EXPERIMENT",
    "arm_config",
    "check_ablation_options",
    "evaluate_runs",
    "format_table",
    "log_mlflow",
    "mean_ci",
    "resave_numpy2_models",
    "run_ablation",
    "run_dir",
    "summarise",
    "summary_figure",
    "train_arm",
    "train_hotness_lstm",
]
