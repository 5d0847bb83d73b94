"""Input masking for masked-reconstruction pretraining (TST; Wang et al., "Convolution-enhanced
Evolving Attention Networks", IEEE TPAMI 2023, Sec. 3.3.2, Eq. 7-8).

TST masks each variable of a series separately with a two-state Markov chain: a masked step stays
masked with probability 1 - p_m and an unmasked one becomes masked with probability p_u, where
p_m = 1 / l_m and p_u = p_m * r / (1 - r). Masked spans are then geometric with mean l_m, unmasked
spans geometric with mean l_m (1 - r) / r, and a share r of the values is masked.

Rather than stepping the chain through time, :func:`geometric_mask` draws the alternating span
lengths directly (geometric variables, by inversion) and places them with a cumulative sum: the
same distribution (the chain starts in its stationary state: masked with probability r), with
tensor operations over the whole batch. The only Python loop is over extra rounds of span draws
when the first round happens not to cover the longest series (rare; see ``_span_rounds``).

Mask convention: True = masked (zeroed in the input, predicted by the reconstruction head).
"""

from __future__ import annotations

import math
import numbers

import torch
from torch import nn

MASKINGS = ("geometric", "bernoulli")


def validate_masking(mask_ratio, mask_mean_length, masking="geometric") -> None:
    """Raise ValueError naming the first bad masking parameter."""
    if isinstance(mask_ratio, bool) or not isinstance(mask_ratio, numbers.Real) or not 0 < mask_ratio < 1:
        raise ValueError(f"mask_ratio must be a number in the open interval (0, 1), got {mask_ratio!r}")
    if masking not in MASKINGS:
        raise ValueError(f"masking must be one of {MASKINGS}, got {masking!r}")
    if masking == "geometric":
        if (
            isinstance(mask_mean_length, bool)
            or not isinstance(mask_mean_length, numbers.Real)
            or not mask_mean_length >= 1
        ):
            raise ValueError(f"mask_mean_length must be a number >= 1, got {mask_mean_length!r}")
        # The unmasked spans have mean l_m (1 - r) / r, and a span lasts at least one step.
        if mask_mean_length * (1 - mask_ratio) / mask_ratio < 1:
            raise ValueError(
                f"mask_ratio={mask_ratio} with mask_mean_length={mask_mean_length} would need unmasked spans "
                "shorter than one step on average; need mask_mean_length * (1 - mask_ratio) / mask_ratio >= 1"
            )


def _geometric(p: float, shape, generator) -> torch.Tensor:
    """Lengths >= 1 with P(L = k) = (1 - p)^(k-1) p, i.e. mean 1 / p (inverse-CDF draw)."""
    if p >= 1:
        return torch.ones(shape, dtype=torch.long)
    u = torch.rand(shape, generator=generator, dtype=torch.float64).clamp_min(1e-300)
    return 1 + torch.floor(torch.log(u) / math.log1p(-p)).long()


def geometric_mask(
    n_sequences: int,
    length: int,
    mask_ratio: float = 0.15,
    mask_mean_length: float = 3.0,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """(n_sequences, length) bool mask; each row an independent TST Markov-chain mask."""
    p_m = 1.0 / mask_mean_length
    p_u = p_m * mask_ratio / (1.0 - mask_ratio)
    start_masked = torch.rand(n_sequences, generator=generator) < mask_ratio  # stationary start
    mean_cycle = mask_mean_length + 1.0 / p_u
    n_pairs = int(math.ceil(1.5 * length / mean_cycle)) + 4
    ends = torch.zeros(n_sequences, 0, dtype=torch.long)
    offset = torch.zeros(n_sequences, dtype=torch.long)
    # Rounds of span draws until every row covers `length` steps; the first round almost always does.
    while True:
        masked_spans = _geometric(p_m, (n_sequences, n_pairs), generator)
        unmasked_spans = _geometric(p_u, (n_sequences, n_pairs), generator)
        # Row order of spans: first the span of the start state, then alternate.
        first = torch.where(start_masked[:, None], masked_spans, unmasked_spans)
        second = torch.where(start_masked[:, None], unmasked_spans, masked_spans)
        spans = torch.stack([first, second], dim=2).reshape(n_sequences, 2 * n_pairs)
        new_ends = offset[:, None] + spans.cumsum(1)
        ends = torch.cat([ends, new_ends], dim=1)
        offset = ends[:, -1]
        if bool((offset >= length).all()):
            break
    steps = torch.arange(length).expand(n_sequences, length).contiguous()
    span_index = torch.searchsorted(ends, steps, right=True)  # which span each step falls in
    in_first_kind = span_index % 2 == 0
    return torch.where(start_masked[:, None], in_first_kind, ~in_first_kind)


def make_mask(
    shape: tuple[int, int, int],
    mask_ratio: float = 0.15,
    mask_mean_length: float = 3.0,
    masking: str = "geometric",
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """(B, T, C) bool mask, True = masked; every variable of every series masked independently."""
    b, t, c = shape
    if masking == "bernoulli":
        return torch.rand(shape, generator=generator) < mask_ratio
    if masking != "geometric":
        raise ValueError(f"masking must be one of {MASKINGS}, got {masking!r}")
    return geometric_mask(b * c, t, mask_ratio, mask_mean_length, generator).view(b, c, t).transpose(1, 2)


def apply_mask(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Masked values set to 0 (the mean, as values are standardised before masking)."""
    return values.masked_fill(mask, 0.0)


def masked_mse(
    prediction: torch.Tensor, target: torch.Tensor, mask: torch.Tensor, valid: torch.Tensor | None = None
) -> torch.Tensor:
    """Eq. 8: mean squared error over the entries that are masked AND at valid (non-padded) steps.

    prediction, target, mask: (B, T, C); valid: (B, T) bool or None. Zero (with a gradient path)
    when no entry counts.
    """
    counted = mask if valid is None else mask & valid[..., None]
    n = counted.sum()
    if int(n) == 0:
        return (prediction * 0.0).sum()
    err = (prediction - target).pow(2) * counted
    return err.sum() / n


class ReconstructionModel(nn.Module):
    """Encoder + linear reconstruction head Linear(d -> C) (Eq. 7).

    forward(x (B, T, C), valid (B, T)) -> (B, T, C)
    """

    def __init__(self, encoder: nn.Module, n_channels: int):
        super().__init__()
        self.encoder = encoder
        self.reconstruct = nn.Linear(encoder.d_model, n_channels)

    def forward(self, x: torch.Tensor, valid: torch.Tensor | None = None) -> torch.Tensor:
        return self.reconstruct(self.encoder(x, valid))
