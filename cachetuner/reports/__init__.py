"""User-facing evaluation reports: ``cachetuner evaluate`` (one workload) and ``evaluate --suite``
(held-out traces x prices x seeds), each resolving the experiment config, running the controllers
through :mod:`cachetuner.evaluation` and logging tables and plots to MLflow.

A layer above :mod:`cachetuner.agent` (they read experiment configs and load trained policies) and
below the CLI, which only parses options and prints.
"""
