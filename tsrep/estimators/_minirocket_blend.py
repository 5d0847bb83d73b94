"""A MiniRocket beside the network: an answer to blend with the network's.

MiniRocket (Dempster, Schmidt and Webb, "MiniRocket: A Very Fast (Almost) Deterministic Transform for Time Series
Classification", KDD 2021) turns each series into about 10,000 proportions of positive values of fixed
convolutions and fits a ridge on them. It costs about a second where the network costs minutes, and it
is right where the network is weak (small sets of long spectra, many classes of similar shapes) and wrong where the
network is strong, so the average of the two beats either (measured over 47 UCR problems: the user guide's
training recipe page).

A ridge classifier gives scores, not probabilities: it regresses each class's code (+1 for the class, -1 for the
others). They become probabilities by a softmax with a temperature T chosen on TRAIN without a held-out split:
the value that minimises the log-loss of the leave-one-out scores, which a ridge gives in closed form (every case
scored by the ridge fitted to all the others). T is therefore fitted to how often and how confidently the ridge is
right on cases it has not seen, not tuned on any benchmark. A case alone in its class says nothing of that (without
it the ridge has never seen its class) and is left out of the fit; where every class has one case, T is a fixed
value, the median of the temperatures fitted on 47 UCR problems.

A regressor's ridge predicts the target itself; its leave-one-out squared error, also in closed form, is the
estimate of its error on unseen cases by which :func:`network_weight` weighs it against the network.

The transform is aeon's MiniRocket; the ridges are scikit-learn's RidgeClassifierCV and RidgeCV with MiniRocket's
own settings (features scaled by their standard deviation, penalties 10^-3 to 10^3), as aeon's MiniRocketClassifier
and MiniRocketRegressor fit them.
"""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np
import torch
from scipy.optimize import minimize_scalar
from scipy.special import log_softmax, softmax
from sklearn.linear_model import RidgeClassifierCV, RidgeCV

from tsrep.data.convert import ChannelStandardizer, fill_missing, target_standardization
from tsrep.nn.patching import AUTO_STEM_MIN_CASES

#: The shortest series MiniRocket reads (its kernels are 9 steps long): shorter ones are padded.
MIN_LENGTH = 9
#: The ridge penalties RidgeClassifierCV chooses among (aeon's MiniRocketClassifier's).
ALPHAS = np.logspace(-3, 3, 10)
#: The temperatures searched, on a log scale; beyond them the probabilities no longer change at float precision.
TEMPERATURE_BOUNDS = (1e-3, 1e3)
#: A classifier trained on fewer than SMALL_SET_CASES cases gives its network SMALL_SET_NETWORK_WEIGHT of the
#: blend (the MiniRocket the rest); from SMALL_SET_CASES cases on, half. See classifier_network_weight. The
#: boundary is the convolutional stem's: the weight was measured on the sets whose network has no stem.
SMALL_SET_CASES = AUTO_STEM_MIN_CASES
SMALL_SET_NETWORK_WEIGHT = 0.25
#: The temperature when no training case can calibrate it (every class has one case): the median of the
#: temperatures fitted on 47 UCR problems that can (0.26; quartiles 0.19 and 0.51; the user guide's training
#: recipe page).
FALLBACK_TEMPERATURE = 0.26


@contextmanager
def torch_threads_kept():
    """Leave torch's thread count as it was: aeon's MiniRocket sets numba's threads and back, and with numba's
    OpenMP layer that also resets the OpenMP threads torch runs on (a network trained after a MiniRocket on
    one torch thread was measured running on two)."""
    threads = torch.get_num_threads()
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _as_logits(scores: np.ndarray) -> np.ndarray:
    """Ridge scores (n,) of a two-class problem (the second class's code) or (n, k) -> logits (n, k)."""
    return np.stack([-scores, scores], axis=1) if scores.ndim == 1 else scores


def fit_temperature(scores: np.ndarray, y_index: np.ndarray, sample_weight: np.ndarray | None = None) -> float:
    """The T > 0 minimising the (weighted) mean log-loss of softmax(logits / T) on the true classes `y_index`."""
    logits = _as_logits(scores)
    rows = np.arange(len(y_index))

    def log_loss(log_t: float) -> float:
        return -float(np.average(log_softmax(logits / np.exp(log_t), axis=1)[rows, y_index], weights=sample_weight))

    low, high = np.log(TEMPERATURE_BOUNDS)
    return float(np.exp(minimize_scalar(log_loss, bounds=(low, high), method="bounded").x))


def calibration_temperature(loo_scores: np.ndarray, y_index: np.ndarray,
                            sample_weight: np.ndarray | None = None) -> float:
    """The softmax temperature of a ridge classifier, fitted on its leave-one-out scores of the cases that can
    calibrate it: those whose class has another training case. A case alone in its class is scored by a ridge
    that has never seen the class, so it is always wrong there, whatever the ridge's quality; counted, such cases
    drive the temperature up and the probabilities towards uniform (with one case a class, to the bound, where the
    MiniRocket no longer adds anything to a blend). Without any such case: FALLBACK_TEMPERATURE."""
    y_index = np.asarray(y_index)
    calibrating = np.bincount(y_index)[y_index] >= 2
    if not calibrating.any():
        return FALLBACK_TEMPERATURE
    weight = None if sample_weight is None else np.asarray(sample_weight)[calibrating]
    if weight is not None and not weight.sum() > 0:
        return FALLBACK_TEMPERATURE
    return fit_temperature(loo_scores[calibrating], y_index[calibrating], weight)


def leave_one_out_scores(ridge, features: np.ndarray, y, sample_weight=None) -> np.ndarray:
    """The score of every training case by the ridge fitted without it, at the penalty `ridge` chose.

    RidgeClassifierCV(store_cv_results=True) keeps each case's squared leave-one-out error of each class code;
    the error's sign is that of the case's residual under the full fit (the leave-one-out residual is the full
    residual divided by 1 - h_ii, and 0 <= h_ii < 1), so score = code - sign(code - fitted) * |error|. With
    sample weights the stored errors are weighted (w_i times the squared error) and are divided back."""
    alpha = list(ridge.alphas).index(ridge.alpha_)
    squared = ridge.cv_results_[:, :, alpha]
    if sample_weight is not None:
        weight = np.asarray(sample_weight, dtype=np.float64)[:, None]
        squared = np.divide(squared, weight, out=np.zeros_like(squared), where=weight > 0)
    y = np.asarray(y)
    if len(ridge.classes_) == 2:  # one code: the second class's
        codes = np.where(y == ridge.classes_[1], 1.0, -1.0)[:, None]
    else:
        codes = np.where(y[:, None] == ridge.classes_[None, :], 1.0, -1.0)
    fitted = ridge.decision_function(features).reshape(codes.shape)
    scores = codes - np.sign(codes - fitted) * np.sqrt(squared)
    return scores[:, 0] if scores.shape[1] == 1 else scores


class MiniRocketFeatures:
    """MiniRocket's features of standardised series, scaled by their standard deviation on TRAIN: the part the
    classifier's and the regressor's MiniRocket share.

    Series are standardised per channel, missing values interpolated, and every series padded with its channel's
    mean (or cut) to the longest training series."""

    def __init__(self, scaling: str = "standard", random_state: int = 0):
        self.scaling = scaling
        self.random_state = random_state

    def _array(self, cases: list[np.ndarray]) -> np.ndarray:
        """(n, n_channels, length_) float32: standardised, filled, padded with 0 (the mean) or cut."""
        out = np.zeros((len(cases), self.n_channels_, self.length_), dtype=np.float32)
        for i, case in enumerate(self.standardizer_.transform(cases)):
            case = fill_missing(case)[:, : self.length_]
            out[i, :, : case.shape[1]] = case
        return out

    def _fit_transform(self, series: np.ndarray) -> np.ndarray:
        """(n, n_channels, length_) training series -> (n, n_features) raw features; fits the transform."""
        # Imported here, not with the package: aeon's convolution transforms take about 3 s to import (numba).
        from aeon.transformations.collection.convolution_based import MiniRocket

        with torch_threads_kept():
            self.transform_ = MiniRocket(random_state=self.random_state, n_jobs=1).fit(series)
            return self.transform_.transform(series)

    def _transform(self, series: np.ndarray) -> np.ndarray:
        """(n, n_channels, length_) series -> (n, n_features) raw features of the fitted transform."""
        with torch_threads_kept():
            return self.transform_.transform(series)

    def _features(self, cases: list[np.ndarray]) -> np.ndarray:
        return self._transform(self._array(cases)) / self.feature_scale_

    def _fit_features(self, cases: list[np.ndarray]) -> np.ndarray:
        """Fit the standardisation, the transform and the feature scale to TRAIN; (n, n_features) its features."""
        self.standardizer_ = ChannelStandardizer(self.scaling).fit(cases)
        self.n_channels_ = int(cases[0].shape[0])
        self.length_ = max(MIN_LENGTH, max(int(c.shape[1]) for c in cases))
        raw = self._fit_transform(self._array(cases))
        std = raw.std(axis=0)
        self.feature_scale_ = np.where(std > 0, std, 1.0)  # StandardScaler(with_mean=False), as aeon's pipeline
        return raw / self.feature_scale_

    # ------------------------------------------------------------------ model files (tsrep._serialization)
    #: The MiniRocket's five parameter arrays (channel combinations, dilations, features per dilation, biases).
    _TRANSFORM_ARRAYS = ("n_channels_per_combination", "channel_indices", "dilations", "n_features_per_dilation",
                         "biases")

    def _feature_state(self) -> tuple[dict, dict[str, np.ndarray]]:
        arrays = dict(zip(self._TRANSFORM_ARRAYS, self.transform_.parameters))
        arrays.update(feature_scale=self.feature_scale_, mean=self.standardizer_.mean_, std=self.standardizer_.std_)
        settings = {"scaling": self.scaling, "random_state": self.random_state, "n_channels": self.n_channels_,
                    "length": self.length_, "n_kernels": self.transform_.n_kernels_}
        return settings, arrays

    def _restore_features(self, settings: dict, arrays: dict[str, np.ndarray]) -> list[str]:
        """Set the fitted transform, standardisation and feature scale from a saved state; the names of
        standardisation arrays whose shapes are wrong (empty when all fit)."""
        from aeon.transformations.collection.convolution_based import MiniRocket  # about 3 s: only when needed

        self.n_channels_, self.length_ = int(settings["n_channels"]), int(settings["length"])
        self.standardizer_ = ChannelStandardizer(self.scaling)
        self.standardizer_.mean_, self.standardizer_.std_ = arrays["mean"], arrays["std"]
        self.feature_scale_ = arrays["feature_scale"]
        transform = MiniRocket(n_kernels=int(settings["n_kernels"]), random_state=self.random_state, n_jobs=1)
        transform.parameters = tuple(arrays[name] for name in self._TRANSFORM_ARRAYS)
        transform.n_kernels_, transform._n_jobs = int(settings["n_kernels"]), 1
        transform.metadata_ = {"multivariate": self.n_channels_ > 1, "missing_values": False,
                               "unequal_length": False, "n_cases": 0, "n_channels": self.n_channels_,
                               "n_timepoints": self.length_}
        transform.is_fitted = True
        self.transform_ = transform
        return [f"{name} {arrays[name].shape} (expected ({self.n_channels_},))" for name in ("mean", "std")
                if tuple(arrays[name].shape) != (self.n_channels_,)]


class CalibratedMiniRocket(MiniRocketFeatures):
    """MiniRocket features, a ridge classifier and a softmax temperature fitted on leave-one-out scores.

    fit(cases, y_index) with cases a list of (n_channels, n_timepoints_i) arrays and y_index (n,) class indices
    0..n_classes-1; predict_proba(cases) -> (n, n_classes).
    """

    def __init__(self, n_classes: int, scaling: str = "standard", random_state: int = 0):
        super().__init__(scaling, random_state)
        self.n_classes = n_classes

    def fit(self, cases: list[np.ndarray], y_index: np.ndarray, sample_weight: np.ndarray | None = None):
        features = self._fit_features(cases)
        ridge = RidgeClassifierCV(alphas=ALPHAS, store_cv_results=True)
        ridge.fit(features, y_index, sample_weight=sample_weight)
        self.classes_seen_ = ridge.classes_.astype(np.int64)  # the class indices TRAIN holds
        # (1 or classes seen, n_features): one row for two classes (scikit-learn may give it as a vector)
        self.coef_ = np.atleast_2d(ridge.coef_).astype(np.float64)
        self.intercept_ = np.atleast_1d(ridge.intercept_).astype(np.float64)
        self.temperature_ = calibration_temperature(
            leave_one_out_scores(ridge, features, y_index, sample_weight), np.searchsorted(ridge.classes_, y_index),
            sample_weight,
        )
        return self

    def predict_proba(self, cases: list[np.ndarray]) -> np.ndarray:
        scores = self._features(cases) @ self.coef_.T + self.intercept_
        seen = softmax(_as_logits(scores[:, 0] if self.coef_.shape[0] == 1 else scores) / self.temperature_, axis=1)
        proba = np.zeros((len(cases), self.n_classes))
        proba[:, self.classes_seen_] = seen
        return proba

    def state(self) -> tuple[dict, dict[str, np.ndarray]]:
        """(JSON-able settings, named arrays) from which :meth:`from_state` rebuilds this fitted object."""
        settings, arrays = self._feature_state()
        arrays.update(coef=self.coef_, intercept=self.intercept_, classes_seen=self.classes_seen_)
        settings["temperature"] = self.temperature_
        return settings, arrays

    @classmethod
    def from_state(cls, settings: dict, arrays: dict[str, np.ndarray], n_classes: int) -> CalibratedMiniRocket:
        """The fitted object `state` described; ValueError naming what does not fit together."""
        self = cls(n_classes, settings["scaling"], settings["random_state"])
        wrong = self._restore_features(settings, arrays)
        self.temperature_ = float(settings["temperature"])
        self.coef_, self.intercept_ = arrays["coef"], arrays["intercept"]
        self.classes_seen_ = arrays["classes_seen"].astype(np.int64)
        expected = {"intercept": (self.coef_.shape[0],),
                    "coef": (1 if n_classes == 2 else len(self.classes_seen_), len(self.feature_scale_))}
        wrong += [f"{name} {arrays[name].shape} (expected {shape})" for name, shape in expected.items()
                  if tuple(arrays[name].shape) != shape]
        if wrong or not (np.all(self.classes_seen_ >= 0) and np.all(self.classes_seen_ < n_classes)):
            raise ValueError("the MiniRocket's arrays do not fit together: " + ("; ".join(wrong) or "classes_seen"))
        if not (self.temperature_ > 0 and np.isfinite(self.temperature_)):
            raise ValueError(f"the MiniRocket's temperature must be a positive number, got {self.temperature_!r}")
        return self


class RidgeMiniRocket(MiniRocketFeatures):
    """MiniRocket features and a ridge regression (penalty chosen by leave-one-out error), with that
    leave-one-out mean squared error: the estimate of its error on unseen cases that a regressor's blend weighs.

    fit(cases, y) with y (n,) targets; predict(cases) -> (n,) in y's units. As aeon's MiniRocketRegressor fits it
    (RidgeCV, penalties 10^-3 to 10^3), on the standardised series the network reads and on targets standardised
    by their training mean and standard deviation (``target_mean_``, ``target_std_``), so that ``loo_mse_`` is
    in units of the training targets' variance (1.0: no better than answering the training mean)."""

    def fit(self, cases: list[np.ndarray], y: np.ndarray, sample_weight: np.ndarray | None = None):
        features = self._fit_features(cases)
        self.target_mean_, self.target_std_ = target_standardization(y)
        targets = (np.asarray(y, dtype=np.float64) - self.target_mean_) / self.target_std_
        ridge = RidgeCV(alphas=ALPHAS, store_cv_results=True).fit(features, targets, sample_weight=sample_weight)
        # Each case's squared leave-one-out error at the chosen penalty, times the case's weight when there are
        # weights: their weighted mean is the sum over the sum of the weights.
        squared = ridge.cv_results_[:, list(ridge.alphas).index(ridge.alpha_)]
        total_weight = len(targets) if sample_weight is None else float(np.sum(sample_weight))
        self.loo_mse_ = float(np.sum(squared) / total_weight)
        self.alpha_ = float(ridge.alpha_)
        self.coef_ = np.asarray(ridge.coef_, dtype=np.float64).reshape(-1)
        self.intercept_ = float(ridge.intercept_)
        return self

    def predict(self, cases: list[np.ndarray]) -> np.ndarray:
        return (self._features(cases) @ self.coef_ + self.intercept_) * self.target_std_ + self.target_mean_

    def state(self) -> tuple[dict, dict[str, np.ndarray]]:
        """(JSON-able settings, named arrays) from which :meth:`from_state` rebuilds this fitted object."""
        settings, arrays = self._feature_state()
        arrays["coef"] = self.coef_
        settings.update(intercept=self.intercept_, loo_mse=self.loo_mse_, alpha=self.alpha_,
                        target_mean=self.target_mean_, target_std=self.target_std_)
        return settings, arrays

    @classmethod
    def from_state(cls, settings: dict, arrays: dict[str, np.ndarray]) -> RidgeMiniRocket:
        """The fitted object `state` described; ValueError naming what does not fit together."""
        self = cls(settings["scaling"], settings["random_state"])
        wrong = self._restore_features(settings, arrays)
        self.coef_ = arrays["coef"]
        self.intercept_, self.loo_mse_ = float(settings["intercept"]), float(settings["loo_mse"])
        self.target_mean_, self.target_std_ = float(settings["target_mean"]), float(settings["target_std"])
        self.alpha_ = float(settings["alpha"])
        if tuple(self.coef_.shape) != self.feature_scale_.shape:
            wrong.append(f"coef {self.coef_.shape} (expected {self.feature_scale_.shape})")
        if wrong:
            raise ValueError("the MiniRocket's arrays do not fit together: " + "; ".join(wrong))
        numbers = (self.loo_mse_, self.intercept_, self.target_mean_, self.target_std_)
        if not (all(np.isfinite(numbers)) and self.loo_mse_ >= 0 and self.target_std_ > 0):
            raise ValueError(
                "the MiniRocket's leave-one-out error, intercept and target standardisation must be finite (the "
                f"error >= 0, the standard deviation > 0), got {numbers!r}"
            )
        return self


def classifier_network_weight(n_cases: int) -> float:
    """The network's share of a classifier's blended probabilities (the MiniRocket's is the rest), for a TRAIN of
    `n_cases` cases.

    A classifier has no validation split on small sets, so the weights cannot come from the problem's own held-out
    errors as a regressor's do (:func:`network_weight`); they follow the same rule, each part weighted inversely to
    its error, with the errors measured on development problems of the same size. Below SMALL_SET_CASES training
    cases (where the network also has no convolutional stem) the network alone erred three times as often as the
    MiniRocket (0.133 against 0.045 over ten UCR problems of 17 to 30 cases, three seeds), hence 0.25; from
    SMALL_SET_CASES cases on the two erred about equally (0.185 against 0.165 over 41 problems, 0.47 by the rule),
    and the weights are equal, the top of the measured curve (the user guide's training recipe page)."""
    return SMALL_SET_NETWORK_WEIGHT if n_cases < SMALL_SET_CASES else 0.5


def network_weight(network_mse: float | None, minirocket_mse: float) -> float:
    """The network's share of a regressor's blended prediction (the MiniRocket's is the rest).

    Each of the two is weighted inversely to its mean squared error on cases it did not train on (the classic
    combination of two forecasts whose errors are unbiased: Bates and Granger, "The Combination of Forecasts",
    Operational Research Quarterly 20(4), 1969): the network's on its validation split, at the epoch it keeps;
    the MiniRocket's leave-one-out error. Both errors in the same units. Without a validation split
    (network_mse None) the network has no such estimate, and the two are averaged with equal weights, as a
    classifier's probabilities are."""
    if network_mse is None or not np.isfinite(network_mse):
        return 0.5
    total = network_mse + minirocket_mse
    return 0.5 if total <= 0 else float(minirocket_mse / total)
