"""Normalisation over the channel axis of (B, T, C) sequences that ignores padded steps."""

from __future__ import annotations

import torch
from torch import nn

NORMS = ("layer", "batch")


class MaskedBatchNorm1d(nn.BatchNorm1d):
    """BatchNorm over channels whose batch statistics use only valid (non-padded) steps."""

    def forward(self, x: torch.Tensor, valid: torch.Tensor | None = None) -> torch.Tensor:
        """x: (B, T, C); valid: (B, T) bool or None -> (B, T, C)"""
        if not self.training or valid is None:
            # Eval uses running statistics; without padding the stock BatchNorm is exact.
            return super().forward(x.transpose(1, 2)).transpose(1, 2)
        flat = x[valid]  # (n_valid, C): only real steps feed the statistics
        normed = super().forward(flat)
        out = torch.zeros_like(x)
        out[valid] = normed
        return out


class SequenceNorm(nn.Module):
    """LayerNorm or padding-aware BatchNorm over the channels of (B, T, C), chosen by name."""

    def __init__(self, kind: str, dim: int):
        super().__init__()
        if kind not in NORMS:
            raise ValueError(f"norm must be one of {NORMS}, got {kind!r}")
        self.kind = kind
        self.norm = nn.LayerNorm(dim) if kind == "layer" else MaskedBatchNorm1d(dim)

    def forward(self, x: torch.Tensor, valid: torch.Tensor | None = None) -> torch.Tensor:
        """x: (B, T, C); valid: (B, T) bool or None -> (B, T, C)"""
        if self.kind == "layer":
            return self.norm(x)
        return self.norm(x, valid)
