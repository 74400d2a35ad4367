"""The LSTM that maps a key's last ``seq_len`` bucket counts to its next-horizon access count.

Input and output are log1p-scaled counts, so one network serves keys whose rates differ by
orders of magnitude. The module is TorchScript-able as is: serving exports exactly this object.
"""

from __future__ import annotations

from pathlib import Path

import torch
from pydantic import BaseModel, ConfigDict, Field
from torch import nn

from cachetuner.errors import ConfigError


class LSTMConfig(BaseModel):
    """Architecture of :class:`HotnessLSTM` (defaults follow the seed design)."""

    model_config = ConfigDict(extra="forbid")

    seq_len: int = Field(64, ge=2, description="history buckets per input sequence")
    hidden: int = Field(128, ge=4, description="LSTM hidden size")
    layers: int = Field(2, ge=1, le=4, description="stacked LSTM layers")
    dropout: float = Field(0.0, ge=0.0, lt=1.0, description="dropout between LSTM layers")


class HotnessLSTM(nn.Module):
    """``[B, seq_len]`` log1p bucket counts -> ``[B, 1]`` predicted log1p next-horizon count.

    The last hidden state goes through LayerNorm and a linear head; a skip term from the mean of
    the input lets the network start from a sensible "recent rate" guess instead of zero.
    """

    def __init__(self, cfg: LSTMConfig | None = None) -> None:
        super().__init__()
        cfg = cfg or LSTMConfig()
        self.seq_len = cfg.seq_len
        self.lstm = nn.LSTM(
            input_size=1,
            hidden_size=cfg.hidden,
            num_layers=cfg.layers,
            batch_first=True,
            dropout=cfg.dropout if cfg.layers > 1 else 0.0,
        )
        self.norm = nn.LayerNorm(cfg.hidden)
        self.head = nn.Linear(cfg.hidden, 1)
        self.skip = nn.Linear(1, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.lstm(x.unsqueeze(-1))
        h = self.norm(out[:, -1, :])
        return self.head(h) + self.skip(x.mean(dim=1, keepdim=True))


def load_hotness_script(path: str | Path, map_location: str | torch.device = "cpu") -> torch.jit.ScriptModule:
    """Load a ``model.pt`` (TorchScript of :class:`HotnessLSTM`, as ``hotness train`` writes it). A missing
    file, or one that is not a TorchScript hotness model (other bytes, another zip, a ``torch.save``
    state dict, a TorchScript without ``seq_len``), is a one-line :class:`ConfigError` naming the file."""
    p = Path(path)
    if p.is_dir():
        raise ConfigError(f"{p}: a directory, not a model file (give its model.pt)")
    if not p.is_file():
        raise ConfigError(f"{p}: model file not found (train one with `cachetuner hotness train`)")
    hint = "write one with `cachetuner hotness train`"
    try:
        module = torch.jit.load(str(p), map_location=map_location)
    except (RuntimeError, ValueError, OSError, EOFError) as e:
        why = str(e).splitlines()[0] if str(e).strip() else type(e).__name__
        why = why.split(". This is an internal")[0]  # torch's long "corrupted checkpoint" tail
        raise ConfigError(f"{p}: not a TorchScript hotness model ({why}); {hint}") from None
    try:
        seq_len = int(module.seq_len)
    except (AttributeError, RuntimeError, TypeError, ValueError):
        raise ConfigError(f"{p}: not a TorchScript hotness model (TorchScript without an integer seq_len); {hint}") from None
    if seq_len < 1:
        raise ConfigError(f"{p}: not a TorchScript hotness model (seq_len {seq_len} < 1); {hint}")
    return module
