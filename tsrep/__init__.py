"""tsrep: time-series representation learning with the EA-DC-Transformer."""

from tsrep.estimators import EADCTransformerClassifier, EADCTransformerRegressor

__version__ = "0.1.0"

__all__ = ["EADCTransformerClassifier", "EADCTransformerRegressor", "__version__"]
