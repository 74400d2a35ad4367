"""MLflow helpers shared by training, evaluation, hotness, daemon and A/B runs."""

from cachetuner.tracking.mlflow_utils import (
    default_tracking_uri,
    log_figure_png,
    run_name,
    setup_tracking,
    sqlite_path,
)

__all__ = ["default_tracking_uri", "log_figure_png", "run_name", "setup_tracking", "sqlite_path"]
