"""Pooling a (B, T, d) representation to one vector per series, over valid steps only."""

from __future__ import annotations

import torch
from torch import nn

POOLINGS = ("mean", "max", "flatten")


class SequencePooling(nn.Module):
    """"mean" and "max" over valid steps (any length); "flatten" concatenates all max_len steps.

    out_dim(d) gives the width of the pooled vector.
    """

    def __init__(self, kind: str = "mean", max_len: int | None = None):
        super().__init__()
        if kind not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got {kind!r}")
        if kind == "flatten" and not max_len:
            raise ValueError("pooling='flatten' needs a fixed max_len")
        self.kind = kind
        self.max_len = max_len

    def out_dim(self, d: int) -> int:
        return d * self.max_len if self.kind == "flatten" else d

    def forward(self, z: torch.Tensor, valid: torch.Tensor | None = None) -> torch.Tensor:
        """z: (B, T, d); valid: (B, T) bool or None -> (B, out_dim)"""
        if valid is None:
            valid = torch.ones(z.shape[:2], dtype=torch.bool, device=z.device)
        if self.kind == "mean":
            w = valid.to(z.dtype).unsqueeze(-1)
            return (z * w).sum(1) / w.sum(1).clamp_min(1.0)
        if self.kind == "max":
            return z.masked_fill(~valid.unsqueeze(-1), float("-inf")).amax(1)
        z = z.masked_fill(~valid.unsqueeze(-1), 0.0)
        if z.shape[1] < self.max_len:
            z = torch.nn.functional.pad(z, (0, 0, 0, self.max_len - z.shape[1]))
        return z.reshape(z.shape[0], -1)
