"""Export a trained hotness model: TorchScript, optional ONNX, and a Triton model repository.

Repository layout (what ``tritonserver --model-repository`` expects)::

    <repo>/hotness/config.pbtxt       python backend, dynamic batching, CPU instance
    <repo>/hotness/1/model.py         loads model.pt with torch (one thread)
    <repo>/hotness/1/model.pt         TorchScript of HotnessLSTM

ONNX: ``torch.onnx.export`` needs the ``onnx`` package (and, in torch 2.x's dynamo exporter,
``onnxscript``); when missing the ONNX file is skipped with a note instead of pulling in large
dependencies. Triton serves the TorchScript through the python backend either way.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import torch

from cachetuner.errors import ConfigError
from cachetuner.hotness_model.model import load_hotness_script

MODEL_NAME = "hotness"
INPUT_NAME = "HISTORY"
OUTPUT_NAME = "HOTNESS"
TEMPLATE = Path(__file__).with_name("templates") / "triton_hotness_model.py"

CONFIG_PBTXT = """\
name: "{name}"
backend: "python"
max_batch_size: {max_batch_size}
dynamic_batching {{
  max_queue_delay_microseconds: {queue_delay_us}
}}
input [
  {{
    name: "{input}"
    data_type: TYPE_FP32
    dims: [ {seq_len} ]
  }}
]
output [
  {{
    name: "{output}"
    data_type: TYPE_FP32
    dims: [ 1 ]
  }}
]
instance_group [
  {{
    count: 1
    kind: {kind}
  }}
]
"""


@dataclass
class ExportResult:
    torchscript: Path
    repo: Path
    onnx: Path | None
    onnx_note: str | None


def seq_len_of(model: torch.jit.ScriptModule) -> int:
    """Input length recorded in the scripted HotnessLSTM (attribute ``seq_len``)."""
    return int(model.seq_len)


def write_triton_repo(
    model_pt: str | Path,
    repo: str | Path,
    *,
    max_batch_size: int = 1024,
    queue_delay_us: int = 200,
    kind: str = "KIND_CPU",
) -> Path:
    """Create ``<repo>/hotness/{config.pbtxt,1/model.py,1/model.pt}`` from a TorchScript file."""
    model_pt = Path(model_pt)
    if not model_pt.is_file() and not model_pt.is_dir():
        raise ConfigError(f"{model_pt}: TorchScript model not found (train one with `cachetuner hotness train`)")
    scripted = load_hotness_script(model_pt)
    seq_len = seq_len_of(scripted)
    root = Path(repo) / MODEL_NAME
    version = root / "1"
    version.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(model_pt, version / "model.pt")
    shutil.copyfile(TEMPLATE, version / "model.py")
    (root / "config.pbtxt").write_text(
        CONFIG_PBTXT.format(
            name=MODEL_NAME,
            max_batch_size=max_batch_size,
            queue_delay_us=queue_delay_us,
            input=INPUT_NAME,
            output=OUTPUT_NAME,
            seq_len=seq_len,
            kind=kind,
        )
    )
    meta = model_pt.with_name("hotness.json")
    if meta.is_file():
        shutil.copyfile(meta, version / "hotness.json")
    return Path(repo)


def export_onnx(model_pt: str | Path, out: str | Path) -> tuple[Path | None, str | None]:
    """ONNX export when the ``onnx`` package is importable; otherwise ``(None, reason)``."""
    if importlib.util.find_spec("onnx") is None:
        return None, "ONNX skipped: the 'onnx' package is not installed (torch.onnx needs it); TorchScript is exported"
    scripted = load_hotness_script(model_pt)
    x = torch.zeros(2, seq_len_of(scripted))
    out = Path(out)
    try:
        torch.onnx.export(
            scripted, (x,), str(out), input_names=[INPUT_NAME], output_names=[OUTPUT_NAME],
            dynamic_axes={INPUT_NAME: {0: "batch"}, OUTPUT_NAME: {0: "batch"}},
        )
    except Exception as e:  # exporter version quirks: report, keep TorchScript
        return None, f"ONNX skipped: torch.onnx.export failed ({type(e).__name__}: {e})"
    return out, None


def export_all(model_pt: str | Path, repo: str | Path, *, onnx: bool = True, max_batch_size: int = 1024) -> ExportResult:
    """TorchScript (as given) + ONNX next to it (if possible) + the Triton repository."""
    model_pt = Path(model_pt)
    repo_path = write_triton_repo(model_pt, repo, max_batch_size=max_batch_size)
    onnx_path, note = export_onnx(model_pt, model_pt.with_suffix(".onnx")) if onnx else (None, "ONNX not requested")
    (Path(repo) / MODEL_NAME / "export.json").write_text(
        json.dumps({"torchscript": str(model_pt), "onnx": str(onnx_path) if onnx_path else None, "onnx_note": note})
    )
    return ExportResult(torchscript=model_pt, repo=repo_path, onnx=onnx_path, onnx_note=note)
