"""EA-DC-Transformer classifier with aeon's collection input conventions."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from aeon.classification.base import BaseClassifier

from tsrep.estimators._base import AEON_TAGS, EADCTransformerMixin
from tsrep.training.loop import accuracy_score_fn


class EADCTransformerClassifier(EADCTransformerMixin, BaseClassifier):
    __doc__ = (
        "Time series classifier: EA-DC-Transformer, mean-pooled, MLP head, cross-entropy (paper 002, Eq. 10).\n\n"
        "Takes a 3-D array (n_cases, n_channels, n_timepoints), a 2-D array (univariate) or a list of\n"
        "2-D arrays (unequal length, handled with padding masks). Missing values are interpolated.\n"
        + EADCTransformerMixin.__doc__
        + """
    Attributes
    ----------
    classes_ : ndarray of the class labels
    module_ : torch.nn.Module, the trained network
    n_parameters_ : int, trainable parameters of the network (what runs, nothing else)
    history_ : tsrep.training.History, per-epoch losses and validation scores
    best_epoch_ : int, epoch whose weights were kept
    """
    )

    _tags = dict(AEON_TAGS)
    _task = "classification"

    def _fit(self, X, y):
        targets = torch.as_tensor(np.array([self._class_dictionary[v] for v in y]), dtype=torch.long)
        return self._train(
            X, targets, self.n_classes_, F.cross_entropy, accuracy_score_fn, stratify_on=targets.numpy()
        )

    def _predict_proba(self, X) -> np.ndarray:
        return torch.softmax(self._outputs(X), dim=1).double().numpy()

    def _predict(self, X) -> np.ndarray:
        return self.classes_[self._predict_proba(X).argmax(axis=1)]
