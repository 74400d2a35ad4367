"""Typed training configuration, loaded from ``experiments/*.yaml``.

One model per concern (PPO hyperparameters, periodic evaluation, early stopping, controllers), all
``extra="forbid"`` so that a misspelt field fails with one line naming the field and the file
(:func:`cachetuner.yamlconfig.load_model`). The resolved model is what gets logged with every run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, model_validator

from cachetuner.control.settings import ControlSettings
from cachetuner.env import EnvConfig
from cachetuner.hotness_model.settings import HotnessSettings
from cachetuner.yamlconfig import load_model


class PPOParams(BaseModel):
    """The subset of :class:`stable_baselines3.PPO` arguments worth tuning here (SB3's meaning and defaults
    unless noted). ``n_steps`` is per environment: one rollout is ``n_steps * n_envs`` intervals."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    learning_rate: float = Field(3e-4, gt=0)
    n_steps: int = Field(128, ge=2, description="steps per env per rollout (SB3 default 2048 is far too long here)")
    batch_size: int = Field(64, ge=2)
    n_epochs: int = Field(10, ge=1)
    gamma: float = Field(0.9, ge=0, le=1, description="short horizon: a config change pays off within minutes")
    gae_lambda: float = Field(0.95, ge=0, le=1)
    clip_range: float = Field(0.2, gt=0)
    ent_coef: float = Field(0.01, ge=0)
    vf_coef: float = Field(0.5, ge=0)
    max_grad_norm: float = Field(0.5, gt=0)
    target_kl: float | None = None
    normalize_advantage: bool = True
    net_arch: list[Annotated[int, Field(ge=1)]] = Field(
        default_factory=lambda: [64, 64], description="hidden layers of both pi and vf (units per layer, >= 1)"
    )
    activation: Literal["tanh", "relu"] = "tanh"
    init_action: int | None = Field(
        None, ge=0, description="start with this action preferred (its logit +3): for mrc-offset, 3 = follow the mrc "
        "rule, so training starts from the classical controller instead of a uniform random policy"
    )
    policy: Literal["mlp", "lstm"] = Field(
        "mlp", description="mlp: SB3 PPO; lstm: sb3-contrib RecurrentPPO (memory for periodic workloads)"
    )


class EvalSettings(BaseModel):
    """Periodic deterministic evaluation (SB3 ``EvalCallback``) on pinned traffic.

    Each evaluation runs one episode per evaluation workload from its beginning
    (``options={"workload": i, "start": "begin"}``) so that successive evaluations are comparable.
    """

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    enabled: bool = True
    eval_freq: int = Field(2048, ge=1, description="total env steps (all envs together) between evaluations")
    env: EnvConfig | None = Field(None, description="evaluation env; None = the training env")
    deterministic: bool = True


class EarlyStopSettings(BaseModel):
    """SB3 ``StopTrainingOnNoModelImprovement`` after each evaluation (needs ``eval.enabled``)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    enabled: bool = True
    max_no_improvement_evals: int = Field(6, ge=1)
    min_evals: int = Field(6, ge=0)


class TrainConfig(BaseModel):
    """A whole training experiment: env, algorithm, evaluation, where results go."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    experiment: str = Field(..., min_length=1, description="MLflow experiment name and run-name component")
    seed: int = Field(0, ge=0)
    total_timesteps: int = Field(..., ge=1, description="env steps (= tuning intervals) over all envs")
    n_envs: int = Field(2, ge=1)
    vec_env: Literal["dummy", "subproc"] = Field(
        "dummy", description="dummy: one process (best on 2 cores); subproc: one process per env"
    )
    ppo: PPOParams = Field(default_factory=PPOParams)
    env: EnvConfig = Field(default_factory=EnvConfig)
    eval: EvalSettings = Field(default_factory=EvalSettings)
    early_stop: EarlyStopSettings = Field(default_factory=EarlyStopSettings)
    checkpoint_freq: int = Field(0, ge=0, description="total env steps between checkpoints; 0 = none")
    output_dir: Path = Field(Path("runs"), description="models go to OUTPUT_DIR/RUN_NAME/")
    price_features: bool = Field(
        True, description="append the memory cost per get to observations (cachetuner.agent.features)"
    )
    support_episodes: int = Field(
        20, ge=0, description="after training, roll the saved policy out over this many seeded training episodes and "
        "write the range of its price feature into its train_config.yaml (controllers.ppo.price_support, what "
        "defer_outside reads; cachetuner.agent.support); 0 = not measured. A recipe's own price_support is kept"
    )
    hotness: HotnessSettings = Field(
        default_factory=HotnessSettings, description="hotness features appended to the observation (off by default)"
    )
    controllers: ControlSettings = Field(
        default_factory=ControlSettings,
        validation_alias=AliasChoices("controllers", "baselines"),
        description="settings of the non-learned controllers (mrc, hindsight references, ...); `baselines:` is its older name",
    )

    @model_validator(mode="after")
    def _anchor_follows_mrc(self) -> TrainConfig:
        """The env's anchor runs the same rule as the ``mrc`` controller of this config unless the env
        names its own (``env.mrc.anchor``): a policy is trained, and later compared, around one rule."""
        for env in (self.env, self.eval.env):
            if env is not None:
                env.mrc.pin_anchor(self.controllers.mrc)
        return self

    @classmethod
    def from_yaml(cls, path: str | Path) -> TrainConfig:
        return load_model(cls, path)

    def eval_env_config(self) -> EnvConfig:
        return self.eval.env if self.eval.env is not None else self.env
