"""tsrep: time-series representation learning with the EA-DC-Transformer."""

from tsrep.estimators import EADCTransformerClassifier, EADCTransformerRegressor
from tsrep.representation import TSRepEncoder

__version__ = "0.1.0"


def load(path, **params):
    """The fitted tsrep estimator or encoder in the model file `path` (written by its ``save``);
    `params` override saved parameters (e.g. device="cpu"). No pickle: nothing in the file runs."""
    from tsrep.estimators._saving import load_estimator

    return load_estimator(path, **params)


__all__ = ["EADCTransformerClassifier", "EADCTransformerRegressor", "TSRepEncoder", "load", "__version__"]
