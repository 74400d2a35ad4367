"""``ppo``: a trained policy as a controller, and the one function that loads a policy artifact.

A trained policy is one artifact: ``model.zip`` plus its resolved training config
(``train_config.yaml`` beside it, or ``config/train_config.yaml`` in its MLflow run). The config says
how the observation was built (env features, price features) and what the actions mean, so the
controller rebuilds exactly that pipeline; nothing is guessed from the observation width.

``default`` names the general policy shipped in the package (``cachetuner/models/general``).
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from cachetuner.config import RedisConfig
from cachetuner.control.base import DecisionContext, register_controller
from cachetuner.control.settings import ControlSettings, PPOSettings
from cachetuner.env.config import EnvConfig
from cachetuner.errors import ConfigError
from cachetuner.hotness_model.settings import HotnessSettings
from cachetuner.mrc.decide import MRCControlSettings
from cachetuner.yamlconfig import load_yaml, validate

if TYPE_CHECKING:
    from sb3_contrib import RecurrentPPO
    from stable_baselines3 import PPO

#: The resolved training config saved next to every model.
CONFIG_SIDECAR = "train_config.yaml"
#: ``--model default``: the general policy shipped in the package.
DEFAULT_MODEL = "default"
SHIPPED_DIR = Path(__file__).resolve().parents[1] / "models" / "general"

#: Names of the price features appended to a policy's observation, in order.
PRICE_FEATURES = ("memory_cost_per_get",)


def price_features(memory_cost: float, miss_price: float, gets: float) -> np.ndarray:
    """``x / (x + 0.1)`` with ``x`` the interval's memory cost per get in miss-price units.

    Why: the env's observation is scale-free, so it does not say what the memory held costs relative
    to the misses it saves, and that ratio decides whether a bigger cache pays. ``0.1`` maps "memory
    costs 10 % of a miss per get" to 0.5. ``gets``: see :func:`price_load`."""
    x = max(memory_cost / (miss_price * max(gets, 1)), 0.0) if np.isfinite(memory_cost) and miss_price > 0 else 0.0
    return np.asarray([x / (x + 0.1)], dtype=np.float32)


def price_load(mode: str, gets: float, info: dict[str, Any]) -> float:
    """The GETs the price feature divides by (``ppo.price_load``): the interval's (``interval``), or the larger of
    those and the anchor rule's load estimate (``anchor``; ``info["anchor_load"]``, absent without curves)."""
    load = info.get("anchor_load") if mode == "anchor" else None
    return max(float(gets), float(load)) if load is not None else float(gets)


def one_thread() -> None:
    """PPO's small MLPs on 2 cores: one torch thread per process is 10-60x faster than two here."""
    import torch

    torch.set_num_threads(1)


@dataclass
class PolicyArtifact:
    """A loaded policy: the SB3 model and the configs its observations and actions were built with."""

    source: str
    model_path: Path
    model: Any
    env_config: EnvConfig  # the evaluation env of the training config (what to evaluate it under)
    train_env_config: EnvConfig
    price_features: bool
    recurrent: bool
    raw_config: dict[str, Any]
    hotness: HotnessSettings | None = None  # lstm_path resolved; None: trained without hotness features
    ppo: PPOSettings = field(default_factory=PPOSettings)  # its controllers.ppo: how its actions are used

    def model_card(self) -> str | None:
        card = self.model_path.parent / "MODEL_CARD.md"
        return card.read_text() if card.is_file() else None


def resolve_model_uri(uri: str | Path, cache_dir: Path | None = None, tracking_uri: str | None = None) -> tuple[Path, Path]:
    """``(model.zip, train_config.yaml)`` for a path, ``default``, ``runs:/<id>/...`` or ``models:/<name>/<v>``."""
    text = str(uri)
    if text == DEFAULT_MODEL:
        model, side = SHIPPED_DIR / "model.zip", SHIPPED_DIR / CONFIG_SIDECAR
        if not model.is_file():
            raise ConfigError(f"--model default: the shipped policy is missing ({model}); reinstall cachetuner")
        return model, side
    if not text.startswith(("runs:/", "models:/")):
        p = Path(text)
        if not p.is_file():
            raise ConfigError(f"{p}: model file not found (a model.zip written by cachetuner train, runs:/<id>/model or default)")
        return p, p.parent / CONFIG_SIDECAR
    import mlflow

    from cachetuner.tracking import default_tracking_uri

    mlflow.set_tracking_uri(tracking_uri or os.environ.get("MLFLOW_TRACKING_URI") or default_tracking_uri())
    dst = (cache_dir or Path(".cachetuner")) / "models" / text.replace(":/", "_").replace("/", "_")
    dst.mkdir(parents=True, exist_ok=True)
    try:
        local = Path(mlflow.artifacts.download_artifacts(artifact_uri=text, dst_path=str(dst)))
    except Exception as e:  # noqa: BLE001 (an MLflow/network failure: one line naming the URI)
        raise ConfigError(f"{text}: cannot download from MLflow ({type(e).__name__}: {e})") from None
    zips = [local] if local.is_file() else sorted(local.rglob("*.zip"))
    if not zips:
        raise ConfigError(f"{text}: no .zip artifact")
    side = zips[0].parent / CONFIG_SIDECAR
    if not side.is_file() and text.startswith("runs:/"):
        run_id = text.split("/")[1]
        with contextlib.suppress(Exception):  # no sidecar in the run: load_policy says so in one line
            side = Path(mlflow.artifacts.download_artifacts(
                artifact_uri=f"runs:/{run_id}/config/{CONFIG_SIDECAR}", dst_path=str(dst)))
    return zips[0], side


def _check_sb3_zip(path: Path) -> None:
    """A one-line error for a file that is not a stable-baselines3 save (a zip holding ``data`` and the policy's
    weights), before anything asks for its training config: "no train_config.yaml" would send the user looking for
    the wrong thing."""
    import zipfile

    try:
        with zipfile.ZipFile(path) as z:
            names = set(z.namelist())
    except (zipfile.BadZipFile, OSError) as e:
        raise ConfigError(f"{path}: not a trained policy (model.zip from `cachetuner train`): {e}") from None
    if not {"data", "policy.pth"} <= names:
        raise ConfigError(f"{path}: not a trained policy (a zip without stable-baselines3's data and policy.pth)")


def load_policy(
    uri: str | Path, *, config: str | Path | None = None, cache_dir: Path | None = None, tracking_uri: str | None = None
) -> PolicyArtifact:
    """Load a trained policy and its training config (``config`` overrides the sidecar)."""
    model_path, side = resolve_model_uri(uri, cache_dir, tracking_uri)
    _check_sb3_zip(model_path)
    cfg_path = Path(config) if config is not None else side
    if not cfg_path.is_file():
        raise ConfigError(
            f"{model_path}: no {CONFIG_SIDECAR} beside the model; a policy is model.zip plus its training config "
            "(pass --config experiments/NAME.yaml)"
        )
    raw = load_yaml(cfg_path)
    env_raw = raw.get("env", {})
    train_env = validate(EnvConfig, env_raw, f"{cfg_path}: env")
    eval_raw = (raw.get("eval") or {}).get("env")
    eval_env = validate(EnvConfig, eval_raw, f"{cfg_path}: eval.env") if eval_raw else train_env
    controllers = raw.get("controllers", raw.get("baselines")) or {}
    rule = validate(MRCControlSettings, controllers.get("mrc") or {}, f"{cfg_path}: controllers.mrc")
    use = validate(PPOSettings, controllers.get("ppo") or {}, f"{cfg_path}: controllers.ppo")
    for env in (train_env, eval_env):
        env.mrc.pin_anchor(rule)  # the rule it was trained around (TrainConfig does the same)
    recurrent = str((raw.get("ppo") or {}).get("policy", "mlp")).lower() in ("lstm", "recurrent")
    one_thread()
    model: PPO | RecurrentPPO
    try:
        if recurrent:
            from sb3_contrib import RecurrentPPO

            model = RecurrentPPO.load(model_path, device="cpu")
        else:
            from stable_baselines3 import PPO

            model = PPO.load(model_path, device="cpu")
    except Exception as e:  # noqa: BLE001 (a corrupt or foreign zip: name the file, no traceback)
        raise ConfigError(f"{model_path}: not a stable-baselines3 PPO model ({type(e).__name__}: {e})") from None
    return PolicyArtifact(
        source=str(uri), model_path=model_path, model=model, env_config=eval_env, train_env_config=train_env,
        price_features=bool(raw.get("price_features", True)), recurrent=recurrent, raw_config=raw,
        hotness=_hotness_settings(raw, cfg_path, model_path), ppo=use,
    )


def _hotness_settings(raw: dict[str, Any], cfg_path: Path, model_path: Path) -> HotnessSettings | None:
    """The artifact's ``hotness:`` section with its LSTM path resolved (beside model.zip first), or None."""
    if not (raw.get("hotness") or {}).get("enabled"):
        return None
    h = validate(HotnessSettings, raw["hotness"], f"{cfg_path}: hotness")
    beside = model_path.parent / str(h.lstm_path)
    path = beside if beside.is_file() else Path(str(h.lstm_path))
    if not path.is_file():
        raise ConfigError(f"{cfg_path}: hotness.lstm_path {h.lstm_path} not found beside {model_path.name} or here")
    return h.model_copy(update={"lstm_path": str(path)})


@register_controller("ppo")
class LearnedPolicy:
    """Deterministic actions of a trained policy, decoded by the action space it was trained with.

    ``model=``: a path, ``default``, or an MLflow ``runs:/`` / ``models:/`` URI (or a loaded
    :class:`PolicyArtifact`). The observation is ``ctx.obs`` (built by an env configured from the
    artifact's env config) plus the price features when the policy was trained with them.
    """

    name = "ppo"
    hindsight: ClassVar[bool] = False

    def __init__(self, settings: ControlSettings, seed: int = 0, model: Any = None, config: Any = None) -> None:
        if model is None:
            raise ConfigError("controller 'ppo' needs a model: --model PATH | default | runs:/<id>/model")
        self.artifact = model if isinstance(model, PolicyArtifact) else load_policy(model, config=config)
        #: trained with client-side TTL dimensions: ``client_ttl`` decodes them (ClientTTLDecider)
        self.decides_client_ttl = bool(self.artifact.env_config.actions.ttl_multipliers)
        own = settings.ppo.defer_cold  # an explicit setting wins; null: what the artifact ships with
        self.defer_cold = bool(self.artifact.ppo.defer_cold if own is None else own)
        self.price_load: str = settings.ppo.price_load or self.artifact.ppo.price_load or "interval"
        own_young = settings.ppo.defer_young
        self.defer_young = bool(self.artifact.ppo.defer_young if own_young is None else own_young)
        own_outside = settings.ppo.defer_outside
        self.defer_outside = bool(self.artifact.ppo.defer_outside if own_outside is None else own_outside)
        self.price_support = settings.ppo.price_support or self.artifact.ppo.price_support
        if self.defer_outside and self.artifact.price_features and self.price_support is None:
            raise ConfigError(f"{self.artifact.model_path}: controllers.ppo.defer_outside needs price_support, the range "
                              "of the price feature the policy saw in training (measure it with `cachetuner support`)")
        self.deferred = 0  # decisions handed to the anchor (defer_cold), since the reset
        self.deferred_young = 0  # decisions handed to the anchor (defer_young, past the cold phase), since the reset
        self.deferred_outside = 0  # decisions handed to the anchor (defer_outside), since the reset
        self._action: Any = None
        from cachetuner.env.actions import make_action_codec

        self.codec = make_action_codec(self.artifact.env_config.actions)
        #: trained with hotness features: rebuilt from the context's request sample (``ctx.sample``)
        self.hot: Any = None
        if self.artifact.hotness is not None:
            from cachetuner.hotness_model.features import HotnessTracker
            from cachetuner.hotness_model.predictor import InProcessPredictor

            h = self.artifact.hotness
            assert h.lstm_path is not None  # enabled settings have one (validated), resolved by load_policy
            opts: dict[str, Any] = h.options()  # dict[str, float], but max_keys is an int
            self.hot = HotnessTracker(InProcessPredictor(h.lstm_path, device="cpu"), **opts)
        self.needs_sample = self.hot is not None
        self._state: Any = None
        self._start = True

    def reset(self, ctx: DecisionContext) -> None:
        self._state = None
        self._start = True
        self.deferred = 0
        self.deferred_young = 0
        self.deferred_outside = 0
        if self.hot is not None:
            self.hot.reset()

    def observation(self, ctx: DecisionContext) -> np.ndarray:
        if ctx.obs is None:
            raise ConfigError("controller 'ppo' needs the env's observation in its context")
        obs = np.asarray(ctx.obs, np.float32)
        if self.hot is not None and "hotness" not in ctx.info:  # (the daemon's HotnessFeatures appends them itself)
            if ctx.sample is None:
                raise ConfigError(f"{self.artifact.model_path}: trained with hotness features, which need the "
                                  "interval's request sample in the decision context (ctx.sample)")
            feats = self.hot.update(ctx.sample, float(ctx.snapshot.maxmemory or ctx.config.maxmemory))
            obs = np.concatenate([obs, self.hot.clipped(feats).astype(np.float32)])
        if self.artifact.price_features:
            mem = float(ctx.prices.memory_cost(ctx.snapshot.maxmemory or ctx.config.maxmemory))
            load = price_load(self.price_load, ctx.snapshot.gets, ctx.info)
            obs = np.concatenate([obs, price_features(mem, ctx.prices.miss, load)])
        want = self.artifact.model.observation_space.shape
        if want is not None and obs.shape != tuple(want):
            raise ConfigError(
                f"{self.artifact.model_path}: the policy expects observations of shape {tuple(want)}, the env gives "
                f"{obs.shape}; build the env from the model's {CONFIG_SIDECAR}"
            )
        return obs

    def decide(self, ctx: DecisionContext) -> RedisConfig:
        obs = self.observation(ctx)
        if self.artifact.recurrent:
            action, self._state = self.artifact.model.predict(
                obs, state=self._state, episode_start=np.array([self._start]), deterministic=True)
        else:
            action, _ = self.artifact.model.predict(obs, deterministic=True)
        self._start = False
        self._action = action
        anchor = ctx.info.get("anchor")
        deferred = anchor if anchor is not None else ctx.config  # no anchor: the rule holds the config in force
        if self.defer_cold and ctx.info.get("anchor_cold"):
            self.deferred += 1
            return deferred
        if self.defer_young and ctx.info.get("anchor_young"):
            self.deferred_young += 1
            return deferred
        if self.defer_outside and self.outside_support(obs):
            self.deferred_outside += 1
            return deferred
        return self.codec.decode(action, ctx.config, (ctx.space.min_bytes, ctx.space.max_bytes), anchor)

    def outside_support(self, obs: np.ndarray) -> bool:
        """Whether the observation's price feature (its last element) lies outside ``price_support``."""
        if not self.artifact.price_features or self.price_support is None:
            return False
        lo, hi = self.price_support
        return not lo <= float(obs[-1]) <= hi

    def client_ttl(self, ctx: DecisionContext) -> Any:
        """The TTL part of the action :meth:`decide` just took (``None`` without TTL dimensions)."""
        if not self.decides_client_ttl or self._action is None:
            return None
        from cachetuner.ttl.knobs import ClientTTL

        return self.codec.decode_ttl(self._action, ctx.client_ttl if ctx.client_ttl is not None else ClientTTL())
