"""Pickle-free saving of fitted tsrep models: weights as safetensors, everything else as JSON.

A model file is ONE safetensors file (https://github.com/huggingface/safetensors):

- its tensors: the network's weights (``module.<name>``; ``estimators.<i>.module.<name>`` for the
  members of a seed ensemble; ``encoder.<name>`` for a TSRepEncoder) and the per-channel
  standardisation (``standardizer.mean``, ``standardizer.std``, float64), all on the CPU;
- its header metadata (string to string, part of the safetensors format): ``"format"`` =
  ``"tsrep-model"``, ``"format_version"`` and ``"tsrep"``, a JSON document with the estimator's class
  name, its parameters, its fitted metadata (classes, target standardisation, token front end,
  lengths, histories) and the versions of tsrep, torch, numpy and Python that wrote it. Read it with
  any safetensors reader: ``safetensors.safe_open(path, "pt").metadata()["tsrep"]``.

Nothing in a model file is executable: safetensors holds raw tensor bytes, the JSON is parsed with
``json.loads``, and the class to rebuild is looked up by name among tsrep's own estimators (any
other name is refused). Values JSON has no type for are written with a tag (``{"$tuple": [...]}``,
``{"$dict": [[key, value], ...]}`` for dicts with non-string keys, ``{"$array": ...}`` for numpy
arrays of labels, ``{"$float": "nan"}``); a value of any other type (class labels that are tuples or
objects, a RandomState, an optimiser object) is refused by ``save`` with a ValueError naming it,
except ``callbacks`` and a RandomState ``random_state``, which are not saved (a loaded model has
``callbacks=None``).

One file, written atomically (tsrep._io.atomic_write): a failed or interrupted save leaves the old
file as it was, and several processes saving one path leave one complete file. Why not a directory
with ``config.json`` beside the weights (as Hugging Face does): two files cannot be replaced together
atomically, so a crash between them would pair new weights with an old configuration.
"""

from __future__ import annotations

import json
import math
import numbers
import os
import platform
from pathlib import Path

import numpy as np
import torch

from tsrep import __version__
from tsrep._io import atomic_write
from tsrep.exceptions import ModelFileError

FORMAT = "tsrep-model"
FORMAT_VERSION = 1
_TAGS = ("$tuple", "$dict", "$array", "$float")


def _safetensors():
    try:
        import safetensors.torch
    except ImportError as exc:  # pragma: no cover - a core dependency
        raise ImportError("saving and loading tsrep models needs the safetensors package: pip install safetensors") from exc
    return safetensors


# ----------------------------------------------------------------------------- JSON values
def to_json(value, where: str):
    """A JSON value standing for `value` exactly (see the module doc), or ValueError naming `where`."""
    if isinstance(value, np.generic) and not isinstance(value, np.object_):
        value = value.item()
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else {"$float": repr(value)}
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, list):
        return [to_json(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, tuple):
        return {"$tuple": [to_json(v, f"{where}[{i}]") for i, v in enumerate(value)]}
    if isinstance(value, dict):
        if all(isinstance(k, str) for k in value) and not any(k in _TAGS for k in value):
            return {k: to_json(v, f"{where}[{k!r}]") for k, v in value.items()}
        return {"$dict": [[to_json(k, f"{where} key"), to_json(v, f"{where}[{k!r}]")] for k, v in value.items()]}
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "biuf":
            values = [to_json(v, where) for v in value.reshape(-1).tolist()]
        elif value.dtype.kind == "U":
            values = value.reshape(-1).tolist()
        elif value.dtype == object:
            values = []
            for v in value.reshape(-1):
                if not (v is None or isinstance(v, (str, bool, numbers.Integral, float, np.generic))):
                    raise ValueError(
                        f"{where} holds {v!r} of type {type(v).__name__}, which a tsrep model file cannot store "
                        "faithfully (labels must be strings, numbers, booleans or None); use such labels to save"
                    )
                values.append(to_json(v, where))
        else:
            raise ValueError(f"{where} is an array of dtype {value.dtype}, which a tsrep model file cannot store")
        return {"$array": {"dtype": value.dtype.str if value.dtype != object else "object",
                           "shape": list(value.shape), "values": values}}
    raise ValueError(
        f"{where} is a {type(value).__module__}.{type(value).__qualname__}, which a tsrep model file cannot store "
        "(JSON values only, no pickle)"
    )


def from_json(value, where: str = "value"):
    """The inverse of :func:`to_json`; anything malformed is a ModelFileError."""
    if isinstance(value, list):
        return [from_json(v, where) for v in value]
    if not isinstance(value, dict):
        return value
    tags = [k for k in value if k in _TAGS]
    if not tags:
        return {k: from_json(v, where) for k, v in value.items()}
    try:
        if len(value) != 1:
            raise TypeError("a tagged value has one key")
        tag, body = tags[0], value[tags[0]]
        if tag == "$tuple":
            return tuple(from_json(v, where) for v in body)
        if tag == "$dict":
            return {_hashable(from_json(k, where)): from_json(v, where) for k, v in body}
        if tag == "$float":
            if body not in ("nan", "inf", "-inf"):
                raise ValueError(f"unknown float {body!r}")
            return float(body)
        dtype, shape, values = body["dtype"], body["shape"], body["values"]
        if dtype == "object":
            array = np.empty(len(values), dtype=object)
            array[:] = [from_json(v, where) for v in values]
        else:
            np_dtype = np.dtype(dtype)
            if np_dtype.kind not in "biufU":
                raise ValueError(f"dtype {dtype!r} is not allowed")
            array = np.array([from_json(v, where) for v in values], dtype=np_dtype)
        return array.reshape([int(n) for n in shape])
    except (TypeError, ValueError, KeyError) as exc:
        raise ModelFileError(f"{where}: malformed value {json.dumps(value)[:80]} ({exc})") from exc


def _hashable(key):
    return tuple(key) if isinstance(key, list) else key


# ----------------------------------------------------------------------------- the file
def _versions() -> dict:
    return {"tsrep": __version__, "torch": torch.__version__, "numpy": np.__version__,
            "python": platform.python_version(), "safetensors": _safetensors().__version__}


def write_model_file(path, document: dict, tensors: dict[str, torch.Tensor]) -> Path:
    """Write `tensors` (name -> tensor) and the JSON `document` to the safetensors file `path`, atomically."""
    st = _safetensors()
    document = {**document, "versions": _versions()}
    cpu = {name: t.detach().to("cpu").contiguous().clone() for name, t in tensors.items()}
    metadata = {"format": FORMAT, "format_version": str(FORMAT_VERSION),
                "tsrep": json.dumps(document, sort_keys=True, allow_nan=False)}
    payload = st.torch.save(cpu, metadata=metadata)  # bytes; serialised before the file is touched
    return atomic_write(path, lambda f: f.write(payload))


def check_regular_file(path, noun: str, kind: str, missing_ok: bool = False) -> Path:
    """`path` as a Path if it is a regular file; otherwise a FileNotFoundError when nothing is there
    (none with missing_ok), or a ModelFileError saying what is there instead. A directory or a
    device (/dev/zero: endless bytes) must not be read, nor called missing when it exists.

    noun: what the caller calls the file ("model file"); kind: what it should be ("a tsrep model file")."""
    path = Path(path)
    if path.is_file():
        return path
    if path.is_dir():
        raise ModelFileError(f"{str(path)!r} is a directory, not {kind}")
    if path.exists():
        raise ModelFileError(f"{str(path)!r} is not a regular file (a device, pipe or socket), so not {kind}")
    if not missing_ok:
        raise FileNotFoundError(f"{noun} {str(path)!r} does not exist")
    return path


def check_standardization(where: str, mean, std, n_channels, network: str = "model") -> None:
    """ModelFileError unless the per-channel standardisation of a model file holds one finite mean
    and one positive finite std per channel (a zero std divides the user's data by zero, a NaN turns
    every input into NaN: either would be blamed on the data at predict, not on the file).
    network: what the standardisation feeds, as the message names it ("model", "encoder")."""
    for name, values in (("mean", mean), ("std", std)):
        values = np.asarray(values)
        if values.shape != (n_channels,):
            raise ModelFileError(
                f"{where} is corrupt: its standardisation {name} has shape {values.shape}, but the "
                f"{network} takes {n_channels} channel(s)"
            )
        if values.dtype.kind not in "iuf" or not np.isfinite(values).all() or (name == "std" and (values <= 0).any()):
            rule = "positive finite numbers" if name == "std" else "finite numbers"
            raise ModelFileError(
                f"{where} is corrupt: its standardisation {name} must hold {rule}, got {values.tolist()}"
            )


def read_model_file(path) -> tuple[dict, dict[str, torch.Tensor]]:
    """(JSON document, CPU tensors) of a tsrep model file, or a ModelFileError / FileNotFoundError."""
    path = check_regular_file(path, "model file", "a tsrep model file (a .safetensors file written by save)")
    raw = path.read_bytes()
    st = _safetensors()
    try:
        tensors = st.torch.load(raw)  # raw tensor bytes: nothing in the file can run
        # The metadata from the same bytes (not the file again, which a concurrent save may have replaced).
        n = int.from_bytes(raw[:8], "little")
        metadata = json.loads(raw[8 : 8 + n]).get("__metadata__") or {}
    except Exception as exc:  # SafetensorError, ValueError: not safetensors, truncated, corrupt
        raise ModelFileError(
            f"{str(path)!r} is not a readable tsrep model file (not safetensors, truncated or corrupt: {exc})"
        ) from exc
    if metadata.get("format") != FORMAT:
        raise ModelFileError(
            f"{str(path)!r} is a safetensors file but not a tsrep model (no format {FORMAT!r} in its metadata)"
        )
    version = metadata.get("format_version", "")
    if version != str(FORMAT_VERSION):
        newer = version.isdigit() and int(version) > FORMAT_VERSION
        raise ModelFileError(
            f"{str(path)!r} was written in tsrep model format version {version!r}; this tsrep reads version "
            f"{FORMAT_VERSION} only" + (": upgrade tsrep to load it" if newer else "")
        )
    try:
        document = json.loads(metadata["tsrep"])
        if not isinstance(document, dict):
            raise TypeError("the document is not a JSON object")
    except (KeyError, TypeError, ValueError) as exc:
        raise ModelFileError(f"{str(path)!r}: its tsrep metadata is missing or not valid JSON ({exc})") from exc
    return document, tensors


def prefixed(tensors: dict, prefix: str) -> dict:
    """The tensors whose names start with `prefix`, with it removed."""
    return {name[len(prefix):]: t for name, t in tensors.items() if name.startswith(prefix)}
