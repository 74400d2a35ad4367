"""Promotion: write an A/B treatment into a daemon config, only when its recorded verdict is ``better``.

The decision is read back from MLflow (the parent run's ``ab.verdict`` tag and ``ab_report.json``),
never from a local file, so that what is promoted is exactly what was evaluated. Every decision,
promoted or refused, is recorded twice: as tags on the parent run (``ab.promotion``,
``ab.promotion_time``, ``ab.promoted_to``) and as one line of a promotions JSONL file.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import yaml

from cachetuner.ab.config import ABConfig, ArmConfig
from cachetuner.ab.stats import BETTER
from cachetuner.ab.tracking import read_report, resolve_uri
from cachetuner.errors import CacheTunerError, ConfigError
from cachetuner.outputs import check_output_file


class PromotionRefusedError(CacheTunerError):
    """The run's verdict is not ``better``: nothing is written."""


def daemon_policy_for(arm: ArmConfig) -> dict[str, Any]:
    """The daemon ``policy:`` section that runs ``arm`` (see :class:`cachetuner.daemon.config.PolicyConfig`)."""
    if arm.model is not None:
        from cachetuner.agent.train import CONFIG_SIDECAR

        model = Path(arm.model)
        sidecar = model.parent / CONFIG_SIDECAR
        env_config = str(sidecar.resolve()) if sidecar.is_file() else arm.train_config
        policy: dict[str, Any] = {"name": "ppo", "model": str(model.resolve())}
        if env_config is not None:
            policy["env_config"] = env_config
        return policy
    if arm.tuner is not None:
        return {"name": arm.tuner, "params": dict(arm.params)} if arm.params else {"name": arm.tuner}
    raise ConfigError(
        "treatment is a fixed config: the daemon has no fixed-config policy; set it on the target with "
        "CONFIG SET (inside the target's bounds) or promote a tuner / model instead"
    )


def _record(log_path: Path, entry: dict[str, Any], run_id: str, tracking_uri: str) -> None:
    from mlflow.tracking import MlflowClient

    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("a") as f:
        f.write(json.dumps(entry) + "\n")
    client = MlflowClient(tracking_uri=tracking_uri)
    client.set_tag(run_id, "ab.promotion", entry["decision"])
    client.set_tag(run_id, "ab.promotion_time", entry["time"])
    if entry.get("daemon_config"):
        client.set_tag(run_id, "ab.promoted_to" if entry["decision"] == "promoted" else "ab.promotion_target",
                       entry["daemon_config"])


def _promoted_config(daemon_config: Path, policy: dict[str, Any]) -> dict[str, Any]:
    """The daemon YAML ``daemon_config`` with ``policy`` in place, both validated; nothing is written."""
    from cachetuner.daemon.config import DaemonConfig
    from cachetuner.yamlconfig import load_yaml, validate

    data = load_yaml(daemon_config)
    validate(DaemonConfig, data, str(daemon_config))  # refuse to touch a config that is already broken
    data["policy"] = policy
    validate(DaemonConfig, data, f"{daemon_config} (promoted policy)")
    if not os.access(daemon_config.parent, os.W_OK):
        raise ConfigError(f"{daemon_config}: folder {daemon_config.parent} is not writable (the promoted config and "
                          "its .bak are written there)")
    return data


def _check_log(log: Path, explicit: bool) -> None:
    """The promotions JSONL must be writable before anything is promoted: a ``--log`` naming a folder or a missing
    folder used to fail only after the daemon config was rewritten. The config's default (``promotion.log``) may
    name folders still to be made."""
    if explicit:
        check_output_file(log, "--log")
        return
    if log.is_dir():
        raise ConfigError(f"promotion.log {log}: a directory; give a file name")
    ancestor = next((a for a in log.resolve().parents if a.exists()), None)
    if ancestor is not None and not ancestor.is_dir():
        raise ConfigError(f"promotion.log {log}: {ancestor} is a file, not a folder")


def write_policy(daemon_config: Path, policy: dict[str, Any]) -> None:
    """Replace the ``policy:`` section of a daemon YAML, validating the result before writing it
    atomically (the previous file is kept as ``<name>.bak``)."""
    data = _promoted_config(daemon_config, policy)
    shutil.copyfile(daemon_config, daemon_config.with_name(daemon_config.name + ".bak"))
    tmp = daemon_config.with_name(f".{daemon_config.name}.tmp{os.getpid()}")
    tmp.write_text(yaml.safe_dump(data, sort_keys=False))
    tmp.replace(daemon_config)


def promote(
    run_id: str,
    *,
    daemon_config: str | Path | None = None,
    log_path: str | Path | None = None,
    tracking_uri: str | None = None,
) -> dict[str, Any]:
    """Promote the treatment of A/B run ``run_id`` into ``daemon_config`` if its verdict is ``better``.

    Raises :class:`PromotionRefusedError` (after recording the refusal) for any other verdict.
    Returns the recorded decision.
    """
    uri = resolve_uri(tracking_uri)
    tags, report = read_report(run_id, uri)
    cfg = ABConfig.model_validate(report["config"])
    verdict = tags.get("ab.verdict", report.get("verdict", "?"))
    target = daemon_config if daemon_config is not None else cfg.promotion.daemon_config
    log = Path(log_path if log_path is not None else cfg.promotion.log)
    _check_log(log, explicit=log_path is not None)
    entry: dict[str, Any] = {
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "run_id": run_id,
        "experiment": cfg.name,
        "verdict": verdict,
        "primary_metric": cfg.primary_metric,
        "treatment": cfg.treatment.describe(),
        "daemon_config": str(target) if target is not None else None,
    }
    if verdict != BETTER:
        entry["decision"] = "refused"
        _record(log, entry, run_id, uri)
        raise PromotionRefusedError(
            f"run {run_id}: verdict is '{verdict}' on {cfg.primary_metric}; only 'better' is promoted (nothing written)"
        )
    if target is None:
        raise ConfigError("no daemon config to promote into: pass --daemon-config PATH (or set promotion.daemon_config)")
    path = Path(target)
    if not path.is_file():
        raise ConfigError(f"{path}: daemon config not found (it must exist: promotion only replaces its policy section)")
    policy = daemon_policy_for(cfg.treatment)
    _promoted_config(path, policy)  # every check before the first write: the log was checked above
    write_policy(path, policy)
    entry.update(decision="promoted", policy=policy)
    _record(log, entry, run_id, uri)
    return entry
