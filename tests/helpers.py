"""Helpers shared by several test files (not a test module)."""

import importlib.util
from pathlib import Path

import torch

from tsrep.training.callbacks import Callback


class LinearDtypes(Callback):
    """Records the output dtype of the first Linear layer of the network being trained, at every forward pass."""

    def __init__(self):
        self.dtypes = []

    def on_fit_start(self, info):
        self.handle = record_linear_dtypes(info["model"], self.dtypes)

    def on_fit_end(self, logs):
        self.handle.remove()


def record_linear_dtypes(module, dtypes):
    linear = next(m for m in module.modules() if isinstance(m, torch.nn.Linear))
    return linear.register_forward_hook(lambda layer, args, out: dtypes.append(out.dtype))


def load_benchmark_script(name: str):
    """benchmarks/<name>.py as a module: the benchmark scripts are files to run, not a package to import."""
    path = Path(__file__).parents[1] / "benchmarks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
