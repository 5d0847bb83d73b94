"""Fingerprints of training data and settings, which key saved state (checkpoints, studies) to what made it.

A resumed pretraining checkpoint or a reused tuning study is only valid for the data and settings
that produced it; these helpers give a hash of the data and a JSON description of the settings, so
that a reuse with anything else is refused and the differing settings can be named.
"""

from __future__ import annotations

import hashlib
import json
import numbers
from collections.abc import Mapping

import numpy as np
import torch


def _update(digest, value) -> None:
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    elif hasattr(value, "to_numpy") and not isinstance(value, np.ndarray):  # pandas objects
        value = value.to_numpy()
    if isinstance(value, (list, tuple)):
        digest.update(f"list[{len(value)}];".encode())
        for item in value:
            _update(digest, item)
        return
    array = np.asarray(value)
    if array.dtype == object:  # ragged collections, nested pandas cells, mixed labels
        digest.update(f"object{array.shape};".encode())
        for item in array.reshape(-1):
            if isinstance(item, (np.ndarray, list, tuple, torch.Tensor)) or hasattr(item, "to_numpy"):
                _update(digest, item)
            else:
                digest.update(f"{type(item).__name__}:{item!r};".encode())
        return
    array = np.ascontiguousarray(array)
    digest.update(f"{array.dtype.str}{array.shape};".encode())
    digest.update(array.tobytes())


def data_fingerprint(*arrays) -> str:
    """``"sha256:<hex>"`` of the values, shapes, dtypes and order of `arrays`.

    Accepts numpy arrays, torch tensors, pandas objects, lists of arrays of unequal length and
    label arrays of any dtype; None counts as a value of its own.
    """
    digest = hashlib.sha256()
    for array in arrays:
        _update(digest, array)
    return "sha256:" + digest.hexdigest()


def describe_setting(value):
    """A JSON value standing for a parameter value: equal settings give equal descriptions.

    Classes and functions become their qualified names; other objects their type and repr, unless
    the repr holds a memory address (then the type only: the address differs in every process).
    """
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, Mapping):
        return {str(k): describe_setting(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple)):
        return [describe_setting(v) for v in value]
    if isinstance(value, np.ndarray):
        return describe_setting(value.tolist())
    if isinstance(value, type) or (callable(value) and hasattr(value, "__qualname__")):
        return f"{getattr(value, '__module__', '?')}.{value.__qualname__}"
    text = repr(value)
    name = f"{type(value).__module__}.{type(value).__qualname__}"
    return name if " at 0x" in text else f"{name}: {text}"


def describe_settings(settings: Mapping) -> dict:
    """:func:`describe_setting` of each value, normalised through JSON (tuples become lists), so
    that a description read back from a checkpoint or a database compares equal to a fresh one."""
    return json.loads(json.dumps({str(k): describe_setting(v) for k, v in settings.items()}, sort_keys=True))


def differing_settings(stored: Mapping, current: Mapping) -> list[str]:
    """``"name (stored X, now Y)"`` for every setting that differs, is new or has gone."""
    out = []
    for name in sorted(set(stored) | set(current)):
        old, new = stored.get(name, "<not set>"), current.get(name, "<not set>")
        if old != new:
            out.append(f"{name} (stored {old!r}, now {new!r})")
    return out
