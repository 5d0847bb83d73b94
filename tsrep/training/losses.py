"""The supervised losses of the estimators, weighted per case.

``loss(outputs, targets, weights)``: outputs (B, n_outputs) from the network, targets (B,), weights (B,) or
None (every case weighs 1). Weights are scaled to mean 1 over the training cases beforehand
(:func:`case_weights`), so weighting changes the balance between cases, not the size of the optimiser's
steps: the learning rate means the same with and without weights.
"""

from __future__ import annotations

import numbers

import numpy as np
import torch
import torch.nn.functional as F

__all__ = ["case_weights", "class_weights", "classification_loss", "regression_loss", "weighted_mean"]


def weighted_mean(per_case: torch.Tensor, weights: torch.Tensor | None) -> torch.Tensor:
    return per_case.mean() if weights is None else (per_case * weights).mean()


def classification_loss(label_smoothing: float):
    """loss(logits (B, K), targets (B,), weights (B,) or None): cross-entropy with label smoothing."""
    def loss(outputs, targets, weights=None):
        per_case = F.cross_entropy(outputs.float(), targets, reduction="none", label_smoothing=label_smoothing)
        return weighted_mean(per_case, weights)

    return loss


def regression_loss(outputs, targets, weights=None):
    """MSE of outputs (B, 1) against targets (B,), weighted per case."""
    return weighted_mean((outputs.squeeze(-1).float() - targets) ** 2, weights)


def class_weights(class_weight, classes: np.ndarray, class_index: np.ndarray) -> np.ndarray | None:
    """Weight per class (aligned with `classes`) or None.

    "balanced" is scikit-learn's rule, n_cases / (n_classes * count of the class); a dict maps class
    labels to weights (classes it leaves out weigh 1) and must name only classes present in y.
    """
    if class_weight is None:
        return None
    n_classes = len(classes)
    if class_weight == "balanced":
        counts = np.bincount(class_index, minlength=n_classes).astype(np.float64)
        return len(class_index) / (n_classes * np.maximum(counts, 1))
    known = {str(c): i for i, c in enumerate(classes)}
    weights = np.ones(n_classes)
    for label, value in class_weight.items():
        key = str(label)
        if key not in known:
            raise ValueError(f"class_weight names class {label!r}, which is not in y (classes: {list(classes)})")
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not (0 <= value < float("inf")):
            raise ValueError(f"class_weight[{label!r}] must be a finite number >= 0, got {value!r}")
        weights[known[key]] = float(value)
    return weights


def case_weights(sample_weight: np.ndarray | None, per_class: np.ndarray | None, class_index) -> torch.Tensor | None:
    """Per-case loss weights, sample_weight times the case's class weight, scaled to mean 1 over the
    training cases (None when neither is given)."""
    if sample_weight is None and per_class is None:
        return None
    n = len(class_index) if class_index is not None else len(sample_weight)
    w = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64).copy()
    if per_class is not None:
        w = w * per_class[class_index]
    if w.sum() <= 0:
        raise ValueError("every case has weight zero (sample_weight times class_weight): nothing to train on")
    return torch.as_tensor(w / w.mean(), dtype=torch.float32)
