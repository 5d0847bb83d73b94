"""scikit-learn/aeon estimators.

The classes load on first use (PEP 562): importing a helper module of this package (as tsrep.representation
does) does not import aeon's estimator bases with it.
"""

from __future__ import annotations

from tsrep._lazy import lazy_attributes

__getattr__, __dir__ = lazy_attributes(__name__, {
    "EADCTransformerClassifier": "tsrep.estimators.classifier",
    "EADCTransformerRegressor": "tsrep.estimators.regressor",
    "BackboneClassifier": "tsrep.estimators.backbone",
    "BackboneRegressor": "tsrep.estimators.backbone",
    "EATextClassifier": "tsrep.estimators.text",
    "EATextRegressor": "tsrep.estimators.text",
    "EAViTClassifier": "tsrep.estimators.vision",
})


__all__ = ["EADCTransformerClassifier", "EADCTransformerRegressor", "BackboneClassifier", "BackboneRegressor",
           "EATextClassifier", "EATextRegressor", "EAViTClassifier"]
