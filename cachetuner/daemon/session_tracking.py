"""One MLflow run per daemon session: the resolved config as params, figures per interval as metrics.

Tracking must never take the daemon down: any MLflow failure is logged once and tracking is
switched off for the rest of the session (the audit log remains the record of truth).
"""

from __future__ import annotations

import logging
from typing import Any

from cachetuner.tracking import run_name, setup_tracking

log = logging.getLogger("cachetuner.daemon")


def _flatten(d: dict[str, Any], prefix: str = "") -> dict[str, str]:
    out: dict[str, str] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flatten(v, f"{key}."))
        else:
            out[key] = str(v)[:500]
    return out


class SessionTracker:
    def __init__(self, enabled: bool, tracking_uri: str | None, experiment: str, policy: str, session: str) -> None:
        self.enabled = enabled
        self.run_id: str | None = None
        if not enabled:
            return
        try:
            import mlflow

            setup_tracking(tracking_uri, experiment)
            run = mlflow.start_run(run_name=run_name("daemon", policy, session))
            self.run_id = run.info.run_id
        except Exception as e:  # noqa: BLE001 (tracking is best-effort)
            self._disable(e)

    def _disable(self, e: Exception) -> None:
        log.warning("MLflow tracking disabled for this session: %s", e)
        self.enabled = False

    def log_params(self, params: dict[str, Any]) -> None:
        if not self.enabled:
            return
        try:
            import mlflow

            flat = _flatten(params)
            items = list(flat.items())
            for i in range(0, len(items), 90):
                mlflow.log_params(dict(items[i : i + 90]))
        except Exception as e:  # noqa: BLE001
            self._disable(e)

    def log_metrics(self, metrics: dict[str, float], step: int) -> None:
        if not self.enabled or not metrics:
            return
        try:
            import mlflow

            mlflow.log_metrics(metrics, step=step)
        except Exception as e:  # noqa: BLE001
            self._disable(e)

    def log_artifact(self, path: Any, artifact_path: str | None = None) -> None:
        if not self.enabled:
            return
        try:
            import mlflow

            mlflow.log_artifact(str(path), artifact_path=artifact_path)
        except Exception as e:  # noqa: BLE001
            self._disable(e)

    def close(self, status: str = "FINISHED") -> None:
        if not self.enabled:
            return
        try:
            import mlflow

            mlflow.end_run(status=status)
        except Exception as e:  # noqa: BLE001
            self._disable(e)
