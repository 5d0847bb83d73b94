"""Argument types shared by tsrep's command-line programs: a bad number is an argparse usage error
(exit status 2, one line naming the option) before anything is read or written."""

from __future__ import annotations

import argparse
import math


def _number(text: str, cast, accept, rule: str):
    """cast(text) when accept(value) holds, else the usage error "must be <rule>, got '<text>'"."""
    try:
        value = cast(text)
    except ValueError:
        value = None
    if value is None or (isinstance(value, float) and math.isnan(value)) or not accept(value):
        raise argparse.ArgumentTypeError(f"must be {rule}, got {text!r}")
    return value


def positive_int(text: str) -> int:
    return _number(text, int, lambda v: v >= 1, "a positive integer")


def positive_float(text: str) -> float:
    return _number(text, float, lambda v: v > 0, "a positive number of seconds")


def folds(text: str) -> int:
    """--cv: a number of folds, at least 2 (one fold would leave nothing to train on)."""
    return _number(text, int, lambda v: v >= 2, "an integer >= 2 (the number of folds)")


def fraction(text: str) -> float:
    """--validation-size: a share of the training cases, strictly between 0 and 1."""
    return _number(text, float, lambda v: 0 < v < 1, "a number in (0, 1), the share of TRAIN held out")


def steps(text: str) -> int | str:
    """--min-steps: "auto" or an integer >= 0."""
    if text == "auto":
        return text
    return _number(text, int, lambda v: v >= 0, "'auto' or an integer >= 0")


def stem_channels(text: str) -> int | str | None:
    """--conv-stem: "auto", "none" (no stem; the text, so that a parser can tell it from an option not given)
    or a positive number of channels."""
    if text in ("auto", "none"):
        return text
    return _number(text, int, lambda v: v >= 1, "'auto', 'none' or a positive integer (the stem's channels)")
