"""Helpers shared by several test files (not a test module)."""

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
