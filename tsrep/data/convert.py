"""From aeon collections to padded float tensors with a validity mask.

aeon hands estimators either a 3-D array (n_cases, n_channels, n_timepoints) or a list of 2-D
arrays (n_channels, n_timepoints_i). Models see (n_cases, T_max, n_channels), zero after each
series' end, and a (n_cases, T_max) bool mask that is False on padding.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def as_case_list(X) -> list[np.ndarray]:
    """numpy3D or np-list -> list of float64 (n_channels, n_timepoints_i) arrays."""
    if isinstance(X, np.ndarray):
        if X.ndim != 3:
            raise ValueError(f"X must be 3-D (n_cases, n_channels, n_timepoints), got shape {X.shape}")
        return [np.asarray(x, dtype=np.float64) for x in X]
    return [np.asarray(x, dtype=np.float64) for x in X]


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
        with np.errstate(all="ignore"):
            self.mean_ = np.nan_to_num(np.nanmean(values, axis=1), nan=0.0)
            std = np.nan_to_num(np.nanstd(values, axis=1), nan=1.0)
        self.std_ = np.where(std > 1e-8, std, 1.0)
        return self

    def transform(self, cases: list[np.ndarray]) -> list[np.ndarray]:
        return [(self._pre(x) - self.mean_[:, None]) / self.std_[:, None] for x in cases]


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
