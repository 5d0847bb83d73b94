"""Training-time data augmentation of series batches: window warping, window slicing, scaling, jitter.

Small time-series training sets (20-100 cases) let a network memorise TRAIN within a few hundred
steps; random, label-preserving distortions of each batch keep it learning shapes instead. The three
transforms are the ones the time-series augmentation literature found safe across the UCR archive
(Iwana and Uchida, "An empirical survey of data augmentation for time series classification with
neural networks", PLOS ONE 2021):

    "window_warp":  a random window of 10 % of each series played at half or twice its speed (drawn
                    per case), the series then resampled to its own length (Le Guennec et al., below);
    "window_slice": a random 90 % window of each series, stretched back to the series' own length
                    by linear interpolation (Le Guennec, Malinowski and Tavenard, "Data augmentation
                    for time series classification using convolutional neural networks", ECML/PKDD
                    workshop AALTD 2016);
    "scaling":      each case and channel multiplied by a factor drawn from N(1, 0.1^2);
    "jitter":       N(0, 0.05^2) noise added to every step (Um et al., "Data augmentation of wearable
                    sensor data for Parkinson's disease monitoring using convolutional neural
                    networks", ICMI 2017).

Magnitudes are in the units the network sees (standardised series: one unit is one standard
deviation of the channel). The transforms run in that order whatever order they are named in, only
in training mode, and draw from torch's global generator (seeded by the estimator's random_state).
Padding is respected: each series is sliced and stretched within its own valid steps, and padded
steps stay zero, so unequal-length batches are augmented as each series would be alone.
"""

from __future__ import annotations

import torch
from torch import nn

AUGMENTATIONS = ("window_warp", "window_slice", "scaling", "jitter")
WARP_FRACTION = 0.1
WARP_SCALES = (0.5, 2.0)
WINDOW_FRACTION = 0.9
SCALING_STD = 0.1
JITTER_STD = 0.05


#: All three, as one string (names joined by "+") so that it survives YAML, JSON and the command line unchanged.
DEFAULT_AUGMENTATION = "window_warp+window_slice+scaling+jitter"
#: The estimators' ``augmentation="auto"``: augment when TRAIN has fewer cases than this, not otherwise ...
AUTO = "auto"
AUTO_MAX_CASES = 100
#: ... and slice windows only from series at least this long (the length from which "auto" tokens are
#: patches); shorter series get scaling and jitter alone.
AUTO_MIN_SLICE_LENGTH = 32


def resolve_augmentation(augmentation, n_cases: int, min_length: int | None = None, conv_stem: int | None = None):
    """The augmentation a fit on `n_cases` training cases uses: "auto" resolved, anything else as given.

    `min_length` is the length of the shortest training series (None: long enough to slice);
    `conv_stem` the width of the model's convolutional stem (None: the model has none).

    Augmenting helps small training sets and leaves larger ones underfit within the same step budget (hence
    the case threshold); short series lose whole steps to a slice (scaling and jitter alone below
    AUTO_MIN_SLICE_LENGTH steps); with a convolutional stem augmenting cost accuracy, so "auto" augments only
    models without one. The figures are in the user guide's training recipe page.
    """
    if isinstance(augmentation, str) and augmentation == AUTO:
        if n_cases >= AUTO_MAX_CASES or conv_stem:
            return None
        if min_length is not None and min_length < AUTO_MIN_SLICE_LENGTH:
            return "scaling+jitter"
        return DEFAULT_AUGMENTATION
    return augmentation


def validate_augmentation(augmentation) -> tuple[str, ...]:
    """None, names joined by "+" or a sequence of names -> the names in application order; ValueError
    naming the bad one."""
    if augmentation is None or (isinstance(augmentation, str) and augmentation == AUTO):
        return ()
    names = augmentation.split("+") if isinstance(augmentation, str) else augmentation
    try:
        names = tuple(names)
    except TypeError:
        raise ValueError(
            f"augmentation must be None, 'auto', names from {AUGMENTATIONS} joined by '+' or a sequence of them, "
            f"got {augmentation!r}"
        ) from None
    for name in names:
        if name not in AUGMENTATIONS:
            raise ValueError(f"augmentation: unknown transform {name!r}; choose from {AUGMENTATIONS}")
    if len(set(names)) != len(names):
        raise ValueError(f"augmentation names a transform twice: {augmentation!r}")
    return tuple(name for name in AUGMENTATIONS if name in names)


def window_slice(x: torch.Tensor, lengths: torch.Tensor, fraction: float = WINDOW_FRACTION) -> torch.Tensor:
    """x: (B, T, C), lengths: (B,) valid steps per case -> (B, T, C), each series' random window of
    round(fraction * length) steps resampled onto its own length (steps past it: left as they are)."""
    b, t, _ = x.shape
    lengths = lengths.to(x.device)
    keep = torch.clamp(torch.round(lengths.to(torch.float32) * fraction), min=1.0)
    start = torch.floor(torch.rand(b, device=x.device) * (lengths.to(torch.float32) - keep + 1))
    # Output step j of a series of L steps reads the window at start + j * (keep - 1) / (L - 1).
    step = (keep - 1) / torch.clamp(lengths.to(torch.float32) - 1, min=1.0)
    position = start[:, None] + torch.arange(t, device=x.device, dtype=torch.float32)[None] * step[:, None]
    return read_at(x, position, lengths)


def read_at(x: torch.Tensor, position: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """x: (B, T, C) read at fractional steps position (B, T') by linear interpolation -> (B, T', C); positions
    are clamped to each series' valid steps [0, length - 1], so padding is never read."""
    last = (lengths - 1)[:, None]
    low = torch.minimum(position.floor().long(), last).clamp_min(0)
    high = torch.minimum(low + 1, last).clamp_min(0)
    weight = (position - low.to(torch.float32)).clamp(0.0, 1.0)[:, :, None].to(x.dtype)
    take = lambda index: torch.gather(x, 1, index[:, :, None].expand(-1, -1, x.shape[2]))  # noqa: E731
    return take(low) * (1 - weight) + take(high) * weight


def window_warp(
    x: torch.Tensor, lengths: torch.Tensor, fraction: float = WARP_FRACTION, scales: tuple = WARP_SCALES
) -> torch.Tensor:
    """x: (B, T, C), lengths: (B,) valid steps per case -> (B, T, C): in each series a random window of
    round(fraction * length) steps (at least 2) is stretched by a factor drawn from `scales` (2: played at half
    speed, 0.5: at twice the speed), and the warped series is resampled onto its own length."""
    b, t, _ = x.shape
    lengths = lengths.to(x.device)
    length = lengths.to(torch.float32)
    width = torch.clamp(torch.round(length * fraction), min=2.0)
    start = torch.floor(torch.rand(b, device=x.device) * (length - width))
    factor = torch.tensor(scales, device=x.device)[torch.randint(len(scales), (b,), device=x.device)]
    warped_length = length - width + width * factor
    # Output step j reads the warped series at u = j (warped_length - 1) / (length - 1); u maps back to a
    # source position: unchanged before the window, (u - start) / factor into it, shifted after it.
    u = torch.arange(t, device=x.device, dtype=torch.float32)[None] * (
        (warped_length - 1) / torch.clamp(length - 1, min=1.0)
    )[:, None]
    start, width, factor = start[:, None], width[:, None], factor[:, None]
    source = torch.where(
        u < start, u, torch.where(u < start + width * factor, start + (u - start) / factor, u - width * factor + width)
    )
    return read_at(x, source, lengths)


class SeriesAugmentation(nn.Module):
    """Random label-preserving distortions of a training batch (identity in eval mode).

    forward(x (B, T, C), valid (B, T) bool or None) -> (B, T, C), zero at padded steps
    """

    def __init__(self, augmentation=DEFAULT_AUGMENTATION):
        super().__init__()
        self.names = validate_augmentation(augmentation)

    def forward(self, x: torch.Tensor, valid: torch.Tensor | None = None) -> torch.Tensor:
        if not self.training or not self.names:
            return x
        b, t, c = x.shape
        lengths = torch.full((b,), t, device=x.device) if valid is None else valid.sum(1)
        if "window_warp" in self.names:
            x = window_warp(x, lengths)  # padded steps are zeroed once, at the end
        if "window_slice" in self.names:
            x = window_slice(x, lengths)
        if "scaling" in self.names:
            x = x * (1 + SCALING_STD * torch.randn(b, 1, c, device=x.device, dtype=x.dtype))
        if "jitter" in self.names:
            x = x + JITTER_STD * torch.randn_like(x)
        if valid is not None:
            x = x * valid[:, :, None].to(x.dtype)
        return x

    def extra_repr(self) -> str:
        return f"names={self.names}"
