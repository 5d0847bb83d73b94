"""sktime adapters for the EA-DC-Transformer estimators (optional: ``pip install tsrep[sktime]``).

``tsrep.sktime.EADCTransformerClassifier`` and ``tsrep.sktime.EADCTransformerRegressor`` are sktime
estimators, usable in sktime pipelines, tuning and benchmarking. They take the same parameters as
``tsrep.EADCTransformerClassifier`` / ``tsrep.EADCTransformerRegressor`` (the aeon estimators) and
fit one of those as ``estimator_``; every sktime Panel mtype is accepted (equal-length data reaches
the network as a 3-D array, unequal-length data as a list of (n_channels, n_timepoints_i) arrays).

Examples
--------
>>> from sktime.transformations.exponent import ExponentTransformer
>>> from tsrep.sktime import EADCTransformerClassifier
>>> pipe = ExponentTransformer() * EADCTransformerClassifier(max_epochs=20)  # doctest: +SKIP
"""

from __future__ import annotations

import inspect

try:
    from sktime.classification.base import BaseClassifier as _SktimeBaseClassifier
    from sktime.regression.base import BaseRegressor as _SktimeBaseRegressor
except ImportError as err:  # pragma: no cover - exercised only without sktime
    raise ImportError(
        f"tsrep.sktime needs sktime, which could not be imported ({err}); install it with: "
        "pip install tsrep[sktime]"
    ) from err

import numpy as np

from tsrep.estimators import EADCTransformerClassifier as _AeonClassifier
from tsrep.estimators import EADCTransformerRegressor as _AeonRegressor
from tsrep.estimators._parameters import fill_doc, stored_parameters_init

__all__ = ["EADCTransformerClassifier", "EADCTransformerRegressor"]

_SKTIME_TAGS = {
    "authors": ["tsrep"],
    "maintainers": ["tsrep"],
    "python_dependencies": "torch",
    # numpy3D stays numpy3D (always equal length); every other Panel mtype, equal or unequal
    # length, is converted to the first entry, df-list, whose frames become (n_channels, n_timepoints_i).
    "X_inner_mtype": ["df-list", "numpy3D"],
    "y_inner_mtype": "numpy1D",
    "capability:multivariate": True,
    "capability:unequal_length": True,
    "capability:missing_values": True,  # NaN are interpolated along time inside the aeon estimator
    "capability:categorical_in_X": False,
    "capability:multioutput": False,
    "capability:random_state": True,
    "property:randomness": "derandomized",
}


def _to_aeon(X):
    """numpy3D is passed through; df-list (rows: time, columns: variables) -> list of (n_channels, n_timepoints_i)."""
    if isinstance(X, np.ndarray):
        return X
    return [np.asarray(frame.to_numpy(dtype=np.float64).T) for frame in X]


class _AeonAdapter:
    """Shared logic: mirror the aeon estimator's constructor, fit it in ``_fit``, delegate predictions.

    The ``__init__`` of a subclass naming ``_aeon_class`` is generated from that class's signature, so
    the adapters always take exactly the aeon estimator's parameters (and ``get_params`` sees them all).
    """

    _aeon_class: type  # whose signature the adapter takes and which it fits

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "_aeon_class" not in cls.__dict__:
            return
        # Stored untouched; the aeon estimator checks them in fit.
        cls.__init__ = stored_parameters_init(cls, inspect.signature(cls._aeon_class.__init__))

    def _make_estimator(self):
        return self._aeon_class(**self.get_params(deep=False))

    def _fit(self, X, y):
        self.estimator_ = self._make_estimator().fit(_to_aeon(X), y)
        self.n_parameters_ = self.estimator_.n_parameters_
        return self

    def _predict(self, X) -> np.ndarray:
        return self.estimator_.predict(_to_aeon(X))

    @classmethod
    def get_test_params(cls, parameter_set="default"):
        """Small, fast parameter sets (the aeon estimator's test configuration and a variant of it)."""
        tiny = cls._aeon_class._get_test_params(parameter_set)
        variant = {**tiny, "pooling": "max", "norm": "batch", "alpha": 0.0, "beta": 0.0, "validation_fraction": 0.0}
        return [tiny, variant]


class EADCTransformerClassifier(_AeonAdapter, _SktimeBaseClassifier):
    __doc__ = fill_doc("""sktime adapter of tsrep.EADCTransformerClassifier: EA-DC-Transformer time series classifier.

    Fits a tsrep.EADCTransformerClassifier with the same parameters as ``estimator_``: those of
    :class:`tsrep.EADCTransformerClassifier`, with the same names, defaults and meaning (this class's
    ``__init__`` is generated from that class's signature). Takes any sktime Panel mtype: multivariate,
    unequal length (padding masks) and missing values (interpolated). Parameters are stored untouched in
    __init__ and validated in fit (scikit-learn contract).

    {parameters}

    Attributes
    ----------
    {attributes: classes_ n_classes_ n_parameters_ estimator_}

    See Also
    --------
    tsrep.EADCTransformerClassifier : The aeon estimator this adapter fits.
    EADCTransformerRegressor : The sktime adapter of the regressor.

    Examples
    --------
    >>> from sktime.datasets import load_unit_test
    >>> from tsrep.sktime import EADCTransformerClassifier
    >>> X_train, y_train = load_unit_test(split="train", return_X_y=True)
    >>> X_test, y_test = load_unit_test(split="test", return_X_y=True)
    >>> clf = EADCTransformerClassifier(d_model=8, n_blocks=1, n_heads=2, max_epochs=5, min_steps=0, random_state=0)
    >>> clf = clf.fit(X_train, y_train)
    >>> y_pred = clf.predict(X_test)
    >>> y_proba = clf.predict_proba(X_test)  # columns in the order of clf.classes_
    """, _AeonClassifier)

    _aeon_class = _AeonClassifier
    _tags = {**_SKTIME_TAGS, "capability:predict_proba": True}

    def _predict_proba(self, X) -> np.ndarray:
        return self.estimator_.predict_proba(_to_aeon(X))


class EADCTransformerRegressor(_AeonAdapter, _SktimeBaseRegressor):
    __doc__ = fill_doc("""sktime adapter of tsrep.EADCTransformerRegressor: EA-DC-Transformer time series regressor.

    Fits a tsrep.EADCTransformerRegressor with the same parameters as ``estimator_`` (targets are
    standardised inside it): those of :class:`tsrep.EADCTransformerRegressor`, with the same names, defaults
    and meaning. Input formats as tsrep.sktime.EADCTransformerClassifier. Parameters are stored untouched in
    __init__ and validated in fit (scikit-learn contract).

    {parameters}

    Attributes
    ----------
    {attributes: n_parameters_ estimator_}

    See Also
    --------
    tsrep.EADCTransformerRegressor : The aeon estimator this adapter fits.
    EADCTransformerClassifier : The sktime adapter of the classifier.

    Examples
    --------
    >>> import numpy as np
    >>> from tsrep.sktime import EADCTransformerRegressor
    >>> X = np.random.default_rng(0).normal(size=(20, 2, 30))
    >>> y = X.mean(axis=(1, 2))
    >>> reg = EADCTransformerRegressor(d_model=8, n_blocks=1, n_heads=2, max_epochs=5, min_steps=0, random_state=0)
    >>> reg = reg.fit(X, y)
    >>> y_pred = reg.predict(X)
    """, _AeonRegressor)

    _aeon_class = _AeonRegressor
    _tags = dict(_SKTIME_TAGS)
