"""ResNet for time series classification (Wang, Yan and Oates, IJCNN 2017), as an encoder.

n_blocks residual blocks (the original has 3); each block has three convolutions with kernels
8, 5, 3 ("same" padding), each followed by a normalisation and ReLU (the last ReLU after the
shortcut sum), and a shortcut (1x1 convolution + normalisation when the width changes, else the
normalised input). Widths follow the original's 64, 128, 128 pattern: d_model for the first block,
2 * d_model for the others. The original ends with global average pooling; here the pooling is the
harness's (tsrep.nn.SequencePooling, mean over valid steps by default) so that every model shares it.

Padding: after every convolution (and its norm) the padded steps are set back to zero, so a series' last valid
steps see zeros on their right exactly as a lone series does with "same" zero padding; a series
gets the same output alone and in a padded batch. Normalisation is tsrep's SequenceNorm (padding-
aware BatchNorm as in the original with norm="batch", or LayerNorm).

forward(x (B, T, C), valid (B, T)) -> Z (B, T, d_model) with d_model the last block's width
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from tsrep.nn._checks import positive_int
from tsrep.nn.norm import SequenceNorm
from tsrep.nn.dropout import Dropout

KERNELS = (8, 5, 3)


def _zero_padding(h: torch.Tensor, valid: torch.Tensor | None) -> torch.Tensor:
    """h: (B, C, T)"""
    return h if valid is None else h * valid[:, None, :].to(h.dtype)


class _SameConv1d(nn.Conv1d):
    """Conv1d keeping the length: (k - 1) // 2 zeros on the left, the rest on the right (kernel 8: 3 and 4)."""

    def __init__(self, c_in: int, c_out: int, k: int):
        super().__init__(c_in, c_out, k)
        self.pads = ((k - 1) // 2, k - 1 - (k - 1) // 2)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return super().forward(F.pad(h, self.pads))


class ResNetBlock(nn.Module):
    def __init__(self, c_in: int, c_out: int, norm: str, kernels=KERNELS):
        super().__init__()
        widths = [c_in] + [c_out] * len(kernels)
        self.convs = nn.ModuleList(_SameConv1d(widths[i], widths[i + 1], k) for i, k in enumerate(kernels))
        self.norms = nn.ModuleList(SequenceNorm(norm, c_out) for _ in kernels)
        self.shortcut = nn.Conv1d(c_in, c_out, 1) if c_in != c_out else None
        self.shortcut_norm = SequenceNorm(norm, c_out)
        self.act = nn.ReLU()

    @staticmethod
    def _norm(norm, h, valid):
        return norm(h.transpose(1, 2), valid).transpose(1, 2)

    def forward(self, h: torch.Tensor, valid: torch.Tensor | None) -> torch.Tensor:
        """h: (B, C_in, T) -> (B, C_out, T), zero at padded steps"""
        # Padded steps are zeroed after every norm, so that the next convolution sees zeros there.
        out = h
        for i, (conv, norm) in enumerate(zip(self.convs, self.norms)):
            out = self._norm(norm, conv(out), valid)
            if i < len(self.convs) - 1:
                out = self.act(out)
            out = _zero_padding(out, valid)
        short = self.shortcut(h) if self.shortcut is not None else h
        short = self._norm(self.shortcut_norm, short, valid)
        return _zero_padding(self.act(out + short), valid)


class ResNetEncoder(nn.Module):
    def __init__(self, in_channels: int, max_len: int, d_model: int = 64, n_blocks: int = 3,
                 norm: str = "batch", dropout: float = 0.0):
        super().__init__()
        d_model = positive_int("d_model", d_model)
        n_blocks = positive_int("n_blocks", n_blocks)
        widths = [in_channels, d_model] + [2 * d_model] * (n_blocks - 1)
        self.blocks = nn.ModuleList(ResNetBlock(widths[i], widths[i + 1], norm) for i in range(n_blocks))
        self.d_model = widths[-1]
        self.max_len = max_len
        self.dropout = Dropout(dropout)

    def forward(self, x: torch.Tensor, valid: torch.Tensor | None = None) -> torch.Tensor:
        h = x.transpose(1, 2)
        for block in self.blocks:
            h = block(h, valid)
        return self.dropout(h.transpose(1, 2))
