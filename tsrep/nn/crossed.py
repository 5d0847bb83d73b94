"""Crossed co-attention (Li and Jiang, "Two-Headed Monster and Crossed Co-Attention Networks",
AACL-IJCNLP 2020 Student Research Workshop, Sec. 2.2).

Two symmetric branches over the same input. Each sees its own copy of the input, corrupted
independently during training (dropout and a random corruption), and takes its queries from the
other branch's copy:

    left  = MHA_L(Q from x_right, K, V from x_left)
    right = MHA_R(Q from x_left,  K, V from x_right)
    out   = Linear(concat(left, right))              (2 * d_model -> d_model)

In evaluation both copies are the clean input. The attention part has twice the parameters of one
multi-head attention (plus the output projection), as in the paper.

Corruption of a series (the paper swaps two random sub-word tokens with probability 0.5):
- "swap": with probability `corruption_prob` per series, two adjacent valid steps change places;
- "mask": with probability `corruption_prob` per series, a random span of valid steps (about
  `mask_fraction` of the series, at least one step) is set to zero;
- None: dropout only.

In the paper the whole encoder is two parallel branches and only the input embeddings are
corrupted; in tsrep's single-stream backbone every crossed layer makes its two corrupted copies of
its own input (training only), and the branches meet again in the output projection.

With evolving attention each branch evolves its own maps; the carried logits are the two
branches' maps stacked along the head axis, (B, 2K, N, N), left branch first.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from tsrep.nn.attention import MultiHeadAttention

CORRUPTIONS = ("swap", "mask", None)


def corrupt_series(
    x: torch.Tensor, valid: torch.Tensor | None, kind: str | None, prob: float = 0.5, mask_fraction: float = 0.1
) -> torch.Tensor:
    """Randomly corrupt each series of x (B, N, C) in place of a copy; padded steps are never touched."""
    if kind is None or prob <= 0:
        return x
    b, n, _ = x.shape
    lengths = valid.sum(1) if valid is not None else torch.full((b,), n, device=x.device)
    hit = torch.rand(b, device=x.device) < prob
    steps = torch.arange(n, device=x.device)
    if kind == "swap":
        ok = hit & (lengths >= 2)
        # position t in [0, length - 2]; steps t and t + 1 change places
        t = (torch.rand(b, device=x.device) * (lengths - 1).clamp_min(1)).long()
        index = steps.expand(b, n).clone()
        rows = torch.nonzero(ok).squeeze(1)
        index[rows, t[rows]] = t[rows] + 1
        index[rows, t[rows] + 1] = t[rows]
        return torch.gather(x, 1, index[..., None].expand_as(x))
    if kind == "mask":
        span = (lengths.float() * mask_fraction).ceil().long().clamp_min(1)
        start = (torch.rand(b, device=x.device) * (lengths - span + 1).clamp_min(1)).long()
        masked = hit[:, None] & (steps[None] >= start[:, None]) & (steps[None] < (start + span)[:, None])
        return x.masked_fill(masked[..., None], 0.0)
    raise ValueError(f"corruption must be one of {CORRUPTIONS}, got {kind!r}")


class CrossedCoAttention(nn.Module):
    """Two crossed multi-head attention branches; same interface as MultiHeadAttention.

    Parameters
    ----------
    dim_in, d_model, n_heads, alpha, beta, attn_kernel_size, dropout
        As tsrep.nn.MultiHeadAttention, for each branch.
    input_dropout : float
        Dropout on each branch's copy of the input (independent masks), training only.
    corruption : {"swap", "mask", None}
    corruption_prob, mask_fraction : float
    **branch_kwargs
        Passed to both branches (head_mixing, deacon_m, deacon_settings, interacting).
    """

    def __init__(self, dim_in: int, d_model: int, n_heads: int, alpha: float = 0.0, beta: float = 0.0,
                 attn_kernel_size: int = 3, dropout: float = 0.0, input_dropout: float = 0.1,
                 corruption: str | None = "swap", corruption_prob: float = 0.5, mask_fraction: float = 0.1,
                 **branch_kwargs):
        super().__init__()
        if corruption not in CORRUPTIONS:
            raise ValueError(f"corruption must be one of {CORRUPTIONS}, got {corruption!r}")
        if not 0.0 <= input_dropout < 1.0:
            raise ValueError(f"input_dropout must be in [0, 1), got {input_dropout!r}")
        if not 0.0 <= corruption_prob <= 1.0:
            raise ValueError(f"corruption_prob must be in [0, 1], got {corruption_prob!r}")
        args = (dim_in, d_model, n_heads, alpha, beta, attn_kernel_size, dropout)
        self.left = MultiHeadAttention(*args, **branch_kwargs)
        self.right = MultiHeadAttention(*args, **branch_kwargs)
        self.proj = nn.Linear(2 * d_model, d_model)
        self.input_dropout = input_dropout
        self.corruption = corruption
        self.corruption_prob = corruption_prob
        self.mask_fraction = mask_fraction

    @property
    def is_evolving(self) -> bool:
        return self.left.is_evolving

    def branch_inputs(self, x: torch.Tensor, valid: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        """Two independently corrupted copies of x in training; x itself (twice) in evaluation."""
        if not self.training:
            return x, x
        copies = []
        for _ in range(2):
            c = F.dropout(x, self.input_dropout, True)
            copies.append(corrupt_series(c, valid, self.corruption, self.corruption_prob, self.mask_fraction))
        return copies[0], copies[1]

    def forward_pair(self, x_left: torch.Tensor, x_right: torch.Tensor, valid: torch.Tensor | None = None,
                     prev_logits: torch.Tensor | None = None,
                     need_logits: bool = False) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """The two branches on given inputs (no corruption): (left (B, N, d_model), right (B, N, d_model), logits)."""
        prev_l, prev_r = prev_logits.chunk(2, dim=1) if prev_logits is not None else (None, None)
        left, logits_l = self.left(x_left, valid, prev_l, need_logits, query=x_right, query_valid=valid)
        right, logits_r = self.right(x_right, valid, prev_r, need_logits, query=x_left, query_valid=valid)
        logits = torch.cat([logits_l, logits_r], dim=1) if logits_l is not None else None
        return left, right, logits

    def forward(self, x: torch.Tensor, valid: torch.Tensor | None = None, prev_logits: torch.Tensor | None = None,
                need_logits: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
        """x: (B, N, dim_in) -> (B, N, d_model), carried logits (B, 2K, N, N) or None"""
        x_left, x_right = self.branch_inputs(x, valid)
        left, right, logits = self.forward_pair(x_left, x_right, valid, prev_logits, need_logits)
        return self.proj(torch.cat([left, right], dim=-1)), logits
