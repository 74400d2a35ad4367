"""``cachetuner demo``: the main job on the embedded default (what ``make demo`` runs).

Trains the quickstart PPO policy on the simulator (synthetic workloads plus the bundled cache2k web07
excerpt; no server needed, MLflow in ``./mlflow.db``), then evaluates it against every baseline on
held-out traffic it never trained on: the bundled cache2k web12 excerpt and a held-out synthetic
"shifting" workload. Prints the comparison tables and where to look in MLflow.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Annotated, Any

import typer

from cachetuner.cli.app import app, console, emit_json, out

#: Held-out evaluation workloads: (label, trace spec, run_evaluation keyword arguments).
HELD_OUT: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("web12", "bundled:web12", {"size_model": "llm", "rate": 100.0}),
    ("shifting-heldout", "experiments/workloads/shifting-heldout.yaml", {"rate": 100.0, "seed": 7}),
)


@app.command("demo")
def demo_cmd(
    config: Annotated[Path, typer.Option("--config", help="experiment YAML to train")] = Path("experiments/quickstart.yaml"),
    model: Annotated[
        Path | None, typer.Option("--model", help="evaluate this model.zip instead of training a new one")
    ] = None,
    timesteps: Annotated[int | None, typer.Option("--timesteps", min=1, help="override total_timesteps")] = None,
    intervals: Annotated[
        int | None, typer.Option("--intervals", min=1, help="evaluate only the first N intervals (default: whole traces)")
    ] = None,
    output_dir: Annotated[Path | None, typer.Option("--output-dir", help="override the config's output_dir")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="print exactly one JSON object on stdout")] = False,
    tracking_uri: Annotated[
        str | None, typer.Option("--tracking-uri", help="MLflow store (default: sqlite:///mlflow.db here)")
    ] = None,
) -> None:
    """Train the quickstart policy, evaluate it against every baseline on held-out traffic, print the tables."""
    from cachetuner.agent.config import TrainConfig
    from cachetuner.agent.train import CONFIG_SIDECAR, train
    from cachetuner.cli.train_cmds import print_evaluation
    from cachetuner.reports.evaluate import run_evaluation
    from cachetuner.tracking import default_tracking_uri

    summary: dict[str, Any] = {"config": str(config)}
    if model is None:
        cfg = TrainConfig.from_yaml(config)
        if timesteps is not None:
            cfg = cfg.model_copy(update={"total_timesteps": timesteps})
        if output_dir is not None:
            cfg = cfg.model_copy(update={"output_dir": output_dir})
        console.rule(f"[bold]1/2 training PPO ({config}, {cfg.total_timesteps} steps at most)")
        res = train(cfg, tracking_uri=tracking_uri, config_path=config, console=console)
        model = res.model_path
        # A stable path for the A/B quickstart (experiments/ab_quickstart.yaml) and the README examples.
        stable = Path(cfg.output_dir) / "quickstart"
        if cfg.experiment == "quickstart":
            stable.mkdir(parents=True, exist_ok=True)
            shutil.copy2(model, stable / "model.zip")
            shutil.copy2(model.parent / CONFIG_SIDECAR, stable / CONFIG_SIDECAR)
        summary["train"] = {"mlflow_run_id": res.run_id, "run_name": res.run_name, "model_path": str(model),
                            "timesteps": res.timesteps, "stopped_early": res.stopped_early}
        if not json_out:
            out.print(f"trained {res.run_name}: {res.timesteps} steps, model {model} (MLflow run {res.run_id})")
    elif not model.is_file():
        from cachetuner.errors import ConfigError

        raise ConfigError(f"--model {model}: file not found")
    summary["model_path"] = str(model)

    evaluations: dict[str, Any] = {}
    for i, (label, trace, kwargs) in enumerate(HELD_OUT, start=1):
        console.rule(f"[bold]2/2 evaluation {i}/{len(HELD_OUT)}: {label} (held out)")
        result, report = run_evaluation(
            model=model, trace=trace, config=config, tracking_uri=tracking_uri, intervals=intervals,
            console=console, **kwargs
        )
        evaluations[label] = result
        if not json_out:
            print_evaluation(result, report)
    summary["evaluations"] = evaluations
    uri = tracking_uri or default_tracking_uri()
    summary["mlflow_ui"] = f"mlflow ui --backend-store-uri {uri}"
    if json_out:
        emit_json(summary)
        return
    out.print(
        "\nWhere to look: run [bold]" + summary["mlflow_ui"] + "[/bold] and open http://127.0.0.1:5000 - "
        "experiment 'quickstart' holds the training run (params, rollout curves, model, plots/) and one "
        "evaluation run per held-out workload (metrics per tuner, eval/table.json, plots/eval_*.png)."
    )
