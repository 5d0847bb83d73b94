"""A convolutional stem: local shape features at full resolution, before series become tokens.

Two convolutions (kernels 7 and 5, "same" padding), each followed by padding-aware BatchNorm and a
ReLU, map the C channels of every step to `channels` features describing the ~11 steps around it.
Patch tokens are then the means of these features over each window (tsrep.nn.patching) instead of
a linear map of the raw steps: a token says which local shapes occur in its window, wherever they
sit in it, as the convolutions and global pooling of a ResNet do (Wang, Yan and Oates, "Time Series
Classification from Scratch with Deep Neural Networks: A Strong Baseline", IJCNN 2017). Early
convolutions before a transformer's tokens are the design of Xiao et al., "Early Convolutions Help
Transformers See Better" (NeurIPS 2021). Measured in the user guide's training recipe page.
"""

from __future__ import annotations

import torch
from torch import nn

from tsrep.nn.norm import SequenceNorm

#: Kernel sizes of the stem's convolutions (odd: "same" padding keeps every step in place).
STEM_KERNELS = (7, 5)


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
