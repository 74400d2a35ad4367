"""``hotness:`` of a training config: the hotness features a policy is trained (and run) with.

Its own module, below both the trainer (:mod:`cachetuner.agent`) and the ``ppo`` controller
(:mod:`cachetuner.control.learned`), which both read it: neither has to import the other.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator


class HotnessSettings(BaseModel):
    """Hotness features (:class:`cachetuner.hotness_model.features.HotnessFeatures`: predicted hot-set
    bytes at 80/90/99 % coverage and hot-set churn) appended to the env observation, before the price
    features. Training copies the LSTM next to the model (``hotness.pt``) and the saved
    ``train_config.yaml`` names that copy, so the ``ppo`` controller rebuilds the same features."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = False
    lstm_path: str | None = Field(
        None, description="TorchScript model.pt of `cachetuner hotness train`; a relative path is looked up beside "
        "the policy's model.zip first, then from the working directory"
    )
    max_keys: int = Field(1024, ge=16, description="keys tracked (and predicted) per interval")
    top_k_share: float = Field(0.1, gt=0, le=1, description="share of tracked keys forming the hot set (churn)")
    max_ratio: float = Field(8.0, gt=0, description="clip of the hot bytes / maxmemory features")

    @model_validator(mode="after")
    def _check(self) -> HotnessSettings:
        if self.enabled and not self.lstm_path:
            raise ValueError("hotness.enabled needs lstm_path (a model.pt from cachetuner hotness train)")
        return self

    def options(self) -> dict[str, float]:
        return {"max_keys": self.max_keys, "top_k_share": self.top_k_share, "max_ratio": self.max_ratio}


__all__ = ["HotnessSettings"]
