"""Dilated causal convolution encoder of T-Loss (Franceschi, Dieuleveut and Jaggi, NeurIPS 2019).

The "Dilated Conv" baseline of Wang et al., "Convolution-enhanced Evolving Attention Networks" (TPAMI 2023;
Tables I-II, "follows the implementation of [26]"):
n_blocks causal convolution blocks with dilation 1, 2, 4, ...; each block is two weight-normalised
causal convolutions (kernel 3) with LeakyReLU, and a residual connection (1x1 convolution when the
width changes). T-Loss's own head (max pooling + linear) is replaced by the harness's pooling and
head so that every model shares them, and it is trained supervised here like every other model.
Causal convolutions on right-padded series never see padding from valid steps.

forward(x (B, T, C), valid (B, T)) -> Z (B, T, d_model)
"""

from __future__ import annotations

import torch
from torch import nn

from tsrep.nn._checks import positive_int
from tsrep.nn.dilated_conv import CausalDilatedConv1d
from tsrep.nn.dropout import Dropout


class CausalConvBlock(nn.Module):
    def __init__(self, c_in: int, c_out: int, kernel_size: int, dilation: int, dropout: float):
        super().__init__()
        self.net = nn.Sequential(
            CausalDilatedConv1d(c_in, c_out, kernel_size, dilation),
            nn.LeakyReLU(),
            Dropout(dropout),
            CausalDilatedConv1d(c_out, c_out, kernel_size, dilation),
            nn.LeakyReLU(),
            Dropout(dropout),
        )
        self.residual = nn.Conv1d(c_in, c_out, 1) if c_in != c_out else None

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        """h: (B, C_in, T) -> (B, C_out, T)"""
        res = h if self.residual is None else self.residual(h)
        return self.net(h) + res


class CausalCNNEncoder(nn.Module):
    def __init__(self, in_channels: int, max_len: int, d_model: int = 64, n_blocks: int = 3,
                 kernel_size: int = 3, dropout: float = 0.1):
        super().__init__()
        d_model = positive_int("d_model", d_model)
        n_blocks = positive_int("n_blocks", n_blocks)
        widths = [in_channels] + [d_model] * n_blocks
        self.blocks = nn.Sequential(
            *(CausalConvBlock(widths[i], widths[i + 1], kernel_size, 2**i, dropout) for i in range(n_blocks))
        )
        self.d_model = d_model
        self.max_len = max_len

    def forward(self, x: torch.Tensor, valid: torch.Tensor | None = None) -> torch.Tensor:
        return self.blocks(x.transpose(1, 2)).transpose(1, 2)
