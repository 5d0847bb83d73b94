"""The training recipe shared by every tsrep estimator (EA-DC-Transformer and baselines alike).

The ``validation_fraction="auto"`` and ``min_steps="auto"`` rules, per-case loss weights from
``class_weight`` and ``sample_weight``, the losses, and seed ensembles (``n_estimators``).
"""

from __future__ import annotations

import math
import numbers

import numpy as np
import torch
import torch.nn.functional as F


#: ``validation_fraction="auto"`` holds out this share of TRAIN ...
AUTO_VALIDATION_FRACTION = 0.2
#: ... for a classifier only when the held-out part has at least this many cases; otherwise it trains
#: on all of TRAIN for the whole budget. One validation case moves accuracy by 1 / n_val, so with fewer
#: cases the best epoch is picked by noise (a 21-case split picked epoch 4 of 25 on a 7-class problem
#: and left the model at 0.19 test accuracy), and the split costs a fifth of a small training set.
AUTO_MIN_VALIDATION_CASES = 100
#: A regressor's validation score, the mean squared error, moves continuously with every case, so a
#: few cases already tell a fitting network from one that learns noise: a regressor holds out the
#: share from this many validation cases on. With the split (early stopping on it, best epoch kept)
#: the EA-DC-Transformer's test RMSE at the quick benchmark's settings, seeds 0-2, went from 0.3143 /
#: 0.3144 / 0.3477 to 0.2965 / 0.3041 / 0.3064 on CardanoSentiment (74 cases; the train mean scores
#: 0.3003) and from 3.10 / 4.62 / 3.83 to 3.21 / 3.38 / 3.83 on Tecator (172), while Covid3Month (140)
#: went from 0.0451 / 0.0405 / 0.0429 to 0.0444 / 0.0442 / 0.0440 (train mean 0.0447): steadier,
#: but not better on average. Below this many, the split leaves too few cases to train on.
AUTO_MIN_VALIDATION_CASES_REGRESSION = 10


def resolve_validation_fraction(value, n_cases: int, task: str = "classification") -> float:
    """The fraction of TRAIN held out: `value` itself, or for "auto" the rules above (0.0: no split).

    task: "classification" or "regression"."""
    if value != "auto":
        return float(value)
    least = AUTO_MIN_VALIDATION_CASES_REGRESSION if task == "regression" else AUTO_MIN_VALIDATION_CASES
    if math.ceil(AUTO_VALIDATION_FRACTION * n_cases) >= least:
        return AUTO_VALIDATION_FRACTION
    return 0.0


#: ``min_steps="auto"`` takes at least AUTO_MIN_STEPS optimiser steps ...
AUTO_MIN_STEPS = 800
#: ... and, for a classifier, AUTO_STEPS_PER_CLASS per class. Measured on UCR problems (seed 0 and 1):
#: a 37-class problem (Adiac, 390 cases) reached 0.42 / 0.49 test accuracy with 800 steps and
#: 0.73 / 0.75 with 2100, while a 6-class one (DistalPhalanxTW, 400 cases) lost 0.05 on both seeds
#: going from 800 to 2100 steps: the steps a problem needs grow with its classes, not its cases.
AUTO_STEPS_PER_CLASS = 60


def resolve_min_steps(value, n_classes: int | None) -> int:
    """The least number of optimiser steps: `value` itself, or for "auto" the rule above.

    n_classes: the classifier's number of classes; None for a regressor."""
    if value != "auto":
        return int(value)
    return max(AUTO_MIN_STEPS, AUTO_STEPS_PER_CLASS * (n_classes or 0))


#: ``label_smoothing="auto"``: a classifier's cross-entropy smooths its targets by this much (a regressor
#: has none). On the 12-problem UCR development panel (three seeds) the mean test accuracy rose on every
#: seed, 0.844 against 0.837 without; the long series with few training cases gained most (FaceFour
#: +0.037, Beef +0.033), Ham and DistalPhalanxTW lost 0.016 and 0.010.
AUTO_LABEL_SMOOTHING = 0.1


def resolve_label_smoothing(value) -> float:
    """The label smoothing a classifier trains with: `value` itself, or for "auto" AUTO_LABEL_SMOOTHING."""
    return AUTO_LABEL_SMOOTHING if value == "auto" else float(value)


#: ``mixup="auto"``: the alpha of a classifier's mixup (tsrep.training.mixup); a regressor has none. On the
#: 12-problem UCR development panel the mean test accuracy rose on every seed: 0.887 / 0.882 / 0.881 against
#: 0.881 / 0.873 / 0.874 without (seeds 0-2); eight problems gained (Beef +0.034, Lightning7 +0.032, ArrowHead
#: +0.017), three lost (Ham -0.022, FaceFour -0.004, Adiac -0.003).
AUTO_MIXUP = 0.2


def resolve_mixup(value, task: str) -> float:
    """The mixup alpha the network trains with: `value` itself, or for "auto" AUTO_MIXUP for a classifier
    and 0 (none) for a regressor."""
    if value == "auto":
        return AUTO_MIXUP if task == "classification" else 0.0
    return float(value)


def check_sample_weight(sample_weight, n_cases: int) -> np.ndarray | None:
    """A float array of n_cases finite, non-negative weights with a positive sum, or None."""
    if sample_weight is None:
        return None
    try:
        w = np.asarray(sample_weight, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"sample_weight must be an array of numbers, got {type(sample_weight).__name__}") from err
    if w.ndim == 0:
        w = np.full(n_cases, float(w))
    if w.shape != (n_cases,):
        raise ValueError(f"sample_weight must have one weight per case ({n_cases}), got shape {w.shape}")
    if not np.all(np.isfinite(w)):
        raise ValueError("sample_weight contains NaN or infinite values")
    if np.any(w < 0):
        raise ValueError(f"sample_weight must be >= 0, got a minimum of {w.min()}")
    if w.sum() <= 0:
        raise ValueError("sample_weight is zero for every case (the weights sum to 0): nothing to train on")
    return w


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
    """Per-case loss weights, scaled to mean 1 over the training cases (None when all are equal).

    The loss of a batch is then mean(w_i * loss_i): weighting changes the balance between cases,
    not the overall step size, so the learning rate means the same with and without weights.
    """
    if sample_weight is None and per_class is None:
        return None
    n = len(class_index) if class_index is not None else len(sample_weight)
    w = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64).copy()
    if per_class is not None:
        w = w * per_class[class_index]
    if w.sum() <= 0:
        raise ValueError("every case has weight zero (sample_weight times class_weight): nothing to train on")
    return torch.as_tensor(w / w.mean(), dtype=torch.float32)


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
