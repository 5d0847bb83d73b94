"""scikit-learn/aeon estimators."""

from tsrep.estimators.classifier import EADCTransformerClassifier
from tsrep.estimators.regressor import EADCTransformerRegressor

__all__ = ["EADCTransformerClassifier", "EADCTransformerRegressor"]
