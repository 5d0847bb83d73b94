"""`TSRepSearchCV`: the tuner as a scikit-learn estimator (for cross_val_score, Pipeline, ...)."""

from __future__ import annotations

import copy

from sklearn.base import BaseEstimator, MetaEstimatorMixin
from sklearn.metrics import check_scoring
from sklearn.utils import get_tags
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from tsrep.tuning.tune import tune


def _best_has(name):
    def check(self):
        target = self.best_estimator_ if hasattr(self, "best_estimator_") else self.estimator
        return hasattr(target, name)

    return check


class TSRepSearchCV(MetaEstimatorMixin, BaseEstimator):
    """Optuna search over a tsrep estimator, then a refit on all the data given to ``fit``.

    ``fit(X, y)`` runs :func:`tsrep.tuning.tune` on (X, y) only (validation split or ``cv`` folds
    carved from it), so the object can sit inside ``cross_val_score`` or a ``Pipeline`` without
    seeing the outer test data.

    Parameters
    ----------
    estimator : tsrep estimator
        The estimator to tune; parameters outside the search space keep its values.
    search_space : dict or None, default=None
        Overrides of the paper's search space: per parameter a fixed value, a list of choices or a
        range ``{"low": a, "high": b}`` (see :func:`~tsrep.tuning.tune`).
    continuous : bool, default=False
        Search the continuous box around the paper's grid of alpha, beta and p.
    default_space : bool, default=True
        Start from the paper's space, less the parameters that ``estimator`` sets (a value other
        than its default keeps that value unless ``search_space`` names it); False tunes only
        ``search_space``.
    n_trials : int, default=10
        Trials per ``fit``.
    timeout : float or None, default=None
        Seconds after which no new trial starts.
    max_trials : int or None, default=None
        Cap on the study's finished trials, shared by every worker of a stored study.
    cv : int, cross-validation splitter or None, default=None
        Score each trial by these folds of the data given to ``fit``; None: one validation split.
    validation_size : float, default=0.2
        Share of the data given to ``fit`` held out to score trials (without ``cv``).
    scoring : str, callable or None, default=None
        scikit-learn scorer; None uses the estimator's ``score``.
    pruner : optuna.pruners.BasePruner or None, default=None
        None: :func:`~tsrep.tuning.default_pruner`.
    sampler : optuna.samplers.BaseSampler or None, default=None
        None: TPE seeded with ``random_state``.
    storage : str, optuna storage or None, default=None
        None keeps the study in memory (every clone made by ``cross_val_score`` gets its own); give
        a URL and ``study_name`` to keep it.
    study_name : str or None, default=None
        Name of a stored study.
    load_if_exists : bool, default=False
        Continue a stored study of that name.
    random_state : int or None, default=0
        Seed of the validation split (or folds) and of the sampler.
    show_progress_bar : bool, default=False
        Optuna's progress bar.

    Attributes
    ----------
    best_estimator_ : estimator
        The estimator refitted with ``best_params_`` on all of X, y.
    best_params_ : dict
        Parameters of the best trial.
    best_score_ : float
        Mean validation score of the best trial.
    best_index_ : int
        Number of the best trial in the study.
    study_ : optuna.Study
        The study, with every trial.
    classes_ : ndarray
        Class labels of the best estimator (classifiers only).

    Examples
    --------
    >>> from aeon.datasets import load_italy_power_demand
    >>> from sklearn.model_selection import cross_val_score
    >>> from tsrep import EADCTransformerClassifier
    >>> from tsrep.tuning import TSRepSearchCV
    >>> X, y = load_italy_power_demand(split="train")
    >>> estimator = EADCTransformerClassifier(d_model=16, n_heads=2, n_blocks=1, max_epochs=1,
    ...                                       min_steps=0, random_state=0)
    >>> search = TSRepSearchCV(estimator, {"alpha": [0.1, 0.9]}, default_space=False, n_trials=2)
    >>> cross_val_score(search, X, y, cv=2).shape  # each fold tunes on its own training part
    (2,)
    """

    _required_parameters = ["estimator"]

    def __init__(
        self,
        estimator,
        search_space=None,
        *,
        continuous=False,
        default_space=True,
        n_trials=10,
        timeout=None,
        max_trials=None,
        cv=None,
        validation_size=0.2,
        scoring=None,
        pruner=None,
        sampler=None,
        storage=None,
        study_name=None,
        load_if_exists=False,
        random_state=0,
        show_progress_bar=False,
    ):
        self.estimator = estimator
        self.search_space = search_space
        self.continuous = continuous
        self.default_space = default_space
        self.n_trials = n_trials
        self.timeout = timeout
        self.max_trials = max_trials
        self.cv = cv
        self.validation_size = validation_size
        self.scoring = scoring
        self.pruner = pruner
        self.sampler = sampler
        self.storage = storage
        self.study_name = study_name
        self.load_if_exists = load_if_exists
        self.random_state = random_state
        self.show_progress_bar = show_progress_bar

    def fit(self, X, y):
        """Run the search on (X, y) and refit the best parameters on all of it (``best_estimator_``)."""
        result = tune(
            self.estimator,
            X,
            y,
            n_trials=self.n_trials,
            timeout=self.timeout,
            max_trials=self.max_trials,
            storage="memory" if self.storage is None else self.storage,
            study_name=self.study_name,
            load_if_exists=self.load_if_exists,
            search_space=self.search_space,
            continuous=self.continuous,
            default_space=self.default_space,
            pruner=copy.deepcopy(self.pruner),
            sampler=copy.deepcopy(self.sampler),
            seed=self.random_state,
            cv=self.cv,
            validation_size=self.validation_size,
            scoring=self.scoring,
            random_state=self.random_state,
            refit=True,
            show_progress_bar=self.show_progress_bar,
        )
        self.study_ = result.study
        self.best_estimator_ = result.best_estimator
        self.best_params_ = result.best_params
        self.best_score_ = result.best_value
        self.best_index_ = result.best_trial.number
        self.n_trials_ = len(result.study.trials)
        self.scorer_ = check_scoring(self.best_estimator_, scoring=self.scoring)
        return self

    @property
    def classes_(self):
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.classes_

    @available_if(_best_has("predict"))
    def predict(self, X):
        """Predictions of the refitted best estimator."""
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.predict(X)

    @available_if(_best_has("predict_proba"))
    def predict_proba(self, X):
        """Class probabilities of the refitted best estimator (classifiers)."""
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.predict_proba(X)

    def score(self, X, y):
        """The ``scoring`` metric of the best estimator (its own ``score`` when scoring is None)."""
        check_is_fitted(self, "best_estimator_")
        return self.scorer_(self.best_estimator_, X, y)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        inner = get_tags(self.estimator)
        tags.estimator_type = inner.estimator_type
        tags.classifier_tags = copy.deepcopy(inner.classifier_tags)
        tags.regressor_tags = copy.deepcopy(inner.regressor_tags)
        tags.input_tags = copy.deepcopy(inner.input_tags)
        tags.target_tags = copy.deepcopy(inner.target_tags)
        return tags
