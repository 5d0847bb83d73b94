"""Model configuration files (YAML, in ``configs/``): one estimator and its parameters.

Format::

    model: EADCTransformerClassifier      # a tsrep estimator class, or a model name of tsrep.models
    task: classification                  # with a model name only: classification or regression
    params:                               # keyword arguments of its constructor
      alpha: 0.3
      beta: 0.7
      p: 0.25
      d_model: 64
      n_blocks: 3
      ...
    dataset: JapaneseVowels               # optional, informational
    tuning:                               # optional, informational (written by tsrep-tune)
      study_name: ...
      best_value: 0.98
      ...

``load_config`` reads ``model``, ``task`` and ``params`` and ignores the other keys. ``save_config``
writes every constructor parameter of the estimator, so the file alone rebuilds it.

A configuration file is data, never code: it is parsed with ``yaml.safe_load`` and ``model`` is
looked up in tsrep's own lists (:data:`MODEL_CLASSES` and the model names of :mod:`tsrep.models`);
nothing is imported by name, so a shared file cannot make ``load_config`` run other code.
"""

from __future__ import annotations

import datetime
import difflib
import inspect
from collections.abc import Mapping
from pathlib import Path

import yaml

from tsrep._io import atomic_write
from tsrep.estimators import (
    BackboneClassifier,
    BackboneRegressor,
    EADCTransformerClassifier,
    EADCTransformerRegressor,
)
from tsrep.exceptions import ConfigError
from tsrep.models import TASKS, get_model, model_class, resolve_name
from tsrep.models import MODELS as MODEL_NAMES
from tsrep.representation import TSRepEncoder

#: The allow-list: the estimator classes a configuration's ``model`` may name, by class name.
MODEL_CLASSES: dict[str, type] = {
    cls.__name__: cls
    for cls in (
        EADCTransformerClassifier, EADCTransformerRegressor, BackboneClassifier, BackboneRegressor, TSRepEncoder
    )
}


def _accepted_names() -> str:
    return (f"the estimator classes {', '.join(MODEL_CLASSES)}, or a model name of tsrep.models "
            f"({', '.join(MODEL_NAMES)}) with 'task' set to {' or '.join(TASKS)}")


def _resolve(name, task) -> tuple[type, str | None]:
    """(estimator class, tsrep.models name or None) of a config's ``model`` and ``task``."""
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"'model' must be the name of a tsrep estimator, got {name!r}; accepted: {_accepted_names()}")
    if name in MODEL_CLASSES:
        return MODEL_CLASSES[name], None
    if ":" in name:
        raise ConfigError(
            f"model {name!r} is not a tsrep estimator: a configuration may name only tsrep's own "
            f"estimators by class or model name, never other code; accepted: {_accepted_names()}"
        )
    try:
        registry_name = resolve_name(name)
    except ValueError:
        close = difflib.get_close_matches(name, list(MODEL_CLASSES), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ConfigError(f"unknown model {name!r}{hint}; accepted: {_accepted_names()}") from None
    if task not in TASKS:
        raise ConfigError(
            f"model {name!r} is a model name of tsrep.models: the config needs 'task' set to "
            f"{' or '.join(TASKS)}, got {task!r}"
        )
    return model_class(registry_name, task), registry_name


def resolve_model(name: str, task: str | None = None) -> type:
    """The estimator class a config's ``model`` (and, for a model name, ``task``) names.

    Accepted: a class of :data:`MODEL_CLASSES`; a model name of :mod:`tsrep.models` (``"gru"``,
    ``"ea-dc-transformer"``, ...) with ``task`` "classification" or "regression". Anything else is a ConfigError
    listing the accepted names; nothing is ever imported by the name given.
    """
    return _resolve(name, task)[0]


def _yaml_value(name, value):
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_yaml_value(name, v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _yaml_value(f"{name}.{k}", v) for k, v in value.items()}
    if hasattr(value, "item") and callable(value.item):  # numpy scalar
        return value.item()
    raise ConfigError(
        f"parameter {name}={value!r} ({type(value).__name__}) cannot be written to a YAML config; "
        "use a name (e.g. optimizer='adam') instead of an object"
    )


def config_dict(estimator, **extra) -> dict:
    # callbacks follow a run (loggers, pruning); they are not configuration and are objects YAML cannot hold.
    params = {k: v for k, v in estimator.get_params(deep=False).items() if k != "callbacks"}
    cls = type(estimator)
    if MODEL_CLASSES.get(cls.__name__) is not cls:
        raise ConfigError(
            f"a {cls.__module__}.{cls.__qualname__} cannot be written to a config: load_config rebuilds only "
            f"tsrep's estimators ({', '.join(MODEL_CLASSES)})"
        )
    out = {"model": cls.__name__, "params": {k: _yaml_value(k, v) for k, v in params.items()}}
    for key, value in extra.items():
        if value is not None:
            out[key] = _yaml_value(key, value)
    return out


def save_config(estimator, path, **extra) -> Path:
    """Write ``estimator``'s class and constructor parameters (and ``extra`` top-level keys) as YAML."""
    header = f"# tsrep model configuration, written {datetime.datetime.now().isoformat(timespec='seconds')}\n"
    header += "# load with: tsrep.tuning.load_config(path) -> estimator\n"
    text = header + yaml.safe_dump(config_dict(estimator, **extra), sort_keys=False)
    # Atomic, through a temporary file of its own: workers of one study may write the same file.
    return atomic_write(path, lambda file: file.write(text.encode("utf-8")))


def read_config(path) -> dict:
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file {str(path)!r} does not exist")
    try:
        data = yaml.safe_load(path.read_text())  # plain data only: no YAML tags that build objects
    except yaml.YAMLError as e:
        raise ConfigError(f"config file {str(path)!r} is not valid YAML: {e}") from e
    if not isinstance(data, Mapping) or "model" not in data:
        raise ConfigError(f"config file {str(path)!r} must be a mapping with a 'model' key (and 'params')")
    params = data.get("params") or {}
    if not isinstance(params, Mapping):
        raise ConfigError(f"config file {str(path)!r}: 'params' must be a mapping, got {type(params).__name__}")
    return dict(data)


def load_config(path, **overrides):
    """The (unfitted) estimator a config file describes; ``overrides`` replace parameters (e.g. device)."""
    data = read_config(path)
    cls, registry_name = _resolve(data["model"], data.get("task"))
    params = {**(data.get("params") or {}), **overrides}
    valid = [p for p in inspect.signature(cls.__init__).parameters if p != "self"]
    unknown = [k for k in params if k not in valid]
    if unknown:
        hints = [
            f"{k!r}" + (f" (did you mean {m[0]!r}?)" if (m := difflib.get_close_matches(str(k), valid, n=1)) else "")
            for k in unknown
        ]
        raise ConfigError(f"config {str(path)!r}: unknown parameter(s) of {cls.__name__}: {', '.join(hints)}")
    if registry_name is None:
        return cls(**params)
    try:  # the model's defining parameters (backbone="gru", alpha=0, ...) come with its name
        return get_model(registry_name, data["task"], **params)
    except ValueError as e:
        raise ConfigError(f"config {str(path)!r}: {e}") from e
