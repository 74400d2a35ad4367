"""Triton python-backend model: the hotness LSTM as TorchScript, one torch thread.

Copied verbatim into ``<repo>/hotness/1/model.py`` by ``cachetuner.serving.export``; it must not
import cachetuner (the stub process only needs torch and numpy on its PYTHONPATH).
"""

import os

import numpy as np
import torch
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        torch.set_num_threads(1)
        here = os.path.dirname(os.path.abspath(__file__))
        self.device = torch.device("cuda" if torch.cuda.is_available() and args.get("model_instance_kind") == "GPU" else "cpu")
        self.model = torch.jit.load(os.path.join(here, "model.pt"), map_location=self.device).eval()

    def execute(self, requests):
        # dynamic batching hands several requests at once: run them as one tensor, split after
        arrays = [pb_utils.get_input_tensor_by_name(r, "HISTORY").as_numpy() for r in requests]
        sizes = [a.shape[0] for a in arrays]
        x = torch.from_numpy(np.ascontiguousarray(np.concatenate(arrays), dtype=np.float32)).to(self.device)
        with torch.inference_mode():
            y = self.model(x).float().cpu().numpy()
        responses = []
        start = 0
        for n in sizes:
            out = pb_utils.Tensor("HOTNESS", y[start : start + n])
            responses.append(pb_utils.InferenceResponse(output_tensors=[out]))
            start += n
        return responses

    def finalize(self):
        self.model = None
