"""Run env-based tuners (``ppo`` and the baselines) inside the daemon, with training-identical observations.

The daemon must stay the only thing that touches Redis, yet a trained policy must see observations
built exactly as in training (same features, same scaling, same what-if estimates, same action
decoder). So each target gets its own :class:`~cachetuner.env.CacheTuningEnv` over a
:class:`MirrorBackend`: a backend that *replays* what the daemon observed (the real snapshot, the
real config, the real request sample) and whose ``apply`` changes nothing. Every interval the
daemon pushes the fresh snapshot and calls ``env.step_config(current)``: the env builds the
observation and ``info`` from real data, and the tuner answers with a proposal that then goes
through the guardrails.

Approximation: the env's maxmemory bounds (the observation's ``maxmemory_position`` and the action
decoder's clipping) are the target's daemon bounds, not the training workload's working-set
fractions; train with absolute ``env.bounds`` equal to the deployment bounds for an exact match.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cachetuner.backend import ApplyResult, CacheBackend, RequestSample
from cachetuner.config import RedisConfig
from cachetuner.daemon.config import DaemonConfig, HotnessConfig, TargetConfig
from cachetuner.errors import ConfigError
from cachetuner.metrics import MetricsSnapshot

log = logging.getLogger("cachetuner.daemon")

#: Tuners that look into the future by forking a simulated env: bounds for evaluation, not deployable.
HINDSIGHT_TUNERS = ("best-static", "oracle")


class MirrorBackend:
    """A read-only CacheBackend view of what the daemon observed on the real target."""

    def __init__(self, real: Callable[[], CacheBackend | None], bounds: tuple[int, int], interval_s: float) -> None:
        self.real = real
        self.bounds = bounds
        self.interval_s = interval_s
        self._config = RedisConfig()
        self._snap = MetricsSnapshot(interval_s=interval_s)

    def push(self, snap: MetricsSnapshot, current: RedisConfig) -> None:
        self._snap, self._config = snap, current

    @property
    def config(self) -> RedisConfig:
        return self._config

    def reset(self, *, seed: int | None = None) -> MetricsSnapshot:
        return self._snap

    def apply(self, config: RedisConfig) -> ApplyResult:
        """Never touches the target: the config in force stays what the daemon observed."""
        return ApplyResult(ok=True, requested=config, applied=self._config)

    def step(self) -> MetricsSnapshot:
        return self._snap

    def recent_requests(self) -> RequestSample:
        real = self.real()
        if real is None:
            return RequestSample()
        try:
            return real.recent_requests()
        except Exception:  # noqa: BLE001 (no sample: what-if estimates simply do not move)
            return RequestSample()

    @property
    def exhausted(self) -> bool:
        return False

    def close(self) -> None:
        pass


def _use_tracking(tracking_uri: str | None) -> None:
    """Point MLflow where ``setup_tracking`` would (config, then MLFLOW_TRACKING_URI, then ./mlflow.db)."""
    import os

    import mlflow

    from cachetuner.tracking import default_tracking_uri

    mlflow.set_tracking_uri(tracking_uri or os.environ.get("MLFLOW_TRACKING_URI") or default_tracking_uri())


def resolve_model(uri: str, cache_dir: Path, tracking_uri: str | None = None) -> Path:
    """A local ``.zip`` for a path or an MLflow URI (``runs:/<id>/model``, ``models:/<name>/<version>``)."""
    if not uri.startswith(("runs:/", "models:/")) and "://" not in uri:
        p = Path(uri)
        if not p.is_file():
            raise ConfigError(f"policy.model: {p} not found (a model.zip written by cachetuner train, or runs:/<id>/model)")
        return p
    import mlflow

    _use_tracking(tracking_uri)

    dst = cache_dir / "models" / uri.replace(":/", "_").replace("/", "_")
    dst.mkdir(parents=True, exist_ok=True)
    try:
        local = Path(mlflow.artifacts.download_artifacts(artifact_uri=uri, dst_path=str(dst)))
    except Exception as e:  # noqa: BLE001
        raise ConfigError(f"policy.model: cannot download {uri} from MLflow ({type(e).__name__}: {e})") from None
    if local.is_file():
        return local
    zips = sorted(local.rglob("*.zip"))
    if not zips:
        raise ConfigError(f"policy.model: {uri} has no .zip artifact")
    return zips[0]


def _find_train_config(cfg: DaemonConfig, model_uri: str | None, model_path: Path | None, cache_dir: Path) -> Path | None:
    if cfg.policy.env_config:
        return Path(cfg.policy.env_config)
    if model_path is not None and (model_path.parent / "train_config.yaml").is_file():
        return model_path.parent / "train_config.yaml"
    if model_uri and model_uri.startswith("runs:/"):
        run_id = model_uri.split("/")[1]
        import mlflow

        _use_tracking(cfg.tracking.tracking_uri)

        try:
            return Path(
                mlflow.artifacts.download_artifacts(
                    artifact_uri=f"runs:/{run_id}/config/train_config.yaml", dst_path=str(cache_dir / "models" / run_id)
                )
            )
        except Exception:  # noqa: BLE001
            return None
    return None


def load_env_config(cfg: DaemonConfig, model_path: Path | None = None) -> Any:
    from cachetuner.env import EnvConfig

    cache_dir = Path(cfg.state_dir)
    path = _find_train_config(cfg, cfg.policy.model, model_path, cache_dir)
    if path is None:
        return EnvConfig()
    return EnvConfig.from_yaml(path, key=cfg.policy.env_section)


class EnvPolicy:
    """A :class:`~cachetuner.baselines.Tuner` (PPO or a baseline) over a mirror env for one target."""

    def __init__(
        self,
        name: str,
        tuner: Any,
        env_cfg: Any,
        target: TargetConfig,
        backend: Callable[[], CacheBackend | None],
        seed: int,
        interval_s: float,
        hotness: HotnessConfig | None = None,
    ) -> None:
        from cachetuner.env import CacheTuningEnv

        self.name = name
        self.tuner = tuner
        env_cfg = env_cfg.model_copy(update={"warmup_intervals": 0, "episode_intervals": None})
        self.mirror = MirrorBackend(backend, (target.bounds.maxmemory_min, target.bounds.maxmemory_max), interval_s)
        self.env = CacheTuningEnv(env_cfg, backend=self.mirror)  # type: ignore[arg-type]
        self.hot: Any = None
        if hotness is not None and hotness.enabled:
            from cachetuner.hotness_model.features import HotnessFeatures

            self.hot = HotnessFeatures(self.env, make_hotness_predictor(hotness), **hotness.options)
        self.seed = seed
        self._started = False
        #: extra figures of the last decision for the audit log (hotness features and which backend served them)
        self.last_info: dict[str, Any] = {}

    @classmethod
    def for_tuner(cls, cfg: DaemonConfig, target: TargetConfig, backend: Callable[[], CacheBackend | None]) -> EnvPolicy:
        from cachetuner.baselines import BaselinesConfig, make_tuner

        name = cfg.policy.name
        if name in HINDSIGHT_TUNERS:
            raise ConfigError(f"policy.name: {name!r} needs the future (hindsight bound); it cannot run on a live target")
        params = dict(cfg.policy.params)
        settings = BaselinesConfig.model_validate(params.pop("settings", {}))
        tuner = make_tuner(name, settings=settings, seed=cfg.policy.seed, **params)
        return cls(name, tuner, load_env_config(cfg), target, backend, cfg.policy.seed, cfg.interval_s, cfg.hotness)

    @classmethod
    def for_ppo(cls, cfg: DaemonConfig, target: TargetConfig, backend: Callable[[], CacheBackend | None]) -> EnvPolicy:
        from cachetuner.baselines import make_tuner

        if not cfg.policy.model:
            raise ConfigError("policy.model: ppo needs a model (a model.zip path or runs:/<id>/model)")
        path = resolve_model(cfg.policy.model, Path(cfg.state_dir), cfg.tracking.tracking_uri)
        tuner = make_tuner("ppo", model_path=path, seed=cfg.policy.seed)
        return cls("ppo", tuner, load_env_config(cfg, path), target, backend, cfg.policy.seed, cfg.interval_s, cfg.hotness)

    def decide(self, obs: Any) -> RedisConfig:
        self.mirror.push(obs.snapshot, obs.current)
        outer = self.hot if self.hot is not None else self.env
        if not self._started:
            outer.reset(seed=self.seed)
            self.tuner.reset(outer)
            self._started = True
        o, _r, _term, _trunc, info = self.env.step_config(obs.current)
        if self.hot is not None:
            # HotnessFeatures extends observations in step(); baselines and the daemon step by config,
            # so the wrapper's extension is applied to the step_config result here.
            o = self.hot._extend(o, info)
            self.last_info = {"hotness": {**info.get("hotness", {}), "backend": self.hot.predictor.backend}}
        return self.tuner.decide(o, info)

    def close(self) -> None:
        if self.hot is not None:
            self.hot.predictor.close()
        self.env.close()


def make_hotness_predictor(h: HotnessConfig) -> Any:
    """Triton with the in-process fallback (or in-process only without ``triton_url``)."""
    from cachetuner.serving.client import FallbackPredictor, InProcessPredictor, TritonPredictor

    assert h.model_path is not None
    if not Path(h.model_path).is_file():
        raise ConfigError(f"hotness.model_path: {h.model_path} not found (a model.pt from cachetuner hotness train)")
    local = InProcessPredictor(h.model_path, device="cpu")
    if not h.triton_url:
        return local
    remote = TritonPredictor(h.triton_url, protocol=h.protocol, timeout_s=h.timeout_s, retries=0, seq_len=local.seq_len)
    return FallbackPredictor(remote, local, retry_after_s=h.retry_after_s)
