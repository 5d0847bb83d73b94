"""scikit-learn/aeon estimators.

The classes load on first use (PEP 562): importing a helper module of this package (as tsrep.representation
does) does not import aeon's estimator bases with it.
"""

from __future__ import annotations

from tsrep._lazy import lazy_attributes

__getattr__, __dir__ = lazy_attributes(__name__, {
    "EADCTransformerClassifier": "tsrep.estimators.dc_transformer",
    "EADCTransformerRegressor": "tsrep.estimators.dc_transformer",
    "BackboneClassifier": "tsrep.estimators.baselines",
    "BackboneRegressor": "tsrep.estimators.baselines",
    "EATextClassifier": "tsrep.estimators.text",
    "EATextRegressor": "tsrep.estimators.text",
    "EAViTClassifier": "tsrep.estimators.vision",
    "EAViTRegressor": "tsrep.estimators.vision",
})


__all__ = ["EADCTransformerClassifier", "EADCTransformerRegressor", "BackboneClassifier", "BackboneRegressor",
           "EATextClassifier", "EATextRegressor", "EAViTClassifier", "EAViTRegressor"]
