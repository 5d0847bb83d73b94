"""Interacting-head attention (Li and Luo, "An Improved Transformer-Based Neural Machine Translation
Strategy: Interacting-Head Attention", Computational Intelligence and Neuroscience 2022, Eq. 10-13).

Every query head attends with every key head (Eq. 11-12):

    O_ij = softmax(Q_i K_j^T / sqrt(d_k)) V_j,   i, j = 1..h
    O_i  = concat_j O_ij,   O = concat_i O_i W_o          (W_o: h*h*d_v -> d)

The paper's Algorithm 1 ("summed" mode) instead adds the h logit maps of one key head before a
single softmax: O_j = softmax(sum_i Q_i K_j^T / sqrt(d_k)) V_j, and O = concat_j O_j W_o.

Both are ordinary scaled dot-product attention over "virtual heads": for "pairs" the query of
virtual head (i, j) is Q_i and its key and value are K_j and V_j (h*h virtual heads, ordered i*h + j,
so concatenating them gives concat_i concat_j O_ij); for "summed" the query of virtual head j is
sum_i Q_i (h virtual heads). `virtual_heads` builds them, so the attention module keeps one code
path (fused kernel, evolving step, padding mask) for every kind. With evolving attention the map
convolution then runs over the h*h (or h) virtual-head channels.

Head-count rule (Eq. 13): h_max = d / n, with d the attention width and n the mean training
sequence length. For time series n is the number of tokens attention sees (the series length, or
about length / stride with a patch or downsample front end) and d / n is often below 2: the
helpers say so (a warning), they never change n_heads behind the user's back.
"""

from __future__ import annotations

import math
import warnings

import torch

INTERACTING_MODES = ("pairs", "summed")


def n_virtual_heads(n_heads: int, mode: str | None) -> int:
    """Number of attention maps (and of head outputs) of h heads in the given interacting mode."""
    if mode is None or mode == "summed":
        return n_heads
    if mode == "pairs":
        return n_heads * n_heads
    raise ValueError(f"interacting mode must be one of {INTERACTING_MODES} or None, got {mode!r}")


def virtual_heads(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mode: str
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(B, h, N, d) queries, keys, values -> the virtual heads of interacting-head attention.

    pairs:  (B, h*h, N, d) each; virtual head i*h + j has query Q_i, key K_j, value V_j.
    summed: (B, h, N, d) each; virtual head j has query sum_i Q_i, key K_j, value V_j
            (sum_i Q_i K_j^T = (sum_i Q_i) K_j^T: Algorithm 1's summed logits).
    """
    b, h, n, d = q.shape
    if mode == "pairs":
        q = q[:, :, None].expand(b, h, h, n, d).reshape(b, h * h, n, d)
        k = k[:, None].expand(b, h, h, n, d).reshape(b, h * h, n, d)
        v = v[:, None].expand(b, h, h, n, v.shape[-1]).reshape(b, h * h, n, v.shape[-1])
        return q, k, v
    if mode == "summed":
        return q.sum(1, keepdim=True).expand(b, h, n, d), k, v
    raise ValueError(f"interacting mode must be one of {INTERACTING_MODES}, got {mode!r}")


def max_interacting_heads(d: int, mean_length: float) -> int:
    """Eq. 13: h_max = floor(d / n), d the attention width, n the mean training sequence length.

    Can be 0 (d < n: even a single head is smaller than the sequence, the paper's low-rank regime).
    """
    if d < 1:
        raise ValueError(f"the attention width d must be a positive integer, got {d!r}")
    if not mean_length > 0:
        raise ValueError(f"the mean sequence length must be positive, got {mean_length!r}")
    return int(math.floor(d / mean_length))


def check_interacting_heads(n_heads: int, d: int, mean_length: float, warn: bool = True) -> int:
    """Compare n_heads with Eq. 13's h_max; warn (never clamp) when n_heads exceeds it. Returns h_max."""
    h_max = max_interacting_heads(d, mean_length)
    if warn and n_heads > max(h_max, 1):
        warnings.warn(
            f"interacting-head attention with n_heads={n_heads} exceeds the paper's head-count rule "
            f"(Eq. 13) h_max = d / n = {d} / {mean_length:.1f} = {d / mean_length:.2f} -> {h_max} "
            f"(d: attention width round(p * d_model), n: mean tokens per training series). The heads "
            "are kept as given; for time series the rule usually allows a single head.",
            UserWarning,
            stacklevel=3,
        )
    return h_max
