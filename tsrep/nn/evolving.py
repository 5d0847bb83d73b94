"""The evolving-attention step (paper 002, Eq. 1 / Eq. 6; DESIGN.md section 1).

    A_in    = alpha * A_logit_prev + (1 - alpha) * S      (S alone in the first layer)
    A_logit = beta * ReLU(Conv2d(A_in)) + (1 - beta) * A_in

The attention heads are the channels of a 2-D convolution over the N x N map (rows are queries,
columns are keys). Seq2seq models (paper 002, Sec. 3.1, Figure 3) need masked convolutions:

- "full":   encoder self-attention, a standard k x k convolution.
- "causal": decoder self-attention. The upper-right corner of the kernel is masked (taps whose
            column offset exceeds their row offset), then the map is shifted one step down and
            right; together: output (i, j) reads rows i-k+1..i and columns j-k+1..j only, and for
            j <= i only cells on or below the diagonal (receptive field 6 for k = 3). No query
            after i and no key after j is ever read.
- "cross":  encoder-decoder attention. Each query row evolves from its own logits over
            neighbouring encoder keys only (a 1 x k kernel): the paper's "left column, shifted by
            one" drawn in our orientation, so no later decoder position leaks into row i.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

MAP_CONV_MASKS = ("full", "causal", "cross")


def pair_mask(valid: torch.Tensor, query_valid: torch.Tensor | None = None) -> torch.Tensor:
    """(B, N) bool of valid keys [and (B, M) of valid queries, default: the keys] -> (B, 1, M, N) bool,
    True where query and key are both valid."""
    rows = valid if query_valid is None else query_valid
    return (rows[:, :, None] & valid[:, None, :])[:, None]


def causal_kernel_mask(kernel_size: int) -> torch.Tensor:
    """(k, k) float, 1 on the taps a decoder map convolution may use (column offset <= row offset)."""
    return torch.tril(torch.ones(kernel_size, kernel_size))


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
    conv_mask : {"full", "causal", "cross"}
        Encoder, decoder self-attention or encoder-decoder map convolution (module docstring).
    """

    def __init__(self, n_heads: int, alpha: float, beta: float, kernel_size: int = 3, conv_mask: str = "full"):
        super().__init__()
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"alpha must be in [0, 1], got {alpha!r}")
        if not 0.0 <= beta <= 1.0:
            raise ValueError(f"beta must be in [0, 1], got {beta!r}")
        if kernel_size < 1 or kernel_size % 2 == 0:
            raise ValueError(f"attn_kernel_size must be a positive odd integer, got {kernel_size!r}")
        if conv_mask not in MAP_CONV_MASKS:
            raise ValueError(f"conv_mask must be one of {MAP_CONV_MASKS}, got {conv_mask!r}")
        self.conv_mask = conv_mask
        self.n_heads = n_heads
        self.alpha = float(alpha)
        self.beta = float(beta)
        self.kernel_size = kernel_size
        self.conv = None
        if self.beta > 0:
            if conv_mask == "cross":
                self.conv = nn.Conv2d(n_heads, n_heads, (1, kernel_size), padding=(0, kernel_size // 2))
            elif conv_mask == "causal":
                # Padding (k-1 above and left, none below or right) is the paper's one-step shift.
                self.conv = nn.Conv2d(n_heads, n_heads, kernel_size, padding=0)
                self.register_buffer("kernel_mask", causal_kernel_mask(kernel_size), persistent=False)
            else:
                self.conv = nn.Conv2d(n_heads, n_heads, kernel_size, padding=kernel_size // 2)

    def _convolve(self, a_in: torch.Tensor) -> torch.Tensor:
        if self.conv_mask != "causal":
            return self.conv(a_in)
        k = self.kernel_size
        # The masked taps are multiplied out on every call, so they stay zero and get no gradient.
        return F.conv2d(F.pad(a_in, (k - 1, 0, k - 1, 0)), self.conv.weight * self.kernel_mask, self.conv.bias)

    def forward(
        self,
        logits: torch.Tensor,
        prev_logits: torch.Tensor | None = None,
        valid: torch.Tensor | None = None,
        query_valid: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """
        logits:      (B, K, M, N) this layer's Q K^T / sqrt(d_head), finite (M = N for self-attention)
        prev_logits: (B, K, M, N) the previous layer's evolved logits, or None in the first layer
        valid:       (B, N) bool, False at padded keys, or None when nothing is padded
        query_valid: (B, M) bool of valid queries when they differ from the keys (cross-attention);
                     None: the rows follow `valid` for self-attention, all valid for cross-attention
        returns:     (B, K, M, N) evolved logits, finite, zero in padded rows and columns
        """
        if prev_logits is not None and self.alpha > 0:
            a_in = self.alpha * prev_logits + (1.0 - self.alpha) * logits
        else:
            a_in = logits
        # Padded rows/columns are zeroed before every convolution so that they look like the
        # convolution's own zero padding: a padded batch then matches each series run alone.
        keep = None
        if valid is not None or query_valid is not None:
            b, _, m, n = a_in.shape
            if valid is None:
                valid = torch.ones(b, n, dtype=torch.bool, device=a_in.device)
            if query_valid is None and m != n:
                query_valid = torch.ones(b, m, dtype=torch.bool, device=a_in.device)
            keep = pair_mask(valid, query_valid)
        if keep is not None:
            a_in = a_in.masked_fill(~keep, 0.0)
        if self.conv is None:
            return a_in
        evolved = self.beta * torch.relu(self._convolve(a_in)) + (1.0 - self.beta) * a_in
        if keep is not None:
            evolved = evolved.masked_fill(~keep, 0.0)
        return evolved

    def extra_repr(self) -> str:
        return (
            f"n_heads={self.n_heads}, alpha={self.alpha}, beta={self.beta}, kernel_size={self.kernel_size}, "
            f"conv_mask={self.conv_mask!r}"
        )
