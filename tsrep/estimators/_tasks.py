"""The two tasks of the estimators: what a classification or a regression trains towards and answers.

A task mixin gives the shared base (tsrep.estimators._base.DeepSeriesEstimator) the targets, the loss and
score, how the "auto" settings of the training recipe resolve for its task, and the predictions; the
estimator classes put it before aeon's BaseClassifier or BaseRegressor. The figures behind each "auto"
rule are in the user guide's training recipe page.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from tsrep.data import as_case_list
from tsrep.data.convert import target_standardization
from tsrep.estimators._checks import check_class_labels, column_as_1d, seed_from
from tsrep.estimators._minirocket_blend import (
    CalibratedMiniRocket, RidgeMiniRocket, classifier_network_weight, network_weight,
)
from tsrep.training.losses import case_weights, class_weights, classification_loss, regression_loss
from tsrep.training.loop import accuracy_score_fn

#: ``validation_fraction="auto"`` holds out this share of TRAIN when the held-out part has at least
#: AUTO_MIN_VALIDATION_CASES[task] cases, and otherwise trains on all of TRAIN for the whole budget: a
#: classifier's accuracy moves by 1 / n_val, so a small split picks the best epoch by noise; a regressor's
#: squared error moves with every case, so a few cases suffice.
AUTO_VALIDATION_FRACTION = 0.2
AUTO_MIN_VALIDATION_CASES = {"classification": 100, "regression": 10}
#: ``max_epochs="auto"``: AUTO_MAX_EPOCHS epochs; ``min_steps="auto"``: at least AUTO_MIN_STEPS optimiser
#: steps and, for a classifier, AUTO_STEPS_PER_CLASS per class (the steps a problem needs grow with its
#: classes, not its cases).
AUTO_MAX_EPOCHS = 100
AUTO_MIN_STEPS = 800
AUTO_STEPS_PER_CLASS = 60
#: A network whose answer is blended with a MiniRocket's trains this share of the "auto" epochs and of the
#: AUTO_MIN_STEPS floor: the MiniRocket holds the accuracy the last seven eighths of those steps buy the network
#: alone (a classifier: a half, a quarter and an eighth measured level with the full budget over 47 UCR problems,
#: three seeds; a regressor: an eighth level or better on the three shipped regression problems, three seeds).
#: The steps a class are kept whole: problems of many classes lost without them.
BLENDED_BUDGET_SHARE = 0.125
#: ``patience="auto"``: a classifier under a schedule that anneals over the whole budget is not stopped
#: early (stopping would cut the annealing, where such a fit gets good, and a classifier's validation
#: accuracy stalls for tens of epochs while the learning rate is high; the best validation epoch is
#: still kept); AUTO_PATIENCE epochs otherwise (a regressor's continuous validation error, a schedule
#: that does not anneal).
AUTO_PATIENCE = 20
ANNEALING_SCHEDULES = ("onecycle", "cosine")
#: ``label_smoothing="auto"`` and ``mixup="auto"`` of a classifier (a regressor has neither).
AUTO_LABEL_SMOOTHING = 0.1
AUTO_MIXUP = 0.2


def resolve_validation_fraction(value, n_cases: int, task: str = "classification") -> float:
    """The fraction of TRAIN held out: `value` itself, or for "auto" the rule above (0.0: no split)."""
    if value != "auto":
        return float(value)
    if math.ceil(AUTO_VALIDATION_FRACTION * n_cases) >= AUTO_MIN_VALIDATION_CASES[task]:
        return AUTO_VALIDATION_FRACTION
    return 0.0


def resolve_max_epochs(value, blended: bool = False) -> int:
    """The number of epochs: `value` itself, or for "auto" the rule above.

    blended: whether a MiniRocket is averaged into the network's answer (blend_minirocket_)."""
    if value != "auto":
        return int(value)
    return round(AUTO_MAX_EPOCHS * (BLENDED_BUDGET_SHARE if blended else 1.0))


def resolve_min_steps(value, n_classes: int | None, blended: bool = False, max_epochs="auto") -> int:
    """The least number of optimiser steps: `value` itself, or for "auto" the rule above where max_epochs is
    "auto" too, and 0 where max_epochs is given: an epoch count the user gives is the one trained (as skorch's
    max_epochs, and the command line's --max-epochs), never silently raised to hundreds of epochs on a small set.

    n_classes: the classifier's number of classes; None for a regressor. blended: as resolve_max_epochs."""
    if value != "auto":
        return int(value)
    if max_epochs != "auto":
        return 0
    share = BLENDED_BUDGET_SHARE if blended else 1.0
    return max(round(AUTO_MIN_STEPS * share), AUTO_STEPS_PER_CLASS * (n_classes or 0))


def resolve_patience(value, lr_schedule, task: str = "classification") -> int | None:
    """The epochs without a better validation score before training stops: `value` itself, or for "auto"
    the rule above (None: never stop early)."""
    if value != "auto":
        return value
    annealing = isinstance(lr_schedule, str) and lr_schedule in ANNEALING_SCHEDULES
    return None if annealing and task == "classification" else AUTO_PATIENCE


def resolve_label_smoothing(value) -> float:
    """The label smoothing a classifier trains with: `value` itself, or for "auto" AUTO_LABEL_SMOOTHING."""
    return AUTO_LABEL_SMOOTHING if value == "auto" else float(value)


def resolve_mixup(value, task: str) -> float:
    """The mixup alpha: `value` itself, or for "auto" AUTO_MIXUP for a classifier and 0 (none) for a regressor."""
    if value == "auto":
        return AUTO_MIXUP if task == "classification" else 0.0
    return float(value)


def resolve_precise_bn(value, task: str) -> bool:
    """Whether BatchNorm's statistics are recomputed after training: `value` itself, or for "auto" no (measured
    level over 47 problems at one seed but below the default on the development panel at two; regressors did not
    gain either)."""
    if value == "auto":
        return False
    return bool(value)


def resolve_blend_minirocket(value, task: str) -> bool:
    """Whether a MiniRocket's answer is blended with the network's: `value` itself, or for "auto" yes (a classifier:
    measured over 47 UCR problems, three seeds; a regressor: over the three regression problems available
    offline, three seeds; the user guide's training recipe page)."""
    if value == "auto":
        return True
    return bool(value)


def mean_of(values: list[np.ndarray]) -> np.ndarray:
    """The ensemble's answer: the mean of its members' probabilities or predictions."""
    return np.mean(np.stack(values), axis=0)


class SeriesClassifierMixin:
    """Classification: class labels, cross-entropy with label smoothing and class weights, averaged
    probabilities of ensembles."""

    _task = "classification"

    def _check_y(self, y, n_cases, update_classes=True, allow_single_class=False):
        y = column_as_1d(y)
        check_class_labels(y)  # missing or mixed labels, named before aeon's generic checks
        if isinstance(y, (list, tuple)):  # scikit-learn takes a list of labels; aeon's check wants an array
            y = np.asarray(y)
        # Scoring learns no classes: a test set whose cases are all of one class is scored like any other.
        return super()._check_y(y, n_cases, update_classes, allow_single_class or not update_classes)

    def _fit(self, X, y):
        is_ensemble, sample_weight = self._fit_setup_recipe(X, y)
        self.label_smoothing_ = resolve_label_smoothing(self.label_smoothing)  # the members' value too
        self.blend_minirocket_ = resolve_blend_minirocket(self.blend_minirocket, self._task)
        index = np.array([self._class_dictionary[v] for v in y])
        weights = case_weights(sample_weight, class_weights(self.class_weight, self.classes_, index), index)
        if not is_ensemble:
            targets = torch.as_tensor(index, dtype=torch.long)
            loss = classification_loss(self.label_smoothing_)
            self._train(X, targets, self.n_classes_, loss, accuracy_score_fn, stratify_on=index, weights=weights)
        # One MiniRocket for the whole estimator (an ensemble's members have none), seeded after the network.
        self.minirocket_ = None
        if self.blend_minirocket_:
            self.minirocket_ = CalibratedMiniRocket(self.n_classes_, self.scaling, seed_from(self.random_state)).fit(
                as_case_list(X, trailing_nan_is_padding=True), index, None if weights is None else weights.numpy()
            )
            self.network_weight_ = classifier_network_weight(len(index))
        return self

    def _n_classes(self) -> int | None:
        return self.n_classes_

    def _encode_targets(self, y) -> tuple[np.ndarray, torch.Tensor]:
        """(cases whose class was seen in training, their class indices)."""
        keep = np.array([v in self._class_dictionary for v in y], dtype=bool)
        return keep, torch.as_tensor([self._class_dictionary[v] for v in y[keep]], dtype=torch.long)

    def _predict_proba(self, X) -> np.ndarray:
        if self.estimators_:
            proba = mean_of([m.predict_proba(X) for m in self.estimators_])
        else:
            proba = torch.softmax(self._outputs(X), dim=1).double().numpy()
        if getattr(self, "minirocket_", None) is not None:
            weight = self.network_weight_
            minirocket = self.minirocket_.predict_proba(as_case_list(X, trailing_nan_is_padding=True))
            proba = weight * proba + (1.0 - weight) * minirocket
        return proba

    def _predict(self, X) -> np.ndarray:
        return self.classes_[self._predict_proba(X).argmax(axis=1)]


def _negative_mse(outputs: torch.Tensor, targets: torch.Tensor) -> float:
    return -float(regression_loss(outputs, targets))


class SeriesRegressorMixin:
    """Regression: targets standardised with the training mean and std, MSE, predictions back in the
    original units (ensembles averaged)."""

    _task = "regression"

    def _check_y(self, y, n_cases):
        # aeon refuses targets with two distinct values ("binary"); any finite real target is a
        # valid regression target here.
        y = column_as_1d(y)
        try:
            y = np.asarray(getattr(y, "values", y), dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"y must hold numbers for a regressor (one target per case): {exc}; class labels go to a classifier"
            ) from None
        if y.ndim == 2 and y.shape[0] == 1:  # a row vector: one target per case all the same
            y = y.reshape(-1)
        if y.ndim != 1:
            raise ValueError(f"y must be 1-D with one target per case, got shape {y.shape}")
        if len(y) != n_cases:
            raise ValueError(f"Mismatch in number of cases. Found X = {n_cases} and y = {len(y)}")
        if not np.all(np.isfinite(y)):
            raise ValueError("y contains NaN or infinite values; regression targets must be finite")
        return y

    def _fit(self, X, y):
        is_ensemble, sample_weight = self._fit_setup_recipe(X, y)
        self.blend_minirocket_ = resolve_blend_minirocket(self.blend_minirocket, self._task)
        y = np.asarray(y, dtype=np.float64)
        weights = case_weights(sample_weight, None, None)
        if not is_ensemble:
            warm = self._warm()
            if warm is not None:  # warm start: the head was trained on the previous fit's target units
                self.y_mean_, self.y_std_ = warm["y_mean_"], warm["y_std_"]
            else:
                self.y_mean_, self.y_std_ = target_standardization(y)
            targets = torch.as_tensor((y - self.y_mean_) / self.y_std_, dtype=torch.float32)
            self._train(X, targets, 1, regression_loss, _negative_mse, weights=weights)
        # One MiniRocket for the whole estimator (an ensemble's members have none), fitted after the network.
        self.minirocket_ = None
        if self.blend_minirocket_:
            self.minirocket_ = RidgeMiniRocket(self.scaling, seed_from(self.random_state)).fit(
                as_case_list(X, trailing_nan_is_padding=True), y, None if weights is None else weights.numpy()
            )
            self.network_weight_ = network_weight(self._network_validation_mse(), self.minirocket_.loo_mse_)
        return self

    def _network_validation_mse(self) -> float | None:
        """The network's squared error on its validation split at the epoch it keeps (an ensemble's: the mean
        of its members'), in units of the training targets' variance as the MiniRocket counts its own; None
        without a validation split."""
        errors = []
        for fit in self.estimators_ or [self]:
            history = fit.history_
            if not history.val_score or not 0 <= history.best_epoch < len(history.val_score):
                return None
            # A warm-started network keeps its first fit's standardisation: its error in the MiniRocket's units.
            scale = (fit.y_std_ / self.minirocket_.target_std_) ** 2
            errors.append(-history.val_score[history.best_epoch] * scale)
        return float(np.mean(errors))

    def _n_classes(self) -> int | None:
        return None

    def _encode_targets(self, y) -> tuple[np.ndarray, torch.Tensor]:
        """(every case, targets in the standardised units the network is trained on)."""
        y = np.asarray(y, dtype=np.float64)
        return np.ones(len(y), dtype=bool), torch.as_tensor((y - self.y_mean_) / self.y_std_, dtype=torch.float32)

    def _predict(self, X) -> np.ndarray:
        if self.estimators_:
            predictions = mean_of([m.predict(X) for m in self.estimators_])
        else:
            out = self._outputs(X).squeeze(-1).double().numpy()
            with np.errstate(over="ignore"):
                predictions = out * self.y_std_ + self.y_mean_
            if not np.isfinite(predictions).all():  # targets near float64's limit, and a network answering beyond them
                bad = np.flatnonzero(~np.isfinite(predictions))
                raise ValueError(
                    f"the predictions for X case(s) {', '.join(map(str, bad[:5]))} exceed float64's range in the "
                    f"units of y (training targets of std {self.y_std_:.3g}); rescale y before fitting"
                )
        if getattr(self, "minirocket_", None) is not None:
            weight = self.network_weight_
            minirocket = self.minirocket_.predict(as_case_list(X, trailing_nan_is_padding=True))
            predictions = weight * predictions + (1.0 - weight) * minirocket
        return predictions
