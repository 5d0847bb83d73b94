"""Integer arguments of tsrep's modules: any integral type (Python's int, numpy's int64, ...), never a bool.

An estimator's parameter check (scikit-learn's ``Interval(Integral, ...)``) lets numpy integers through, so
the modules it builds must take them too; they store Python ints (``operator.index``), which every torch
layer accepts (``nn.LSTM`` refuses a numpy integer). A bool is refused: True is an int to Python, not a size.
"""

from __future__ import annotations

import numbers
import operator


def is_integer(value) -> bool:
    """Whether `value` is an integer of any integral type, and not a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def positive_int(name: str, value) -> int:
    """`value` as a Python int; ValueError naming `name` unless it is an integer >= 1 (a bool is not)."""
    if not is_integer(value) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return operator.index(value)
