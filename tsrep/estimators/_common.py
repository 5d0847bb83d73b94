"""Helpers shared by every tsrep estimator and the encoder: devices, seeds, input tensors, parameter checks.

Kept apart from _base so that tsrep.representation can use them without importing the estimators.
"""

from __future__ import annotations

import numbers

import numpy as np
import torch
from sklearn.utils import check_random_state

from tsrep.data import SCALINGS, ChannelStandardizer, as_case_list, fill_missing, pad_cases
from tsrep.nn.pooling import POOLINGS
from tsrep.training import SeriesBatchData
from tsrep.training.optim import resolve_optimizer


def resolve_device(device) -> torch.device:
    if device in (None, "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(
            f"device={device!r} but CUDA is not available on this machine; use device='auto' or 'cpu' "
            "(set_params(device='cpu') on a loaded model)"
        )
    return dev


# Parameters of the shared training harness, checked by validate_training_params.
TRAINING_PARAMS = (
    "pooling", "scaling", "dim_feedforward", "lr", "batch_size", "max_epochs", "patience", "grad_clip", "optimizer",
)


def _is_positive_int(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool) and value >= 1


def validate_training_params(est, names) -> None:
    """Raise ValueError naming the first bad harness parameter among `names` (attributes of `est`)."""
    checks = {
        "pooling": (lambda v: v in POOLINGS, f"must be one of {POOLINGS}"),
        "scaling": (lambda v: v in SCALINGS, f"must be one of {SCALINGS}"),
        "dim_feedforward": (lambda v: v is None or _is_positive_int(v), "must be a positive integer or None"),
        "dropout": (lambda v: isinstance(v, numbers.Real) and 0 <= v < 1, "must be in [0, 1)"),
        "lr": (lambda v: isinstance(v, numbers.Real) and v > 0, "must be a positive number"),
        # One case per batch would leave BatchNorm without statistics and data parallelism without a
        # case per process: such batches are skipped, so batch_size=1 would train nothing.
        "batch_size": (lambda v: _is_positive_int(v) and v >= 2, "must be an integer >= 2"),
        "max_epochs": (_is_positive_int, "must be a positive integer"),
        "validation_fraction": (lambda v: isinstance(v, numbers.Real) and 0 <= v < 1, "must be in [0, 1)"),
        "patience": (lambda v: v is None or _is_positive_int(v), "must be a positive integer or None"),
        "grad_clip": (lambda v: v is None or (isinstance(v, numbers.Real) and v > 0), "must be a positive number or None"),
    }
    for name in names:
        value = getattr(est, name)
        if name == "optimizer":
            resolve_optimizer(value)  # raises naming the unknown optimiser
            continue
        ok, rule = checks[name]
        if not ok(value):
            raise ValueError(f"{name} {rule}, got {value!r}")


def seed_from(random_state) -> int:
    """An int seed from an int, a RandomState or None (drawn), as scikit-learn reads random_state."""
    if isinstance(random_state, numbers.Integral):
        return int(random_state)
    return int(check_random_state(random_state).randint(np.iinfo(np.int32).max))


def prepare_series(X, standardizer: ChannelStandardizer) -> SeriesBatchData:
    """Standardise, fill missing values and pad an aeon collection into model-ready tensors."""
    cases = [fill_missing(c) for c in standardizer.transform(as_case_list(X))]
    values, valid = pad_cases(cases)
    return SeriesBatchData(torch.from_numpy(values), torch.from_numpy(valid))


def cpu_state_dict(module: torch.nn.Module) -> dict:
    """Detached CPU copies of a module's weights: what pickles and checkpoints store."""
    return {k: v.detach().to("cpu", copy=True) for k, v in module.state_dict().items()}


def check_not_empty(X) -> None:
    """aeon's own checks fail deep in numpy on empty input: name the problem instead."""
    shape = getattr(X, "shape", None)
    if shape is not None and len(shape) in (2, 3) and 0 in shape:
        # Worded as scikit-learn words it, so sklearn-aware tooling recognises the error.
        what = "sample(s)" if shape[0] == 0 else "feature(s)"
        raise ValueError(
            f"X is empty: found 0 {what} (shape={tuple(shape)}) while a minimum of 1 is required; "
            "need at least one case, channel and time point"
        )
    if isinstance(X, list) and (len(X) == 0 or any(np.size(x) == 0 for x in X)):
        raise ValueError("X is empty or holds an empty series; every series needs at least one time point")
