"""scikit-learn/aeon estimators."""

from tsrep.estimators.classifier import EADCTransformerClassifier
from tsrep.estimators.regressor import EADCTransformerRegressor
from tsrep.estimators.backbone import BackboneClassifier, BackboneRegressor

__all__ = ["EADCTransformerClassifier", "EADCTransformerRegressor", "BackboneClassifier", "BackboneRegressor"]
