"""tsrep: time-series representation learning with the EA-DC-Transformer."""

from tsrep.estimators import EADCTransformerClassifier, EADCTransformerRegressor
from tsrep.representation import TSRepEncoder

__version__ = "0.1.0"

__all__ = ["EADCTransformerClassifier", "EADCTransformerRegressor", "TSRepEncoder", "__version__"]
