"""tsrep: time-series representation learning with the EA-DC-Transformer."""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

# The public classes are imported on first use (PEP 562), as scikit-learn and aeon do: `import tsrep` (and so every
# command's --help) does not pay for torch, aeon and scikit-learn until an estimator is asked for.
_LAZY = {
    "EADCTransformerClassifier": "tsrep.estimators",
    "EADCTransformerRegressor": "tsrep.estimators",
    "TSRepEncoder": "tsrep.representation",
}


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value  # later look-ups are plain attribute reads
        return value
    raise AttributeError(f"module 'tsrep' has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), *_LAZY])


def load(path, **params):
    """The fitted tsrep estimator or encoder in the model file `path` (written by its ``save``);
    `params` override saved parameters (e.g. device="cpu"). No pickle: nothing in the file runs."""
    from tsrep.estimators._saving import load_estimator

    return load_estimator(path, **params)


__all__ = ["EADCTransformerClassifier", "EADCTransformerRegressor", "TSRepEncoder", "load", "__version__"]
