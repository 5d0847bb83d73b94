"""EA-DC-Transformer regressor with aeon's collection input conventions."""

from __future__ import annotations

import numpy as np
import torch
from aeon.regression.base import BaseRegressor

from tsrep.data.convert import finite_mean_std
from tsrep.estimators._base import EADCTransformerMixin
from tsrep.estimators._ensemble import mean_of
from tsrep.estimators._recipe import case_weights, regression_loss


def _negative_mse(outputs: torch.Tensor, targets: torch.Tensor) -> float:
    return -float(regression_loss(outputs, targets))


class SeriesRegressorMixin:
    """The regression task of the shared harness (tsrep.estimators._harness): targets standardised
    with the training mean and std, MSE, predictions back in the original units (ensembles averaged)."""

    _task = "regression"

    def _check_y(self, y, n_cases):
        # aeon refuses targets with two distinct values ("binary"); any finite real target is a
        # valid regression target here.
        y = np.asarray(getattr(y, "values", y), dtype=np.float64)
        if y.ndim == 2 and 1 in y.shape:  # a column or row vector: one target per case all the same
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
        if is_ensemble:
            return self
        y = np.asarray(y, dtype=np.float64)
        warm = self._warm()
        if warm is not None:  # warm start: the head was trained on the previous fit's target units
            self.y_mean_, self.y_std_ = warm["y_mean_"], warm["y_std_"]
        else:
            mean, std = (float(v) for v in finite_mean_std(y))  # no overflow for targets of any finite size
            self.y_mean_ = mean
            self.y_std_ = std if std > 1e-12 else 1.0
        targets = torch.as_tensor((y - self.y_mean_) / self.y_std_, dtype=torch.float32)
        weights = case_weights(sample_weight, None, None)
        return self._train(X, targets, 1, regression_loss, _negative_mse, weights=weights)

    def _encode_targets(self, y) -> tuple[np.ndarray, torch.Tensor]:
        """(every case, targets in the standardised units the network is trained on)."""
        y = np.asarray(y, dtype=np.float64)
        return np.ones(len(y), dtype=bool), torch.as_tensor((y - self.y_mean_) / self.y_std_, dtype=torch.float32)

    def _predict(self, X) -> np.ndarray:
        if self.estimators_:
            return mean_of([m.predict(X) for m in self.estimators_])
        out = self._outputs(X).squeeze(-1).double().numpy()
        return out * self.y_std_ + self.y_mean_


class EADCTransformerRegressor(EADCTransformerMixin, SeriesRegressorMixin, BaseRegressor):
    __doc__ = (
        "Time series regressor: EA-DC-Transformer, mean-pooled, linear head, MSE (Wang et al., TPAMI 2023, Eq. 9).\n\n"
        "Targets are standardised with the training mean and std; predictions are returned in the\n"
        "original units. Input formats as EADCTransformerClassifier.\n"
        + EADCTransformerMixin.__doc__
        + """
    Attributes
    ----------
    module_, n_parameters_, history_, best_epoch_, min_steps_ : as EADCTransformerClassifier
    y_mean_, y_std_ : float, the target standardisation

    Examples
    --------
    >>> from aeon.datasets import load_covid_3month
    >>> from tsrep import EADCTransformerRegressor
    >>> X, y = load_covid_3month(split="train")
    >>> X.shape
    (140, 1, 84)
    >>> reg = EADCTransformerRegressor(d_model=16, n_heads=2, n_blocks=1, max_epochs=2, min_steps=0,
    ...                                scaling="symlog", random_state=0).fit(X, y)
    >>> reg.predict(X[:3]).shape
    (3,)
    """
    )
