"""MLflow layout of an A/B experiment: one parent run, one nested child run per arm.

Parent (``tags.ab.kind = 'ab'``): the resolved A/B config and env (params + YAML artifacts), the
verdict and every delta's mean and CI (metrics + tags), the paired per-interval differences as
steps, the plots and ``ab_report.json`` (what ``cachetuner ab promote`` reads back).
Children (``tags.ab.kind = 'arm'``, ``tags.ab.arm = control|treatment``): the arm's spec and
initial config (params + ``arm.yaml``), every per-interval metric as steps, the config it ran in
each interval (``configs.json``), episode totals.

Filter all A/B experiments of one model in the MLflow UI with
``tags.ab.kind = 'ab' and tags.ab.treatment_model = 'runs/quickstart/model.zip'``.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from cachetuner.ab.config import ABConfig, ArmConfig
from cachetuner.ab.result import ABResult, ArmSeries
from cachetuner.ab.stats import METRICS
from cachetuner.tracking import sqlite_path

REPORT_ARTIFACT = "ab_report.json"
KIND_TAG = "ab.kind"


def _flat(obj: Any, prefix: str = "") -> dict[str, str]:
    from cachetuner.agent.train import flat_params

    return flat_params(obj, prefix)


def _log_batch(run_id: str, series: dict[str, list[float]]) -> None:
    """Per-interval metrics as steps 1..n in a few batched calls (one call per value is slow on sqlite)."""
    import math

    from mlflow.entities import Metric
    from mlflow.tracking import MlflowClient

    client = MlflowClient()
    now = int(time.time() * 1000)
    batch: list[Metric] = []
    for name, values in series.items():
        for step, v in enumerate(values, start=1):
            if v is None or not math.isfinite(float(v)):
                continue
            batch.append(Metric(name, float(v), now, step))
    for i in range(0, len(batch), 900):  # MLflow's log_batch limit is 1000 metrics per call
        client.log_batch(run_id, metrics=batch[i : i + 900])


def _write(d: Path, name: str, text: str) -> str:
    p = d / name
    p.write_text(text)
    return str(p)


def arm_tags(cfg: ABConfig) -> dict[str, str]:
    """Tags that make a run findable by model, control and verdict in the MLflow UI."""
    tags = {
        KIND_TAG: "ab",
        "ab.name": cfg.name,
        "ab.mode": cfg.mode,
        "ab.control": cfg.control.identity(),
        "ab.treatment": cfg.treatment.describe(),
        "ab.treatment_model": cfg.treatment.identity(),
        "ab.primary_metric": cfg.primary_metric,
        "ab.method": cfg.stats.method,
    }
    sha = cfg.treatment.model_sha256()
    if sha:
        tags["ab.treatment_model_sha256"] = sha
    return tags


def _log_arm(cfg: ABConfig, arm_cfg: ArmConfig, series: ArmSeries, parent_tags: dict[str, str], d: Path) -> str:
    import mlflow

    with mlflow.start_run(run_name=f"{cfg.name}:{series.role}", nested=True) as run:
        mlflow.set_tags(
            {
                KIND_TAG: "arm",
                "ab.arm": series.role,
                "ab.arm_spec": series.description,
                "ab.estimated": str(series.estimated).lower(),
                "ab.name": cfg.name,
                "ab.treatment_model": parent_tags["ab.treatment_model"],
            }
        )
        spec = arm_cfg.model_dump(mode="json", exclude_none=True)
        initial = series.configs[0] if series.configs else {}
        mlflow.log_params({**_flat(spec, "arm."), **_flat(initial, "initial_config.")})
        arm_doc = {"role": series.role, "arm": spec, "initial_config": initial, "estimated": series.estimated}
        mlflow.log_artifact(_write(d, f"{series.role}_arm.yaml", yaml.safe_dump(arm_doc, sort_keys=False)), "config")
        mlflow.log_artifact(_write(d, f"{series.role}_configs.json", json.dumps(series.configs)), "config")
        _log_batch(run.info.run_id, {name: list(v) for name, v in series.arrays().items()})
        mlflow.log_metrics(series.totals())
        return run.info.run_id


def log_ab(result: ABResult, cfg: ABConfig, env_cfg: Any, *, config_path: str | Path | None = None,
           tracking_uri: str | None = None) -> str:
    """Record ``result`` as a parent run with nested arm runs; returns the parent run id."""
    import mlflow

    from cachetuner.ab.plots import ab_figures
    from cachetuner.tracking import log_figure_png, run_name, setup_tracking

    uri = tracking_uri or cfg.tracking.tracking_uri
    setup_tracking(uri, experiment=cfg.tracking.experiment, root=store_root(uri))
    tags = arm_tags(cfg)
    v = result.verdict
    with tempfile.TemporaryDirectory() as tmp, mlflow.start_run(run_name=run_name("ab", cfg.name, cfg.seed)) as parent:
        d = Path(tmp)
        mlflow.set_tags({**tags, "ab.verdict": v.verdict, "ab.intervals": str(result.intervals),
                         "ab.horizon": str(cfg.horizon_intervals)})
        mlflow.log_params(_flat(cfg.model_dump(mode="json", exclude={"env"}), "ab."))
        mlflow.log_artifact(_write(d, "ab_config.yaml", yaml.safe_dump(cfg.model_dump(mode="json"), sort_keys=False)),
                            "config")
        mlflow.log_artifact(
            _write(d, "env_config.yaml", yaml.safe_dump(env_cfg.model_dump(mode="json"), sort_keys=False)), "config"
        )
        if config_path is not None and Path(config_path).is_file():
            mlflow.log_artifact(str(config_path), "config")
        summary: dict[str, float] = {}
        for name, ci in v.deltas.items():
            key = METRICS[name]["key"]
            summary.update({f"{key}.mean": ci.mean, f"{key}.ci_low": ci.ci[0], f"{key}.ci_high": ci.ci[1]})
        summary.update(_extras_metrics(result.extras))
        summary = {k: float(x) for k, x in summary.items() if x == x and abs(x) != float("inf")}
        mlflow.log_metrics(summary)
        deltas = {
            f"delta.{name}": list(result.treatment.series(name) - result.control.series(name))
            for name in ("hit_ratio", "byte_hit_ratio", "p95_ms", "cost")
        }
        _log_batch(parent.info.run_id, deltas)
        child_ids = {
            "control": _log_arm(cfg, cfg.control, result.control, tags, d),
            "treatment": _log_arm(cfg, cfg.treatment, result.treatment, tags, d),
        }
        result.mlflow_run_id = parent.info.run_id
        report = {**result.to_json(), "arm_runs": child_ids, "config": cfg.model_dump(mode="json"),
                  "records": {"control": result.control.records, "treatment": result.treatment.records}}
        mlflow.log_artifact(_write(d, REPORT_ARTIFACT, json.dumps(report, default=str)))
        for key, fig in ab_figures(result).items():
            log_figure_png(fig, key)
        return parent.info.run_id


def _extras_metrics(extras: dict, prefix: str = "") -> dict[str, float]:
    """TTL A/B figures (mean TTL, stale share, per-tenant deltas) as flat MLflow metric names."""
    out: dict[str, float] = {}
    for k, v in extras.items():
        name = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_extras_metrics(v, f"{name}."))
        elif isinstance(v, list) and len(v) == 2 and name.endswith(".ci"):
            out.update({f"{name[:-3]}.ci_low": float(v[0]), f"{name[:-3]}.ci_high": float(v[1])})
        elif isinstance(v, int | float):
            out[name] = float(v)
    return out


def store_root(uri: str | None) -> Path | None:
    """For a local ``sqlite:///PATH`` store: PATH's folder, so artifacts land next to the database
    (``<folder>/mlruns``) rather than in the current directory."""
    db = sqlite_path(uri)
    return db.parent if db is not None else None


def resolve_uri(tracking_uri: str | None = None) -> str:
    """``tracking_uri``, else ``MLFLOW_TRACKING_URI``, else the local sqlite default (as setup_tracking)."""
    from cachetuner.tracking import default_tracking_uri

    return tracking_uri or os.environ.get("MLFLOW_TRACKING_URI") or default_tracking_uri()


def check_store_answers(uri: str, timeout_s: float = 5.0) -> None:
    """For an ``http(s)://`` store: :class:`ServiceError` in ``timeout_s`` when nothing answers there (MLflow's own
    client retries for minutes); a local path that is a file is a :class:`ConfigError`."""
    import urllib.error
    import urllib.request

    from cachetuner.errors import ConfigError, ServiceError

    if "://" not in uri or uri.startswith("file:"):
        local = Path(uri.removeprefix("file://").removeprefix("file:"))
        if local.exists() and not local.is_dir():
            raise ConfigError(f"tracking store {uri}: a file, not an MLflow store; pass --tracking-uri sqlite:///PATH.db "
                              "or http://HOST:PORT")
        return
    if not uri.startswith(("http://", "https://")):
        return
    try:
        with urllib.request.urlopen(uri.rstrip("/") + "/health", timeout=timeout_s):  # noqa: S310 (http(s) only)
            pass
    except urllib.error.HTTPError:
        return  # something answers: MLflow's own errors say the rest
    except (urllib.error.URLError, OSError, ValueError) as e:
        why = getattr(e, "reason", e)
        raise ServiceError(f"tracking store {uri}: nothing answers there ({why}); start the MLflow server or pass "
                           "another --tracking-uri") from None


def read_report(run_id: str, tracking_uri: str | None = None) -> tuple[dict[str, str], dict]:
    """Tags and ``ab_report.json`` of a parent A/B run (ConfigError when the id is no A/B run)."""
    import logging

    from mlflow.exceptions import MlflowException
    from mlflow.tracking import MlflowClient

    from cachetuner.errors import ConfigError

    logging.getLogger("mlflow").setLevel(logging.WARNING)
    logging.getLogger("alembic").setLevel(logging.WARNING)
    uri = resolve_uri(tracking_uri)
    db = sqlite_path(uri)
    if db is not None and not db.is_file():
        raise ConfigError(f"no MLflow store at {uri}; pass --tracking-uri (or set MLFLOW_TRACKING_URI)")
    check_store_answers(uri)
    try:
        client = MlflowClient(tracking_uri=uri)
        run = client.get_run(run_id)
    except MlflowException as e:
        if (db is None and "://" not in uri) or uri.startswith("file:"):
            raise ConfigError(f"tracking store {uri}: cannot be read ({str(e).split('. ')[0]}); "
                              "pass --tracking-uri sqlite:///PATH.db or http://HOST:PORT") from None
        raise ConfigError(f"run {run_id}: not found in the tracking store ({uri})") from None
    tags = dict(run.data.tags)
    if tags.get(KIND_TAG) != "ab":
        raise ConfigError(f"run {run_id}: not an A/B parent run (tag {KIND_TAG}={tags.get(KIND_TAG)!r})")
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")  # stderr stays one line on errors
    with tempfile.TemporaryDirectory() as d:
        path = client.download_artifacts(run_id, REPORT_ARTIFACT, d)
        report = json.loads(Path(path).read_text())
    return tags, report
