"""tsrep: time-series representation learning with the EA-DC-Transformer."""

from __future__ import annotations

from tsrep._lazy import lazy_attributes

__version__ = "0.1.0"

# The public classes are imported on first use (PEP 562), as scikit-learn and aeon do: `import tsrep` (and so every
# command's --help) does not pay for torch, aeon and scikit-learn until an estimator is asked for.
__getattr__, __dir__ = lazy_attributes(__name__, {
    "EADCTransformerClassifier": "tsrep.estimators",
    "EADCTransformerRegressor": "tsrep.estimators",
    "EATextClassifier": "tsrep.estimators",
    "EAViTClassifier": "tsrep.estimators",
    "TSRepEncoder": "tsrep.representation",
    "load": "tsrep.estimators._saving",
})


__all__ = ["EADCTransformerClassifier", "EADCTransformerRegressor", "EATextClassifier", "EAViTClassifier",
           "TSRepEncoder", "load", "__version__"]
