"""Means over seeds with their standard errors, as the text and image comparisons report them.

Standard library only, so that the benchmarks' ``--help`` stays instant."""

from __future__ import annotations

import math
import statistics


def mean_and_standard_error(values, signed: bool = False) -> str:
    """"0.7312 +- 0.0041 (SE)" for the mean of `values` and its standard error over them (sample standard
    deviation / sqrt(n)); one value has no standard error and prints alone. signed: a leading + on positive
    means (for differences)."""
    values = [float(v) for v in values]
    if not values:
        raise ValueError("no values to summarise")
    mean = statistics.fmean(values)
    text = f"{mean:+.4f}" if signed else f"{mean:.4f}"
    if len(values) == 1:
        return f"{text} (one seed: no standard error)"
    return f"{text} +- {statistics.stdev(values) / math.sqrt(len(values)):.4f} (SE)"


def paired_difference(evolving: dict, plain: dict) -> str:
    """mean_and_standard_error of evolving[seed] - plain[seed] over the seeds both hold ({seed: accuracy})."""
    return mean_and_standard_error([evolving[s] - plain[s] for s in evolving if s in plain], signed=True)
