"""``save`` / ``load`` of fitted classifiers and regressors in tsrep's pickle-free model file
(tsrep._serialization: safetensors weights, JSON configuration and fitted metadata). ``load`` checks
the fitted state it restores (types, shapes, agreement with the weights) and refuses a file that
fails, so that a damaged or edited file is named at load, not at predict."""

from __future__ import annotations

import copy
import math
import numbers
import warnings

import numpy as np
import torch

import tsrep
import tsrep.estimators

from tsrep._serialization import ModelFileError, check_standardization, from_json, prefixed, read_model_file
from tsrep._serialization import to_json, write_model_file
from tsrep.data import ChannelStandardizer
from tsrep.estimators._minirocket_blend import CalibratedMiniRocket, RidgeMiniRocket
from tsrep.training.loop import History
from tsrep.training.optim import resolve_optimizer

# Fitted attributes written to the JSON document (the weights and the standardisation go to tensors).
FITTED = (
    "classes_", "n_classes_", "metadata_", "_n_jobs", "encoder_config_", "max_len_", "n_channels_", "patch_len_",
    "patch_stride_", "max_tokens_", "conv_stem_", "validation_fraction_", "augmentation_", "pretrain_history_",
    "n_outputs_", "n_parameters_", "best_epoch_",
    "n_epochs_", "fit_time_millis_", "y_mean_", "y_std_", "max_epochs_", "min_steps_", "patience_", "label_smoothing_",
    "mixup_", "precise_bn_", "blend_minirocket_", "network_weight_",
)
NOT_SAVED = ("callbacks",)  # loaded models get callbacks=None


def _model_class(name):
    """The public tsrep class a model file names (None for any other name), resolved by the packages' own
    tables of public names: loading imports the module of the class asked for, and no other."""
    if not isinstance(name, str):
        return None
    if name in tsrep.estimators.__all__:
        return getattr(tsrep.estimators, name)
    return tsrep.TSRepEncoder if name == "TSRepEncoder" else None


def params_to_json(params: dict, where: str) -> dict:
    out = {}
    for name, value in params.items():
        if name in NOT_SAVED:
            continue
        if name == "random_state" and not (value is None or isinstance(value, int)):
            value = None  # a RandomState: predictions do not depend on it; JSON cannot hold it
        if name == "optimizer" and isinstance(value, type):
            if resolve_optimizer(value.__name__) is not value:
                raise ValueError(
                    f"{where}: optimizer={value!r} is a class that cannot be named by a string; a tsrep model "
                    "file stores the optimiser by name (set_params(optimizer='adamw') or another torch.optim name)"
                )
            value = value.__name__
        out[name] = to_json(value, f"{where}[{name!r}]")
    return out


def _document(est, prefix: str, tensors: dict) -> dict:
    """The JSON document of one fitted estimator; its tensors are added to `tensors` under `prefix`."""
    where = type(est).__name__
    fitted = {name: to_json(getattr(est, name), f"{where}.{name}") for name in FITTED if name in est.__dict__}
    history = getattr(est, "history_", None)
    if history is not None:
        fitted["history_"] = to_json(
            {"train_loss": history.train_loss, "val_loss": history.val_loss, "val_score": history.val_score,
             "best_epoch": history.best_epoch, "epoch_seconds": history.epoch_seconds}, f"{where}.history_",
        )
    fitted["_fitted_params"] = params_to_json(est.__dict__.get("_fitted_params") or {}, f"{where}._fitted_params")
    document = {"estimator": type(est).__name__, "params": params_to_json(est.get_params(deep=False), where),
                "fitted": fitted}
    minirocket = getattr(est, "minirocket_", None)
    if minirocket is not None:
        settings, arrays = minirocket.state()
        fitted["minirocket"] = to_json(settings, f"{where}.minirocket_")
        tensors.update({f"{prefix}minirocket.{name}": torch.as_tensor(array) for name, array in arrays.items()})
    if getattr(est, "estimators_", None):
        document["members"] = [
            _document(member, f"{prefix}estimators.{i}.", tensors) for i, member in enumerate(est.estimators_)
        ]
        return document
    standardizer = est.standardizer_
    fitted["scaling"] = standardizer.scaling
    tensors[f"{prefix}standardizer.mean"] = torch.as_tensor(standardizer.mean_, dtype=torch.float64)
    tensors[f"{prefix}standardizer.std"] = torch.as_tensor(standardizer.std_, dtype=torch.float64)
    fitted["module_training"] = bool(est.module_.training)
    for name, tensor in est.module_.state_dict().items():
        tensors[f"{prefix}module.{name}"] = tensor
    return document


def save_estimator(est, path):
    """Write the fitted estimator `est` to the model file `path` (atomically); returns the path."""
    est._check_is_fitted()
    tensors: dict = {}
    document = _document(est, "", tensors)
    return write_model_file(path, document, tensors)


def _checked_params(cls, raw, where: str) -> dict:
    if not isinstance(raw, dict):
        raise ModelFileError(f"{where}: its parameters are not a JSON object")
    params = from_json(raw, where)
    known = set(cls().get_params(deep=False))
    unknown = sorted(set(params) - known)
    if unknown:
        raise ModelFileError(f"{where}: parameters {unknown} are not parameters of {cls.__name__}")
    return params


def _cpu_if_no_cuda(params: dict, overrides: dict, where: str) -> None:
    device = params.get("device")
    if "device" in overrides or not isinstance(device, str) or device in ("auto", "cpu"):
        return
    if torch.device(device).type == "cuda" and not torch.cuda.is_available():
        warnings.warn(
            f"{where} was saved with device={device!r}; CUDA is not available here, so it is loaded with "
            "device='cpu' (pass device=... to load to choose)", UserWarning, stacklevel=4,
        )
        params["device"] = "cpu"


def _is_int(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _is_real(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


def _check_fitted_state(est, members: bool, where: str) -> None:
    """ModelFileError naming the fitted state of a model file that has the wrong type or shape, or that
    contradicts the rest of the file. The weights are checked against the architecture by
    load_state_dict, but nothing else checks what predict reads beside them (the labels, the head's
    width, the target units): a file edited or damaged there would load, then answer wrongly or fail
    at predict in a way that blames the data. members: a seed ensemble (its members hold the network)."""
    fitted = est.__dict__
    classification = est._task == "classification"
    required = ("classes_", "n_classes_") if classification else ()
    if not members:
        required += ("n_outputs_", "n_channels_", "max_len_") + (() if classification else ("y_mean_", "y_std_"))
    missing = [name for name in required if name not in fitted]
    if missing:
        raise ModelFileError(f"{where} is corrupt: its fitted state lacks {', '.join(missing)}")
    for name in ("n_classes_", "n_outputs_", "n_channels_", "max_len_"):
        if name in fitted and not (_is_int(fitted[name]) and fitted[name] > 0):
            raise ModelFileError(f"{where} is corrupt: its {name} must be a positive integer, got {fitted[name]!r}")
    if "metadata_" in fitted and not isinstance(fitted["metadata_"], dict):
        raise ModelFileError(f"{where} is corrupt: its metadata_ must be a JSON object, got {fitted['metadata_']!r}")
    seen = fitted.get("metadata_", {}).get("n_channels")  # what aeon checks X against at predict
    if seen is not None and "n_channels_" in fitted and seen != fitted["n_channels_"]:
        raise ModelFileError(
            f"{where} is inconsistent: metadata_ records {seen!r} channel(s), but its network takes "
            f"{fitted['n_channels_']} (n_channels_)"
        )
    if classification:
        classes = fitted["classes_"]
        if not (isinstance(classes, np.ndarray) and classes.ndim == 1 and len(classes)):
            raise ModelFileError(
                f"{where} is corrupt: its classes_ must be a non-empty 1-D array of labels, got {classes!r}"
            )
        labels = classes.tolist()
        if not all(v is None or isinstance(v, (str, bool, numbers.Number)) for v in labels):
            raise ModelFileError(
                f"{where} is corrupt: its classes_ must hold strings, numbers, booleans or None, got {labels!r}"
            )
        if len(set(labels)) != len(labels):
            raise ModelFileError(f"{where} is corrupt: its classes_ {labels!r} name a label twice")
        if fitted["n_classes_"] != len(classes):
            raise ModelFileError(
                f"{where} is inconsistent: n_classes_={fitted['n_classes_']} but classes_ lists {len(classes)} "
                f"labels {labels!r}"
            )
    if "n_outputs_" in fitted:
        # The head's width is pinned to the weights by load_state_dict; it must also fit the task.
        expected = len(fitted["classes_"]) if classification else 1
        if fitted["n_outputs_"] != expected:
            what = f"classes_ lists {expected} labels" if classification else "a regressor predicts one value"
            raise ModelFileError(
                f"{where} is inconsistent: its network has {fitted['n_outputs_']} output(s) (n_outputs_), "
                f"but {what}"
            )
    for name in ("y_mean_", "y_std_"):
        if name in fitted and not (_is_real(fitted[name]) and (name == "y_mean_" or fitted[name] > 0)):
            rule = "a positive finite number" if name == "y_std_" else "a finite number"
            raise ModelFileError(f"{where} is corrupt: its target standardisation {name} must be {rule}, "
                                 f"got {fitted[name]!r}")


def _rebuild(cls, document: dict, tensors: dict, prefix: str, overrides: dict, where: str):
    params = _checked_params(cls, document.get("params"), where)
    _cpu_if_no_cuda(params, overrides, where)
    params.update(overrides)
    est = cls(**params)
    fitted = from_json(document.get("fitted"), where)
    if not isinstance(fitted, dict):
        raise ModelFileError(f"{where}: its fitted metadata is not a JSON object")
    for name in FITTED:
        if name in fitted:
            setattr(est, name, fitted[name])
    members = document.get("members")
    _check_fitted_state(est, bool(members), where)
    if "classes_" in fitted:
        est._class_dictionary = {c: i for i, c in enumerate(est.classes_)}
    if "history_" in fitted:
        est.history_ = History(**fitted["history_"])
    fitted_params = fitted.get("_fitted_params") or {}
    est._fitted_params = {k: v for k, v in _checked_params(cls, fitted_params, where).items()}
    if members:
        est.estimators_ = [
            _rebuild(cls, member, tensors, f"{prefix}estimators.{i}.", overrides, f"{where} member {i}")
            for i, member in enumerate(members)
        ]
        for i, member in enumerate(est.estimators_):
            # The ensemble averages its members' probabilities column by column, named by its own classes_.
            if est._task == "classification" and not np.array_equal(member.classes_, est.classes_):
                raise ModelFileError(
                    f"{where} is inconsistent: member {i} has classes_ {member.classes_.tolist()!r}, the "
                    f"ensemble {est.classes_.tolist()!r}"
                )
    else:
        est.estimators_ = None
        standardizer = ChannelStandardizer(fitted["scaling"])
        standardizer.mean_ = tensors[f"{prefix}standardizer.mean"].numpy()
        standardizer.std_ = tensors[f"{prefix}standardizer.std"].numpy()
        check_standardization(where, standardizer.mean_, standardizer.std_, est.n_channels_)
        est.standardizer_ = standardizer
        builder = copy.copy(est)
        builder.__dict__.update(est._fitted_params)
        with torch.random.fork_rng(devices=[]):  # building initialises weights; leave the user's RNG alone
            module = builder._build_model(est.n_outputs_)
        module.load_state_dict(prefixed(tensors, f"{prefix}module."), strict=True)
        est.module_ = module.train(bool(fitted.get("module_training", False)))
    est.minirocket_ = None
    if "minirocket" in fitted:
        _restore_minirocket(est, fitted, tensors, prefix, where)
    est.is_fitted = True
    return est


def _restore_minirocket(est, fitted: dict, tensors: dict, prefix: str, where: str) -> None:
    """Set a blended estimator's MiniRocket and the network's share of the answer from its model file."""
    try:
        arrays = {k: t.numpy() for k, t in prefixed(tensors, f"{prefix}minirocket.").items()}
        if est._task == "regression":
            est.minirocket_ = RidgeMiniRocket.from_state(fitted["minirocket"], arrays)
        else:
            est.minirocket_ = CalibratedMiniRocket.from_state(fitted["minirocket"], arrays, est.n_classes_)
        weight = fitted.get("network_weight_")
        if isinstance(weight, bool) or not (isinstance(weight, (int, float)) and 0.0 <= weight <= 1.0):
            raise ValueError(f"network_weight_ must be a number in [0, 1], got {weight!r}")
    except (KeyError, TypeError, ValueError) as exc:
        raise ModelFileError(f"{where} is corrupt: its MiniRocket ({exc})") from exc


def load(path, **params):
    """The fitted tsrep estimator or encoder in the model file `path` (written by its ``save``);
    `params` override saved parameters (e.g. device="cpu"). No pickle: nothing in the file runs."""
    return load_estimator(path, **params)


def load_estimator(path, expected=None, **params):
    """The fitted estimator in the model file `path`; `params` override its saved parameters (e.g.
    device). expected: the class asked for (its subclasses pass); any other is a ModelFileError."""
    document, tensors = read_model_file(path)
    name = document.get("estimator")
    cls = _model_class(name)
    if cls is None:
        known = sorted([*tsrep.estimators.__all__, "TSRepEncoder"])
        raise ModelFileError(f"{str(path)!r} holds an estimator {name!r}, which is not a tsrep estimator ({known})")
    if expected is not None and not issubclass(cls, expected):
        raise ModelFileError(
            f"{str(path)!r} holds a {name}, not a {expected.__name__}: load it with {name}.load or tsrep.load"
        )
    if name == "TSRepEncoder":
        return cls.load(path, **params)
    where = f"model file {str(path)!r}"
    try:
        if hasattr(cls, "_from_model_file"):  # the text and image estimators (tsrep.estimators._tensor_base)
            return cls._from_model_file(document, tensors, where, params)
        return _rebuild(cls, document, tensors, "", params, where)
    except ModelFileError:
        raise
    except (KeyError, TypeError, ValueError, RuntimeError, AttributeError) as exc:
        raise ModelFileError(f"{where} is inconsistent (its configuration does not fit its weights): {exc}") from exc
