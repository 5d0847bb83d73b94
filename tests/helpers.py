"""Helpers shared by several test files (not a test module)."""

import importlib.util
from pathlib import Path

import numpy as np
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


def two_class_series(n=24, c=2, t=16, seed=0):
    """(X (n, c, t), y) of labels "a" and "b" in turn; class "b" is shifted by 1.5 over its first t // 2 steps."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, c, t))
    y = np.array(["a", "b"] * (n // 2))
    X[y == "b", :, : t // 2] += 1.5
    return X, y
