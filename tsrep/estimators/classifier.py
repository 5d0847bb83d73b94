"""EA-DC-Transformer classifier with aeon's collection input conventions."""

from __future__ import annotations

import numpy as np
import torch
from aeon.classification.base import BaseClassifier

from tsrep.estimators._base import EADCTransformerMixin
from tsrep.estimators._common import check_class_labels
from tsrep.estimators._ensemble import mean_of
from tsrep.estimators._recipe import case_weights, class_weights, classification_loss, resolve_label_smoothing
from tsrep.training.loop import accuracy_score_fn


class SeriesClassifierMixin:
    """The classification task of the shared harness (tsrep.estimators._harness): class labels,
    cross-entropy with label smoothing and class weights, averaged probabilities of ensembles."""

    _task = "classification"

    def _check_y(self, y, n_cases, *args, **kwargs):
        check_class_labels(y)  # missing or mixed labels, named before aeon's generic checks
        return super()._check_y(y, n_cases, *args, **kwargs)

    def _fit(self, X, y):
        is_ensemble, sample_weight = self._fit_setup_recipe(X, y)
        self.label_smoothing_ = resolve_label_smoothing(self.label_smoothing)  # the members' value too
        if is_ensemble:
            return self
        index = np.array([self._class_dictionary[v] for v in y])
        weights = case_weights(sample_weight, class_weights(self.class_weight, self.classes_, index), index)
        targets = torch.as_tensor(index, dtype=torch.long)
        loss = classification_loss(self.label_smoothing_)
        return self._train(
            X, targets, self.n_classes_, loss, accuracy_score_fn, stratify_on=index, weights=weights
        )

    def _encode_targets(self, y) -> tuple[np.ndarray, torch.Tensor]:
        """(cases whose class was seen in training, their class indices)."""
        keep = np.array([v in self._class_dictionary for v in y], dtype=bool)
        return keep, torch.as_tensor([self._class_dictionary[v] for v in y[keep]], dtype=torch.long)

    def _predict_proba(self, X) -> np.ndarray:
        if self.estimators_:
            return mean_of([m.predict_proba(X) for m in self.estimators_])
        return torch.softmax(self._outputs(X), dim=1).double().numpy()

    def _predict(self, X) -> np.ndarray:
        return self.classes_[self._predict_proba(X).argmax(axis=1)]


class EADCTransformerClassifier(EADCTransformerMixin, SeriesClassifierMixin, BaseClassifier):
    __doc__ = (
        "Time series classifier: EA-DC-Transformer, mean-pooled, MLP head, cross-entropy (Wang et al., TPAMI 2023, Eq. 10).\n\n"
        "Takes a 3-D array (n_cases, n_channels, n_timepoints), a 2-D array (univariate) or a list of\n"
        "2-D arrays (unequal length, handled with padding masks). Missing values are interpolated; in a\n"
        "3-D array, trailing steps where every channel is NaN are padding (the series ends before them).\n"
        + EADCTransformerMixin.__doc__
        + """
    Attributes
    ----------
    classes_ : ndarray of the class labels
    module_ : torch.nn.Module, the trained network
    n_parameters_ : int, trainable parameters of the network (what runs, nothing else)
    history_ : tsrep.training.History, per-epoch losses and validation scores
    best_epoch_ : int, epoch whose weights were kept
    validation_fraction_ : float, the share of TRAIN held out (validation_fraction="auto" resolved)
    min_steps_ : int, the least number of optimiser steps (min_steps="auto" resolved)
    label_smoothing_ : float, the label smoothing of the loss (label_smoothing="auto" resolved)
    patch_len_, patch_stride_ : int or None, the token front end used (patch_len="auto" resolved)
    estimators_ : list of fitted single-model classifiers when n_estimators > 1, else None

    Examples
    --------
    >>> from aeon.datasets import load_basic_motions
    >>> from tsrep import EADCTransformerClassifier
    >>> X, y = load_basic_motions(split="train")
    >>> X.shape  # (n_cases, n_channels, n_timepoints)
    (40, 6, 100)
    >>> clf = EADCTransformerClassifier(d_model=16, n_heads=2, n_blocks=1, max_epochs=2,
    ...                                 min_steps=0, random_state=0)
    >>> clf = clf.fit(X, y)
    >>> clf.predict(X[:4]).shape, clf.predict_proba(X[:4]).shape
    ((4,), (4, 4))

    Series of unequal length are a list of (n_channels, n_timepoints_i) arrays:

    >>> unequal = [x[:, : 60 + i] for i, x in enumerate(X[:5])]
    >>> clf.predict(unequal).shape
    (5,)
    """
    )
