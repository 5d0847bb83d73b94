"""scikit-learn/aeon estimators.

The classes load on first use (PEP 562): importing a helper module of this package (as tsrep.representation
does) does not import aeon's estimator bases with it.
"""

from __future__ import annotations

import importlib

_LAZY = {
    "EADCTransformerClassifier": "tsrep.estimators.classifier",
    "EADCTransformerRegressor": "tsrep.estimators.regressor",
    "BackboneClassifier": "tsrep.estimators.backbone",
    "BackboneRegressor": "tsrep.estimators.backbone",
}


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'tsrep.estimators' has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), *_LAZY])


__all__ = ["EADCTransformerClassifier", "EADCTransformerRegressor", "BackboneClassifier", "BackboneRegressor"]
