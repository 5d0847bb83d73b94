"""aeon's and scikit-learn's estimator checks, and the scikit-learn tools users combine us with."""

import pickle

import numpy as np
import pytest
from aeon.testing.estimator_checking import parametrize_with_checks as aeon_checks
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer
from sklearn.utils.estimator_checks import parametrize_with_checks as sklearn_checks

from tsrep import EADCTransformerClassifier, EADCTransformerRegressor

TINY = EADCTransformerClassifier._get_test_params()


@aeon_checks([EADCTransformerClassifier, EADCTransformerRegressor])
def test_aeon_estimator_checks(check):
    check()


def _sklearn_expected_failures(estimator):
    """Checks that assume tabular input or sklearn's own base class, each with the reason it does not apply.

    aeon reads a 2-D array as n_cases univariate series of n_timepoints steps; its base classes keep
    `is_fitted`, `metadata_` and `classes_` from __init__ and raise their own (clear) input errors.
    """
    reasons = {
        "check_no_attributes_set_in_init": "aeon's base classes set classes_, metadata_ and is_fitted in __init__",
        "check_dont_overwrite_parameters": "aeon's fit sets its public is_fitted flag",
        "check_complex_data": "aeon raises TypeError('must contain numeric values only'), sklearn wants ValueError",
        "check_fit2d_predict1d": "aeon raises TypeError('must be 2D or 3D but found 1'), sklearn wants ValueError",
        "check_fit1d": "aeon raises TypeError for 1-D X, sklearn wants ValueError",
        "check_dtype_object": "object arrays of strings are not time series; aeon refuses them with TypeError",
        "check_fit2d_1sample": "one case cannot be split into training and validation data",
        "check_estimators_nan_inf": "NaN in X is a supported missing value (capability:missing_values)",
        "check_n_features_in": "time series estimators record n_channels_ and metadata_, not n_features_in_",
        "check_n_features_in_after_fitting": "time series estimators record n_channels_ and metadata_",
        "check_requires_y_none": "aeon's message for y=None differs from sklearn's",
        "check_regressor_data_not_an_array": "lists of lists are read as unequal-length series",
        "check_classifier_data_not_an_array": "lists of lists are read as unequal-length series",
        "check_classifiers_train": "tabular toy data at 2 epochs is not a time-series accuracy test (see test_accuracy.py)",
        "check_regressors_train": "tabular toy data at 2 epochs is not a time-series accuracy test (see test_accuracy.py)",
        "check_classifiers_one_label": "aeon raises its own error for a single class",
        "check_classifiers_multilabel_representation_invariance": "multi-label targets are not supported",
        "check_classifiers_multilabel_output_format_predict": "multi-label targets are not supported",
        "check_classifiers_multilabel_output_format_predict_proba": "multi-label targets are not supported",
        "check_classifiers_multilabel_output_format_decision_function": "multi-label targets are not supported",
        "check_regressor_multioutput": "one target per case (Eq. 9)",
        "check_sample_weights_not_an_array": "aeon refuses X of sklearn's _NotAnArray type before weights are read",
        "check_sample_weight_equivalence_on_dense_data": (
            "weight 2 is not the same as a duplicated case under minibatch SGD (batches and shuffles differ)"
        ),
        "check_methods_sample_order_invariance": (
            "float32 on the CPU: a case batched with other neighbours can differ in the last bit (6e-8 seen; "
            "the check asks 1e-9); batch independence is tested to 1e-6 in test_estimators.py"
        ),
        "check_class_weight_classifiers": (
            "tabular toy data at 2 epochs; class_weight is tested on its loss in test_recipe.py"
        ),
    }
    return reasons


@sklearn_checks(
    [EADCTransformerClassifier(**TINY), EADCTransformerRegressor(**TINY)],
    expected_failed_checks=_sklearn_expected_failures,
)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


def _small_data(rng, n=24, c=2, t=16):
    X = rng.normal(size=(n, c, t))
    y = np.array(["a", "b"] * (n // 2))
    X[y == "b", :, : t // 2] += 1.5
    return X, y


def test_clone_keeps_parameters_untouched():
    est = EADCTransformerClassifier(p=0.5, alpha=0.3, optimizer="AdamW", optimizer_kwargs={"weight_decay": 0.1})
    params = est.get_params()
    assert clone(est).get_params() == params
    assert params["optimizer"] == "AdamW" and params["alpha"] == 0.3


def test_pipeline_and_grid_search():
    rng = np.random.default_rng(0)
    X, y = _small_data(rng)
    pipe = Pipeline([("scale", FunctionTransformer(lambda a: a * 2.0)), ("clf", EADCTransformerClassifier(**TINY))])
    search = GridSearchCV(pipe, {"clf__alpha": [0.0, 0.5]}, cv=2)
    search.fit(X, y)
    assert search.best_params_["clf__alpha"] in (0.0, 0.5)
    assert search.predict(X).shape == (len(X),)


@pytest.mark.parametrize("cls", [EADCTransformerClassifier, EADCTransformerRegressor])
def test_pickle_round_trips_predictions_exactly(cls):
    rng = np.random.default_rng(1)
    X, labels = _small_data(rng)
    y = labels if cls is EADCTransformerClassifier else (labels == "b").astype(float) + rng.normal(size=len(X))
    est = cls(**TINY).fit(X, y)
    loaded = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(loaded.predict(X), est.predict(X))
    assert loaded.n_parameters_ == est.n_parameters_
