"""Model configuration files (YAML, in ``configs/``): one estimator and its parameters.

Format::

    model: EADCTransformerClassifier      # a class of tsrep.estimators (or "module:Class")
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

``load_config`` reads ``model`` and ``params`` and ignores the other keys. ``save_config`` writes
every constructor parameter of the estimator, so the file alone rebuilds it.
"""

from __future__ import annotations

import datetime
import difflib
import importlib
import inspect
import os
from collections.abc import Mapping
from pathlib import Path

import yaml


class ConfigError(ValueError):
    """A configuration file that cannot be turned into an estimator."""


def _registry() -> dict:
    import tsrep.estimators as estimators

    return {name: getattr(estimators, name) for name in estimators.__all__}


def resolve_model(name: str):
    """The estimator class for a config's ``model`` entry."""
    if not isinstance(name, str) or not name:
        raise ConfigError(f"'model' must be the name of an estimator class, got {name!r}")
    registry = _registry()
    if name in registry:
        return registry[name]
    if ":" in name:
        module, _, attr = name.partition(":")
        try:
            return getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as e:
            raise ConfigError(f"cannot import model {name!r}: {e}") from e
    close = difflib.get_close_matches(name, list(registry), n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise ConfigError(f"unknown model {name!r}{hint}; known: {', '.join(registry)}, or 'module:Class'")


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
    params = estimator.get_params(deep=False)
    cls = type(estimator)
    name = cls.__name__ if cls.__name__ in _registry() else f"{cls.__module__}:{cls.__name__}"
    out = {"model": name, "params": {k: _yaml_value(k, v) for k, v in params.items()}}
    for key, value in extra.items():
        if value is not None:
            out[key] = _yaml_value(key, value)
    return out


def save_config(estimator, path, **extra) -> Path:
    """Write ``estimator``'s class and constructor parameters (and ``extra`` top-level keys) as YAML."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    header = f"# tsrep model configuration, written {datetime.datetime.now().isoformat(timespec='seconds')}\n"
    header += "# load with: tsrep.tuning.load_config(path) -> estimator\n"
    text = header + yaml.safe_dump(config_dict(estimator, **extra), sort_keys=False)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)  # atomic: workers of one study may write the same file
    return path


def read_config(path) -> dict:
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file {str(path)!r} does not exist")
    try:
        data = yaml.safe_load(path.read_text())
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
    cls = resolve_model(data["model"])
    params = {**(data.get("params") or {}), **overrides}
    valid = [p for p in inspect.signature(cls.__init__).parameters if p != "self"]
    unknown = [k for k in params if k not in valid]
    if unknown:
        hints = [
            f"{k!r}" + (f" (did you mean {m[0]!r}?)" if (m := difflib.get_close_matches(str(k), valid, n=1)) else "")
            for k in unknown
        ]
        raise ConfigError(f"config {str(path)!r}: unknown parameter(s) of {cls.__name__}: {', '.join(hints)}")
    return cls(**params)
