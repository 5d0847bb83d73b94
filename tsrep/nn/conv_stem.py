"""A convolutional stem: local shape features at full resolution, before series become tokens.

Two kinds (STEM_KINDS): "conv", two stacked convolutions with short kernels, and "inception", the first
module of InceptionTime (long kernels side by side). Both give (B, T, channels) features, zero at padded
steps, with the same value at every valid step whether a series is padded in a batch or alone.

"conv": two convolutions (kernels 7 and 5, "same" padding), each followed by padding-aware BatchNorm and a
ReLU, map the C channels of every step to `channels` features describing the ~11 steps around it.
Patch tokens are then the means of these features over each window (tsrep.nn.patching) instead of
a linear map of the raw steps: a token says which local shapes occur in its window, wherever they
sit in it, as the convolutions and global pooling of a ResNet do (Wang, Yan and Oates, "Time Series
Classification from Scratch with Deep Neural Networks: A Strong Baseline", IJCNN 2017). Early
convolutions before a transformer's tokens are the design of Xiao et al., "Early Convolutions Help
Transformers See Better" (NeurIPS 2021). Measured in the user guide's training recipe page.

"inception": the first Inception module of Ismail Fawaz et al., "InceptionTime: Finding AlexNet for Time
Series Classification" (Data Mining and Knowledge Discovery, 2020), on the raw series: convolutions of 32
channels with kernels of 40, 20 and 10 steps side by side (their study of its hyper-parameters found the
kernel length the piece that matters most), beside a max-pool of 3 steps followed by a 1 x 1 convolution;
BatchNorm and ReLU over the 128, then a 1 x 1 convolution to `channels`, BatchNorm and ReLU. It sees 40
steps where "conv" sees 11, at about half the multiply-adds a step. The max-pool reads valid steps only.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from tsrep.nn.norm import SequenceNorm

#: Kernel sizes of the "conv" stem's convolutions (odd: "same" padding keeps every step in place).
STEM_KERNELS = (7, 5)
#: The "inception" stem: kernel sizes of its parallel convolutions, channels of each branch, max-pool width.
INCEPTION_KERNELS = (40, 20, 10)
INCEPTION_BRANCH_CHANNELS = 32
INCEPTION_POOL = 3


class ConvStem(nn.Module):
    """(B, T, C) series, (B, T) valid steps -> (B, T, channels) features, zero at padded steps."""

    def __init__(self, in_channels: int, channels: int):
        super().__init__()
        self.channels = channels
        widths = (in_channels, *(channels for _ in STEM_KERNELS))
        self.convs = nn.ModuleList(
            nn.Conv1d(w_in, w_out, k, padding=k // 2) for w_in, w_out, k in zip(widths, widths[1:], STEM_KERNELS)
        )
        self.norms = nn.ModuleList(SequenceNorm("batch", channels) for _ in STEM_KERNELS)
        self.act = nn.ReLU()

    def forward(self, x: torch.Tensor, valid: torch.Tensor | None = None) -> torch.Tensor:
        """x: (B, T, C), zero at padded steps; valid: (B, T) bool or None -> (B, T, channels)"""
        # Channels first throughout (the convolutions' layout), one transpose in and one out.
        keep = None if valid is None else valid[:, None, :].to(x.dtype)
        h = x.transpose(1, 2)
        for conv, norm in zip(self.convs, self.norms):
            h = self.act(norm.forward_channels_first(conv(h), valid))
            if keep is not None:
                h = h * keep  # padded steps stay zero: the next convolution and the pooling ignore them
        return h.transpose(1, 2)


class InceptionStem(nn.Module):
    """(B, T, C) series, (B, T) valid steps -> (B, T, channels) features, zero at padded steps."""

    def __init__(self, in_channels: int, channels: int):
        super().__init__()
        self.channels = channels
        width = INCEPTION_BRANCH_CHANNELS
        # No bias: BatchNorm follows. Padded in forward ("same" length; see _same_padding).
        self.branches = nn.ModuleList(nn.Conv1d(in_channels, width, k, bias=False) for k in INCEPTION_KERNELS)
        self.pool = nn.MaxPool1d(INCEPTION_POOL, stride=1, padding=INCEPTION_POOL // 2)
        self.pool_conv = nn.Conv1d(in_channels, width, 1, bias=False)
        concatenated = width * (len(INCEPTION_KERNELS) + 1)
        self.norm = SequenceNorm("batch", concatenated)
        self.mix = nn.Conv1d(concatenated, channels, 1)
        self.mix_norm = SequenceNorm("batch", channels)
        self.act = nn.ReLU()

    def forward(self, x: torch.Tensor, valid: torch.Tensor | None = None) -> torch.Tensor:
        """x: (B, T, C), zero at padded steps; valid: (B, T) bool or None -> (B, T, channels)"""
        h = x.transpose(1, 2)  # (B, C, T)
        pooled = self.pool(h) if valid is None else self._pool_valid(h, valid)
        branches = [conv(F.pad(h, _same_padding(conv.kernel_size[0]))) for conv in self.branches]
        h_cat = torch.cat([*branches, self.pool_conv(pooled)], dim=1)  # (B, 128, T)
        keep = None if valid is None else valid[:, None, :].to(x.dtype)
        h = self.act(self.norm.forward_channels_first(h_cat, valid))
        if keep is not None:
            h = h * keep  # padded steps stay zero for the 1 x 1 mix, the norms' statistics and the pooling
        h = self.act(self.mix_norm.forward_channels_first(self.mix(h), valid))
        if keep is not None:
            h = h * keep
        return h.transpose(1, 2)

    def _pool_valid(self, h: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
        """Max over the window's valid steps (h: (B, C, T)): padded steps count as -inf, as the ends of a series
        alone do, and come out as zero (every valid step's window holds the step itself, so its max is finite)."""
        outside = ~valid[:, None, :]
        pooled = self.pool(h.masked_fill(outside, float("-inf")))
        return pooled.masked_fill(outside, 0.0)


def _same_padding(kernel_size: int) -> tuple[int, int]:
    """Zeros (left, right) that keep T steps: an even kernel takes one more on the right, as PyTorch's
    padding="same" does (written out to avoid its warning about the copy it makes). Zeros past the end are
    also what a padded series has there, so padded == alone holds."""
    return (kernel_size - 1) // 2, kernel_size // 2


#: Stem kinds by name (the estimators' ``stem_kind``): (in_channels, channels) -> module.
STEM_KINDS = {"conv": ConvStem, "inception": InceptionStem}


def check_stem_kind(kind) -> None:
    """ValueError naming stem_kind unless `kind` is a name of STEM_KINDS."""
    if kind not in STEM_KINDS:
        raise ValueError(f"stem_kind must be one of {sorted(STEM_KINDS)}, got {kind!r}")


def make_stem(kind: str, in_channels: int, channels: int) -> nn.Module:
    """The stem of this kind (a name of STEM_KINDS) with `channels` output features."""
    check_stem_kind(kind)
    return STEM_KINDS[kind](in_channels, channels)
