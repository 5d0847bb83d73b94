"""Patch and downsampling front ends: long series become fewer tokens (PatchTST-style).

The evolving-attention maps are (B, K, N, N): at 1751 steps one map of a batch of 16 in fp32 is
1.6 GB and its 3 x 3 convolution about 56 GFLOP per layer. Turning windows of steps into tokens
divides N by the stride and the map cost by its square.

    "patch": token j = the C * P values of steps [j*S, j*S + P) flattened (channel-major), projected
             by the encoder's input Linear(C * P -> d); overlapping when S < P (PatchTST).
    "mean":  token j = the mean over the valid steps of [j*S, j*S + P) (downsampling by S when
             P = S); the encoder's input projection stays Linear(C -> d).

Tokens start at every multiple of S inside the series, so a series of L steps gives ceil(L / S)
tokens and the last ones may reach past its end. Padding (decided here; PatchTST repeats the last
value instead): steps past the end are zeros, which is what the padded batch holds at padded steps
(standardised series are zero-padded on the right), and a token is valid when ANY of its steps is
valid (equivalently, its first step: padding is on the right), so no step of a series is ever
dropped. A series then gives exactly the same tokens alone as in a padded batch: "patch" sees the
same zeros either way, "mean" averages over valid steps only.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from tsrep.nn._checks import is_integer

PATCH_MODES = ("patch", "mean")
AUTO = "auto"


def n_tokens(length: int, stride: int) -> int:
    """Tokens of a series of `length` steps: one per start j * stride < length."""
    return max(1, math.ceil(length / stride))


class Patching(nn.Module):
    """(B, T, C) series and (B, T) valid steps -> (B, ceil(T / S), C * P or C) tokens and (B, N) valid tokens.

    Parameters
    ----------
    patch_len : int >= 1
        Steps P per token.
    stride : int in [1, patch_len] or None
        Steps S between token starts (None: patch_len, non-overlapping windows).
    mode : {"patch", "mean"}
    """

    def __init__(self, patch_len: int, stride: int | None = None, mode: str = "patch"):
        super().__init__()
        stride = patch_len if stride is None else stride
        validate_patching(patch_len, stride, mode)
        self.patch_len, self.stride, self.mode = int(patch_len), int(stride), mode

    def out_features(self, in_channels: int) -> int:
        return in_channels * self.patch_len if self.mode == "patch" else in_channels

    def token_valid(self, valid: torch.Tensor | None) -> torch.Tensor | None:
        """(B, T) valid steps -> (B, N) valid tokens: the token's first step is valid (any step is)."""
        return None if valid is None else valid[:, :: self.stride]

    def forward(self, x: torch.Tensor, valid: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor | None]:
        """x: (B, T, C), zero at padded steps; valid: (B, T) bool or None -> tokens (B, N, F), valid (B, N) or None"""
        b, t, c = x.shape
        n = n_tokens(t, self.stride)
        extra = (n - 1) * self.stride + self.patch_len - t  # zero steps past the end (never negative)
        if self.mode == "patch":
            windows = F.pad(x, (0, 0, 0, extra)).unfold(1, self.patch_len, self.stride)  # (B, N, C, P)
            return windows.reshape(b, n, c * self.patch_len), self.token_valid(valid)
        # Window sums by a pooling kernel (divisor 1), not an unfolded (B, N, C, P) copy: the windows
        # overlap, and the copy and its backward cost more than the stem that feeds them.
        steps = torch.ones(b, 1, t, dtype=x.dtype, device=x.device) if valid is None else valid[:, None].to(x.dtype)
        values = x.transpose(1, 2) if valid is None else x.transpose(1, 2) * steps  # (B, C, T)
        sums = window_sums(F.pad(values, (0, extra)), self.patch_len, self.stride)  # (B, C, N)
        count = window_sums(F.pad(steps, (0, extra)), self.patch_len, self.stride).clamp_min(1.0)  # (B, 1, N)
        return (sums / count).transpose(1, 2), self.token_valid(valid)

    def extra_repr(self) -> str:
        return f"patch_len={self.patch_len}, stride={self.stride}, mode={self.mode!r}"


def window_sums(x: torch.Tensor, size: int, stride: int) -> torch.Tensor:
    """(B, C, T) -> (B, C, N): sums over windows of `size` steps every `stride` steps (no padding)."""
    return F.avg_pool2d(x[:, :, None], (1, size), (1, stride), divisor_override=1)[:, :, 0]


def validate_patching(patch_len, stride, mode="patch") -> None:
    """Raise ValueError naming the bad patch parameter."""
    if not is_integer(patch_len) or patch_len < 1:
        raise ValueError(f"patch_len must be a positive integer, got {patch_len!r}")
    if not is_integer(stride) or not 1 <= stride <= patch_len:
        raise ValueError(
            f"patch_stride must be an integer in [1, patch_len={patch_len}] (no step may be skipped), got {stride!r}"
        )
    if mode not in PATCH_MODES:
        raise ValueError(f"patch mode must be one of {PATCH_MODES}, got {mode!r}")


def front_end(patch_len, patch_stride, downsample) -> Patching | None:
    """The Patching module of the encoder options (None: one token per step); names the bad option."""
    if downsample is not None:
        if patch_len is not None or patch_stride is not None:
            raise ValueError(
                f"downsample={downsample!r} and patch_len={patch_len!r}/patch_stride={patch_stride!r} are "
                "two front ends; set one of them"
            )
        if not is_integer(downsample) or downsample < 1:
            raise ValueError(f"downsample must be a positive integer or None, got {downsample!r}")
        return Patching(downsample, downsample, "mean") if downsample > 1 else None
    if patch_len is None:
        if patch_stride is not None:
            raise ValueError(f"patch_stride={patch_stride!r} needs patch_len; set patch_len or leave patch_stride=None")
        return None
    return Patching(patch_len, patch_stride, "patch")


#: patch_len="auto": series shorter than this keep one token per step ...
AUTO_MIN_LENGTH = 32
#: ... longer ones get overlapping patches of 2 S steps every S steps, S = max(AUTO_MIN_STRIDE,
#: ceil(T / max_tokens)): at least 4 steps per stride, at most about max_tokens tokens per series
#: (the estimators' ``max_tokens``; "auto" resolves it with :func:`resolve_max_tokens`).
AUTO_MIN_STRIDE = 4
AUTO_MAX_TOKENS = 64
#: max_tokens="auto": a classifier takes AUTO_FEW_TOKENS tokens, a regressor AUTO_MAX_TOKENS.
AUTO_FEW_TOKENS = 32


def resolve_max_tokens(max_tokens, task: str) -> int:
    """The token budget of ``patch_len="auto"``: `max_tokens` itself, or for "auto" AUTO_FEW_TOKENS for a
    classifier and AUTO_MAX_TOKENS for a regressor.

    Fewer tokens suited the panel's classifiers of 70 cases or more at about half the fit time, and its
    smallest sets once window warping joined their augmentation; regressors were not measured (the figures
    are in the user guide's training recipe page).
    """
    if max_tokens != AUTO:
        return max_tokens
    return AUTO_FEW_TOKENS if task == "classification" else AUTO_MAX_TOKENS


def auto_patch(n_channels: int, max_len: int, max_tokens: int = AUTO_MAX_TOKENS) -> tuple[int, int] | None:
    """The token rule of ``patch_len="auto"``: (patch_len, stride), or None for one token per step.

    Short series (fewer than AUTO_MIN_LENGTH steps, e.g. JapaneseVowels' 7-29) keep the paper's
    per-step tokens; longer ones get half-overlapping patches whose stride grows with the length so
    that a series gives at most about `max_tokens` tokens: the N x N attention maps then stay
    small whatever the length. `n_channels` does not enter: a patch token holds all channels.
    """
    if max_len < AUTO_MIN_LENGTH:
        return None
    stride = max(AUTO_MIN_STRIDE, math.ceil(max_len / max_tokens))
    return 2 * stride, stride


#: conv_stem="auto": a classifier gets a stem of this many channels when its tokens are patches ...
AUTO_STEM_CHANNELS = 64
#: ... and its training set has at least this many cases.
AUTO_STEM_MIN_CASES = 32


def resolve_conv_stem(conv_stem, patch_len, task: str, n_cases: int) -> int | None:
    """Channels of the convolutional stem (tsrep.nn.conv_stem), or None for none: `conv_stem` itself, or
    for "auto" AUTO_STEM_CHANNELS when `task` is "classification", the resolved `patch_len` makes patch
    tokens (long series) and the training set has at least AUTO_STEM_MIN_CASES cases; else None.

    The stem gained on the panel's larger training sets and lost on the three smallest, where two more
    convolution layers fit a few dozen series too closely (hence the case threshold), and it made a
    regressor worse (the figures are in the user guide's training recipe page).
    """
    if conv_stem != AUTO:
        return conv_stem
    takes_stem = patch_len is not None and task == "classification" and n_cases >= AUTO_STEM_MIN_CASES
    return AUTO_STEM_CHANNELS if takes_stem else None


def resolve_front_end(
    patch_len, patch_stride, downsample, n_channels: int, max_len: int, per_step_only=False,
    max_tokens: int = AUTO_MAX_TOKENS,
):
    """(patch_len, patch_stride) for the encoder: "auto" resolved by :func:`auto_patch` on the training data
    with at most about `max_tokens` tokens (one token per step when `per_step_only`, e.g. for masked
    pretraining, or when downsample is set).

    ValueError when an explicit patch_len or downsample is longer than every training series: each
    series would be a single token, mostly zero padding, and attention would have nothing to relate.
    """
    for name, window in (("patch_len", patch_len), ("downsample", downsample)):
        if is_integer(window) and window > max_len:
            raise ValueError(
                f"{name}={window} is longer than every training series (the longest has {max_len} steps): each "
                f"series would be one token of mostly zero padding; use {name} <= {max_len}"
                + (", or patch_len='auto'" if name == "patch_len" else "")
            )
    if patch_len != AUTO:
        return patch_len, patch_stride
    if per_step_only or downsample is not None:
        return None, None
    return auto_patch(n_channels, max_len, max_tokens) or (None, None)
