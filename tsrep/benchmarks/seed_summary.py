"""Means over seeds with their standard errors, as the text and image comparisons report them."""

from __future__ import annotations

import numpy as np
from scipy import stats


def mean_and_standard_error(values, signed: bool = False) -> str:
    """"0.7312 +- 0.0041 (SE)" for the mean of `values` and its standard error over them (sample standard
    deviation / sqrt(n)); one value has no standard error and prints alone. signed: a leading + on positive
    means (for differences)."""
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        raise ValueError("no values to summarise")
    mean = f"{values.mean():+.4f}" if signed else f"{values.mean():.4f}"
    if values.size == 1:
        return f"{mean} (one seed: no standard error)"
    return f"{mean} +- {stats.sem(values):.4f} (SE)"
