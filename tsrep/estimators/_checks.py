"""What users hand the estimators, checked: collections X, class labels y, devices, seeds and optimisers;
and the model-ready tensors of a checked collection. Every tsrep estimator and TSRepEncoder use them."""

from __future__ import annotations

import inspect
import math
import numbers
import warnings

import numpy as np
import torch
from sklearn.exceptions import DataConversionWarning
from sklearn.utils import check_random_state

from tsrep.data import ChannelStandardizer, as_case_list, fill_missing, pad_cases
from tsrep.exceptions import MissingChannelWarning
from tsrep.training import SeriesBatchData
from tsrep.training.optim import resolve_optimizer


def resolve_device(device) -> torch.device:
    """The torch device of a ``device`` parameter ("auto", "cpu", "cuda", "cuda:N", "mps" or a torch.device).

    ValueError naming `device` for anything else, and for a device this machine does not have.
    """
    if device is None or (isinstance(device, str) and device == "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if not isinstance(device, (str, torch.device)):
        # torch reads a bare int as an accelerator index: say which string is meant instead.
        hint = f"; for GPU {device} write 'cuda:{device}'" if isinstance(device, numbers.Integral) else ""
        raise ValueError(
            f"device must be 'auto', 'cpu', 'cuda', 'cuda:N', 'mps' or a torch.device, got {device!r} "
            f"({type(device).__name__}){hint}"
        )
    try:
        dev = torch.device(device)
    except (RuntimeError, ValueError):
        raise ValueError(
            f"device={device!r} is not a device name torch knows; use 'auto', 'cpu', 'cuda', 'cuda:N' or 'mps'"
        ) from None
    if dev.type not in ("cpu", "cuda", "mps"):
        raise ValueError(
            f"device={device!r} is a {dev.type!r} device; tsrep trains and predicts on 'cpu', 'cuda' or 'mps'"
            + (" (a 'meta' tensor has a shape but no data)" if dev.type == "meta" else "")
        )
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(
            f"device={device!r} but CUDA is not available on this machine; use device='auto' or 'cpu' "
            "(set_params(device='cpu') on a loaded model)"
        )
    if dev.type == "cuda" and dev.index is not None and dev.index >= torch.cuda.device_count():
        raise ValueError(
            f"device={device!r} but this machine has {torch.cuda.device_count()} CUDA device(s) "
            f"(cuda:0 to cuda:{torch.cuda.device_count() - 1})"
        )
    if dev.type == "mps" and not (hasattr(torch.backends, "mps") and torch.backends.mps.is_available()):
        raise ValueError(f"device={device!r} but MPS is not available on this machine; use device='auto' or 'cpu'")
    return dev


def check_optimizer(optimizer, optimizer_kwargs, lr=1e-3) -> None:
    """Raise ValueError naming `optimizer` or `optimizer_kwargs` when they cannot drive tsrep's training loop.

    The optimiser is built once on a dummy parameter, so unknown or ill-typed keyword arguments fail
    here, before any data is touched, and not after the network was built.
    """
    cls = resolve_optimizer(optimizer)  # raises naming the unknown optimiser
    closure = inspect.signature(cls.step).parameters.get("closure")
    if closure is not None and closure.default is inspect.Parameter.empty:
        raise ValueError(
            f"optimizer={optimizer!r} needs a closure that re-evaluates the loss at every step (a line search); "
            "tsrep's training loop takes one gradient step per batch: use 'adamw', 'radam', 'sgd' or another "
            "first-order optimiser"
        )
    if optimizer_kwargs is None:
        return
    if not isinstance(optimizer_kwargs, dict) or not all(isinstance(k, str) for k in optimizer_kwargs):
        raise ValueError(
            f"optimizer_kwargs must be a dict of keyword arguments of the optimizer (e.g. {{'momentum': 0.9}}) "
            f"or None, got {optimizer_kwargs!r}"
        )
    try:
        cls([torch.zeros(1, requires_grad=True)], **{"lr": lr, **optimizer_kwargs})
    except (TypeError, ValueError) as exc:
        raise ValueError(f"optimizer_kwargs={optimizer_kwargs!r} are not accepted by {cls.__name__}: {exc}") from None


def seed_from(random_state) -> int:
    """An int seed from an int, a RandomState or None (drawn), as scikit-learn reads random_state."""
    if isinstance(random_state, numbers.Integral):
        return int(random_state)
    return int(check_random_state(random_state).randint(np.iinfo(np.int32).max))


def prepare_series(X, standardizer: ChannelStandardizer) -> SeriesBatchData:
    """Standardise, fill missing values and pad an aeon collection into model-ready tensors.

    A 3-D array's trailing all-NaN steps are padding (tsrep.data.as_case_list). ValueError when a
    standardised value does not fit float32 (X far outside the training data's scale): the network
    would see infinities and answer NaN.
    """
    cases = [fill_missing(c) for c in standardizer.transform(as_case_list(X, trailing_nan_is_padding=True))]
    with np.errstate(over="ignore"):  # overflow is reported below, by case
        values, valid = pad_cases(cases)
    finite = np.isfinite(values).reshape(len(values), -1).all(axis=1)
    if not finite.all():
        bad = np.flatnonzero(~finite)
        raise ValueError(
            f"X case(s) {_first(bad)} lie too far from the scale of the training data: standardised with the "
            f"training mean and std, their values exceed float32's range ({np.finfo(np.float32).max:.1e}) and "
            "the network would see infinities"
        )
    return SeriesBatchData(torch.from_numpy(values), torch.from_numpy(valid))


def _first(indices, n: int = 5) -> str:
    """'3, 7, 9' or '3, 7, 9, 12, 20, ... (40 in all)': the first indices of a problem, for messages."""
    shown = ", ".join(str(int(i)) for i in indices[:n])
    return shown + (f", ... ({len(indices)} in all)" if len(indices) > n else "")


def check_values(X, fitting: bool) -> None:
    """Refuse infinite values and series without an observed value; warn of channels that are all NaN at fit.

    X is a collection in aeon's inner types (3-D array or list of 2-D arrays). NaN marks a missing
    value, which is interpolated; infinity is no value at all, and a series (or, at fit, a whole
    training set) without any observed value would be answered from zeros alone.
    """
    cases = list(X)
    for i, case in enumerate(cases):
        inf = np.isinf(case)
        if inf.any():
            channel, step = (int(v) for v in np.argwhere(inf)[0])
            total = sum(int(np.isinf(c).sum()) for c in cases)
            raise ValueError(
                f"X holds infinite values ({total} in all; the first at case {i}, channel {channel}, step {step}); "
                "give finite numbers, or NaN for a missing value"
            )
    empty = np.flatnonzero([np.isnan(c).all() for c in cases])
    if fitting and len(empty) == len(cases):
        raise ValueError("X holds no observed value: every value of every training series is NaN")
    if len(empty):
        raise ValueError(
            f"X case(s) {_first(empty)} hold no observed value (every value is NaN): there is nothing to "
            f"{'learn' if fitting else 'predict'} from; drop them or give their values"
        )
    if fitting:
        unobserved = np.logical_and.reduce([np.isnan(c).all(axis=1) for c in cases])
        if unobserved.any():
            warnings.warn(
                f"X channel(s) {_first(np.flatnonzero(unobserved))} hold no observed value in any training series "
                "(every value NaN); they are read as the constant 0 and carry no information",
                MissingChannelWarning,
                stacklevel=4,
            )


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


def check_enough_cases(n_cases: int) -> None:
    """Fitting needs two cases: training batches of one case are skipped (batch norm needs two values)."""
    if n_cases < 2:
        raise ValueError(
            f"X and y hold {n_cases} case(s); fitting needs at least 2 (a training batch of one case is skipped, "
            "so one case would train nothing)"
        )


def check_sample_weight(sample_weight, n_cases: int) -> np.ndarray | None:
    """A float array of n_cases finite, non-negative weights with a positive sum, or None."""
    if sample_weight is None:
        return None
    try:
        w = np.asarray(sample_weight, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"sample_weight must be an array of numbers, got {type(sample_weight).__name__}") from err
    if w.ndim == 0:
        w = np.full(n_cases, float(w))
    if w.shape != (n_cases,):
        raise ValueError(f"sample_weight must have one weight per case ({n_cases}), got shape {w.shape}")
    if not np.all(np.isfinite(w)):
        raise ValueError("sample_weight contains NaN or infinite values")
    if np.any(w < 0):
        raise ValueError(f"sample_weight must be >= 0, got a minimum of {w.min()}")
    if w.sum() <= 0:
        raise ValueError("sample_weight is zero for every case (the weights sum to 0): nothing to train on")
    return w


def column_as_1d(y):
    """y as given, or a column vector (n, 1) as (n,) with scikit-learn's DataConversionWarning, as its
    estimators take one (a one-column DataFrame included); the message is scikit-learn's, which its estimator
    checks look for."""
    values = getattr(y, "values", y)
    if getattr(values, "ndim", None) == 2 and values.shape[1] == 1:
        warnings.warn(
            "A column-vector y was passed when a 1d array was expected; it is read as y.ravel()",
            DataConversionWarning, stacklevel=4,
        )
        return np.asarray(values).ravel()
    return y


def check_class_labels(y) -> None:
    """ValueError naming y when class labels are missing (NaN, None), infinite or mix kinds (numbers and strings).

    scikit-learn's type_of_target calls both "unknown", and sorting the labels fails on a comparison
    of a float with a str; neither names the problem.
    """
    labels = np.asarray(getattr(y, "values", y), dtype=object)
    if labels.ndim != 1:
        return  # the shape is aeon's check, with its own message
    missing = np.flatnonzero([v is None or (isinstance(v, numbers.Real) and v != v) for v in labels])
    if len(missing):
        raise ValueError(
            f"y holds no class label (NaN or None) for case(s) {_first(missing)}; every case needs a label "
            "(drop those cases, or give their labels)"
        )
    # An int is never infinite (and one past float's range would overflow math.isinf).
    infinite = np.flatnonzero([isinstance(v, numbers.Real) and not isinstance(v, numbers.Integral) and math.isinf(v)
                               for v in labels])
    if len(infinite):  # scikit-learn's type_of_target would cast it to an int with a RuntimeWarning first
        raise ValueError(
            f"y holds an infinite class label for case(s) {_first(infinite)}; class labels must be finite numbers "
            "or strings"
        )
    examples: dict[str, object] = {}
    for v in labels:
        examples.setdefault(_label_kind(v), v)
    if len(examples) > 1:
        shown = ", ".join(f"{kind} {value!r}" for kind, value in examples.items())
        raise ValueError(
            f"y mixes class labels of different kinds ({shown}); give every label as a string or every label as "
            "a number"
        )


def _label_kind(label) -> str:
    if isinstance(label, (str, bytes)):
        return "str"
    return "number" if isinstance(label, numbers.Number) else type(label).__name__


def check_finite_outputs(outputs: torch.Tensor) -> torch.Tensor:
    """outputs (n_cases, n_outputs), refused when a case's are NaN or infinite: never an ordinary-looking answer."""
    finite = torch.isfinite(outputs).reshape(len(outputs), -1).all(dim=1)
    if not bool(finite.all()):
        bad = torch.nonzero(~finite).flatten().numpy()
        raise ValueError(
            f"the network's outputs for X case(s) {_first(bad)} are NaN or infinite: its weights or those series "
            "are not usable (a training that diverged, a corrupt checkpoint, or series far outside the scale of "
            "the training data)"
        )
    return outputs
