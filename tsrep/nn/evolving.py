"""The evolving-attention step (paper 002, Eq. 1 / Eq. 6; DESIGN.md section 1).

    A_in    = alpha * A_logit_prev + (1 - alpha) * S      (S alone in the first layer)
    A_logit = beta * ReLU(Conv2d(A_in)) + (1 - beta) * A_in

The attention heads are the channels of a 2-D convolution over the N x N map.
"""

from __future__ import annotations

import torch
from torch import nn


def pair_mask(valid: torch.Tensor) -> torch.Tensor:
    """(B, N) bool of valid steps -> (B, 1, N, N) bool, True where query and key are both valid."""
    return (valid[:, :, None] & valid[:, None, :])[:, None]


class AttentionMapEvolution(nn.Module):
    """Residual link and convolutional evolution of pre-softmax attention logits.

    Parameters
    ----------
    n_heads : int
        Number of heads K: channels of the map convolution.
    alpha : float in [0, 1]
        Weight of the previous layer's logits (0: no residual link between maps).
    beta : float in [0, 1]
        Weight of the convolved map (0: no convolution; no convolution parameters are built).
    kernel_size : int, odd
        Size k of the k x k map convolution (3 in the paper; 1 and 5 are its ablations).
    """

    def __init__(self, n_heads: int, alpha: float, beta: float, kernel_size: int = 3):
        super().__init__()
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"alpha must be in [0, 1], got {alpha!r}")
        if not 0.0 <= beta <= 1.0:
            raise ValueError(f"beta must be in [0, 1], got {beta!r}")
        if kernel_size < 1 or kernel_size % 2 == 0:
            raise ValueError(f"attn_kernel_size must be a positive odd integer, got {kernel_size!r}")
        self.n_heads = n_heads
        self.alpha = float(alpha)
        self.beta = float(beta)
        self.kernel_size = kernel_size
        self.conv = (
            nn.Conv2d(n_heads, n_heads, kernel_size, padding=kernel_size // 2) if self.beta > 0 else None
        )

    def forward(
        self,
        logits: torch.Tensor,
        prev_logits: torch.Tensor | None = None,
        valid: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """
        logits:      (B, K, N, N) this layer's Q K^T / sqrt(d_head), finite
        prev_logits: (B, K, N, N) the previous layer's evolved logits, or None in the first layer
        valid:       (B, N) bool, False at padded steps, or None when nothing is padded
        returns:     (B, K, N, N) evolved logits, finite, zero in padded rows and columns
        """
        if prev_logits is not None and self.alpha > 0:
            a_in = self.alpha * prev_logits + (1.0 - self.alpha) * logits
        else:
            a_in = logits
        # Padded rows/columns are zeroed before every convolution so that they look like the
        # convolution's own zero padding: a padded batch then matches each series run alone.
        keep = pair_mask(valid) if valid is not None else None
        if keep is not None:
            a_in = a_in.masked_fill(~keep, 0.0)
        if self.conv is None:
            return a_in
        evolved = self.beta * torch.relu(self.conv(a_in)) + (1.0 - self.beta) * a_in
        if keep is not None:
            evolved = evolved.masked_fill(~keep, 0.0)
        return evolved

    def extra_repr(self) -> str:
        return f"n_heads={self.n_heads}, alpha={self.alpha}, beta={self.beta}, kernel_size={self.kernel_size}"
