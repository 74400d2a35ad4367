"""Bad input to ``cachetuner hotness evaluate / export``: a --model that is not a TorchScript hotness model, a bad
--rate (fuzz items A19, A20): one line naming the file or option."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

import cachetuner.cli.hotness_cmds  # noqa: F401  (registers the commands)
from cachetuner.cli.app import app
from cachetuner.errors import ConfigError
from cachetuner.hotness_model.predictor import InProcessPredictor
from cachetuner.serving.export import write_triton_repo

runner = CliRunner()


class _NoSeqLen(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x


def _bad_models(d: Path) -> dict[str, Path]:
    garbage = d / "garbage.pt"
    garbage.write_bytes(bytes(range(256)) * 8)
    other_zip = d / "other.zip"
    with zipfile.ZipFile(other_zip, "w") as z:
        z.writestr("a.txt", "not a model")
    state = d / "state.pt"
    torch.save({"w": torch.zeros(3)}, state)
    no_seq = d / "noseq.pt"
    torch.jit.script(_NoSeqLen()).save(str(no_seq))
    return {"garbage": garbage, "zip": other_zip, "torch.save": state, "no seq_len": no_seq, "directory": d}


@pytest.fixture(scope="module")
def bad_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return _bad_models(tmp_path_factory.mktemp("bad-models"))


def _one_line(res, match: str) -> None:  # noqa: ANN001
    assert isinstance(res.exception, ConfigError), (res.exception, res.output)
    msg = str(res.exception)
    assert match in msg and "\n" not in msg, msg


@pytest.mark.parametrize("kind", ["garbage", "zip", "torch.save", "no seq_len", "directory"])
def test_evaluate_and_export_refuse_a_model_that_is_not_torchscript(
    bad_models: dict[str, Path], tmp_path: Path, kind: str
) -> None:
    path = bad_models[kind]
    match = f"{path}: a directory" if kind == "directory" else f"{path}: not a TorchScript hotness model ("
    _one_line(runner.invoke(app, ["hotness", "evaluate", "--trace", "bundled:web07", "--model", str(path)]), match)
    repo = tmp_path / "repo"
    _one_line(runner.invoke(app, ["hotness", "export", "--model", str(path), "--repo", str(repo)]), match)
    assert not repo.exists()
    with pytest.raises(ConfigError, match="not a TorchScript hotness model|a directory"):
        InProcessPredictor(path)


def test_missing_model(tmp_path: Path) -> None:
    _one_line(runner.invoke(app, ["hotness", "evaluate", "--trace", "bundled:web07", "--model", str(tmp_path / "no.pt")]),
              "no.pt: model file not found")  # fmt: skip
    with pytest.raises(ConfigError, match="not found"):
        write_triton_repo(tmp_path / "no.pt", tmp_path / "repo")


@pytest.mark.parametrize(("rate", "match"), [
    ("-1", "--rate: Input should be greater than 0, got -1.0"),
    ("0", "--rate: Input should be greater than 0"),
    ("nan", "--rate: Input should be a finite number"),
    ("inf", "--rate: Input should be a finite number"),
])  # fmt: skip
def test_evaluate_rate_must_be_positive_and_finite(rate: str, match: str) -> None:
    _one_line(runner.invoke(app, ["hotness", "evaluate", "--trace", "bundled:web07", "--rate", rate]), match)
