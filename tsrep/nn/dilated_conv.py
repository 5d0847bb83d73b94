"""Causal dilated 1-D convolution with weight normalisation (Franceschi et al., T-Loss encoder)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.parametrizations import weight_norm

from tsrep.nn._compile import compiling


class CausalDilatedConv1d(nn.Module):
    """Conv1d over time that sees only the current and earlier steps.

    Left padding of (kernel_size - 1) * dilation keeps the length; because series are padded on
    the right, valid outputs never depend on padding.
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int = 3, dilation: int = 1):
        super().__init__()
        if kernel_size < 1:
            raise ValueError(f"kernel_size must be >= 1, got {kernel_size!r}")
        self.left_pad = (kernel_size - 1) * dilation
        self.conv = weight_norm(nn.Conv1d(in_channels, out_channels, kernel_size, dilation=dilation))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x: (B, C_in, T) -> (B, C_out, T)"""
        x = F.pad(x, (self.left_pad, 0))
        if compiling():
            # The weight g * v / ||v|| in stock operations: torch.func.vmap (ensemble members trained together)
            # has no batching rule for the parametrization's torch._weight_norm and would loop over the members.
            weight = self.conv.parametrizations.weight
            g, v = weight.original0, weight.original1
            w = v * (g / torch.linalg.vector_norm(v, dim=tuple(range(1, v.ndim)), keepdim=True))
            return F.conv1d(x, w, self.conv.bias, dilation=self.conv.dilation)
        return self.conv(x)
