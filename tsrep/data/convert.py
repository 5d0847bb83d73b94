"""From aeon collections to padded float tensors with a validity mask.

aeon hands estimators either a 3-D array (n_cases, n_channels, n_timepoints) or a list of 2-D
arrays (n_channels, n_timepoints_i). Models see (n_cases, T_max, n_channels), zero after each
series' end, and a (n_cases, T_max) bool mask that is False on padding.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd


def as_case_list(X, trailing_nan_is_padding: bool = False) -> list[np.ndarray]:
    """numpy3D or np-list -> list of float64 (n_channels, n_timepoints_i) arrays.

    trailing_nan_is_padding: in a 3-D array, the steps after a case's last observed value (every
    channel NaN from there to the end) are padding, not missing values: a common way to stack
    series of unequal length. Each such case then ends at its last observed step, exactly as the
    same series given in a list. A case with no observed value is kept whole. Lists are never cut:
    each of their series has the length it was given.
    """
    if isinstance(X, np.ndarray):
        if X.ndim != 3:
            raise ValueError(f"X must be 3-D (n_cases, n_channels, n_timepoints), got shape {X.shape}")
        cases = [np.asarray(x, dtype=np.float64) for x in X]
        return [trim_trailing_nan(x) for x in cases] if trailing_nan_is_padding else cases
    return [np.asarray(x, dtype=np.float64) for x in X]


def masked_as_missing(X):
    """X with the masked entries of numpy masked arrays (X itself, or the series of a list) as NaN, the
    package's missing value; anything else unchanged. np.asarray would drop the mask and keep the values."""
    if isinstance(X, np.ma.MaskedArray):
        return np.ma.asarray(X, dtype=np.float64).filled(np.nan)
    if isinstance(X, list) and any(isinstance(x, np.ma.MaskedArray) for x in X):
        return [masked_as_missing(x) if isinstance(x, np.ma.MaskedArray) else x for x in X]
    return X


def trim_trailing_nan(x: np.ndarray) -> np.ndarray:
    """(C, T) -> (C, t): x up to its last step with an observed value in any channel (x itself when none)."""
    observed = ~np.isnan(x).all(axis=0)
    if observed.all() or not observed.any():
        return x
    return x[:, : len(observed) - int(np.argmax(observed[::-1]))]


def finite_mean_std(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard deviation over the last axis, NaN ignored, for values of any finite magnitude.

    np.nanstd squares the values, which overflows past about 1e154 (and the mean's sum past
    1e308 / n): the values are first divided by a power of two near their largest magnitude, an
    exact operation, so ordinary data gives bit for bit what np.nanmean and np.nanstd give. An
    all-NaN row gives NaN.
    """
    values = np.asarray(values, dtype=np.float64)
    largest = np.nanmax(np.abs(values), axis=-1, keepdims=True, initial=0.0)
    # 2^(e - 1) for largest = m 2^e, m in [0.5, 1): scaled values stay within [-2, 2], and the power of two
    # stays finite for the largest floats (2^e is 2^1024, infinite, from about 9e307 on).
    scale = np.ldexp(1.0, np.frexp(np.where(np.isfinite(largest) & (largest > 0), largest, 1.0))[1] - 1)
    scaled = values / scale
    with warnings.catch_warnings():  # an all-NaN row is an answer (NaN), not a warning
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(scaled, axis=-1) * scale[..., 0], np.nanstd(scaled, axis=-1) * scale[..., 0]


def target_standardization(y: np.ndarray) -> tuple[float, float]:
    """(mean, std) that regression targets are standardised with: those of `y` (of any finite magnitude), the
    standard deviation 1 where the targets are (nearly) constant."""
    mean, std = (float(v) for v in finite_mean_std(np.asarray(y, dtype=np.float64)))
    return mean, (std if std > 1e-12 else 1.0)


SCALINGS = ("standard", "symlog")


def symlog(x: np.ndarray) -> np.ndarray:
    """sign(x) * log(1 + abs(x)): tames heavy-tailed inputs (counts, prices) and keeps sign and zero."""
    return np.sign(x) * np.log1p(np.abs(x))


class ChannelStandardizer:
    """Per-channel mean/std over every observed value of every training series (NaN ignored).

    scaling="symlog" applies symlog first; with heavy tails (Covid3Month: median series maximum 30,
    largest 20341) plain standardisation squeezes almost every series onto one value.
    """

    def __init__(self, scaling: str = "standard"):
        if scaling not in SCALINGS:
            raise ValueError(f"scaling must be one of {SCALINGS}, got {scaling!r}")
        self.scaling = scaling

    def _pre(self, x: np.ndarray) -> np.ndarray:
        return symlog(x) if self.scaling == "symlog" else x

    def fit(self, cases: list[np.ndarray]) -> ChannelStandardizer:
        values = self._pre(np.concatenate(cases, axis=1))  # (C, total steps)
        mean, std = finite_mean_std(values)  # no overflow for values of magnitude up to float64's limit
        self.mean_ = np.nan_to_num(mean, nan=0.0)
        std = np.nan_to_num(std, nan=1.0)
        # A channel is constant when its spread is no more than float64 rounding of its n values can
        # make (scikit-learn's test for a constant feature, in terms of the std): a constant channel of
        # 1e300 has a std of about 1e284 from rounding alone, while a channel of values near 1e-12 that
        # do vary is kept (no absolute floor).
        observed = np.sum(~np.isnan(values), axis=1)
        constant = std <= observed * np.finfo(np.float64).eps * np.abs(self.mean_)
        self.std_ = np.where(constant, 1.0, std)
        _check_no_channel_erased(values, self.std_, [c.shape[1] for c in cases])
        return self

    def transform(self, cases: list[np.ndarray]) -> list[np.ndarray]:
        return [(self._pre(x) - self.mean_[:, None]) / self.std_[:, None] for x in cases]


#: Below this share of a unit, standardised values round together in float32 (2^-24: its resolution at 1).
FLOAT32_RESOLUTION = 2.0**-24


def _check_no_channel_erased(values: np.ndarray, std: np.ndarray, lengths: list[int]) -> None:
    """ValueError when a few extreme values set a channel's std so large that, standardised, the
    channel's ordinary values (its interquartile range) fall within float32 rounding of one another:
    a single 1e300 among values near 1 would erase the channel for the network."""
    for channel, (row, scale) in enumerate(zip(values, std)):
        observed = row[~np.isnan(row)]
        if len(observed) < 4:
            continue
        low, median, high = np.percentile(observed, [25, 50, 75])
        if 0 < high - low < FLOAT32_RESOLUTION * scale:
            position = int(np.nanargmax(np.abs(row - median)))
            case = int(np.searchsorted(np.cumsum(lengths), position, side="right"))
            step = position - (int(np.sum(lengths[:case])) if case else 0)
            raise ValueError(
                f"X channel {channel} holds extreme values (the largest, {row[position]:.3g}, at case {case}, step "
                f"{step}) against an interquartile range of {high - low:.3g}: standardised with the std they give "
                f"({scale:.3g}), the channel's ordinary values would round to one value in float32 and the network "
                "would see nothing of them; correct or remove those values (NaN marks a missing one), or use "
                "scaling='symlog' for heavy-tailed data"
            )


def fill_missing(x: np.ndarray) -> np.ndarray:
    """Linear interpolation of NaN along time per channel; a channel with no value becomes 0 (its mean)."""
    if not np.isnan(x).any():
        return x
    frame = pd.DataFrame(x.T).interpolate(method="linear", limit_direction="both")
    return frame.fillna(0.0).to_numpy().T


def pad_cases(cases: list[np.ndarray], max_len: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """List of (C, T_i) -> values (n, T, C) float32 zero-padded on the right, valid (n, T) bool."""
    lengths = np.array([c.shape[1] for c in cases])
    t = int(max_len if max_len is not None else lengths.max())
    n_channels = cases[0].shape[0]
    values = np.zeros((len(cases), t, n_channels), dtype=np.float32)
    valid = np.zeros((len(cases), t), dtype=bool)
    for i, c in enumerate(cases):
        values[i, : c.shape[1]] = c.T
        valid[i, : c.shape[1]] = True
    return values, valid
