"""What a target's config says beyond its fields: a sim target's env, and the pace its decider decides at.

Both the backend (``loop.make_backend``) and the decider (``policy.make_policy``) need them, so they live here
rather than in either."""

from __future__ import annotations

from cachetuner.daemon.config import DaemonConfig, TargetConfig
from cachetuner.env import EnvConfig
from cachetuner.errors import ConfigError


def sim_env_config(target: TargetConfig) -> EnvConfig:
    """A sim target's env config from its ``backend_options`` (``env:`` inline, or ``env_config:`` + ``env_section:``);
    a one-line :class:`ConfigError` for a bad env or an unknown key."""
    opts = dict(target.backend_options)
    if "env_config" in opts:
        env_cfg = EnvConfig.from_yaml(opts.pop("env_config"), key=opts.pop("env_section", "env"))
    else:
        from cachetuner.yamlconfig import validate

        env_cfg = validate(EnvConfig, opts.pop("env", {}), f"targets.{target.name}.backend_options.env")
    if opts:
        raise ConfigError(f"targets.{target.name}.backend_options: unknown keys {sorted(opts)} for a sim target")
    return env_cfg


def decision_interval_s(cfg: DaemonConfig, target: TargetConfig) -> float:
    """The seconds between the decider's decisions on ``target``, in the traffic's time: the daemon's
    ``interval_s`` for a live Redis; for a simulated one its env's ``interval_s`` (each step replays that many
    seconds of the trace, however fast the daemon loops)."""
    return cfg.interval_s if target.backend == "live" else sim_env_config(target).interval_s


__all__ = ["decision_interval_s", "sim_env_config"]
