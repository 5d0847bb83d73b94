"""Time Series Transformer encoder (TST; Zerveas et al., KDD 2021), the "Transformer" baseline of Wang et al.,
"Convolution-enhanced Evolving Attention Networks" (IEEE TPAMI 2023).

Input Linear(C -> d) * sqrt(d), learnable positional encoding, dropout; then n_layers post-norm
encoder layers (tsrep.nn.TransformerLayer): multi-head self-attention (plain: alpha = beta = 0, padded
keys masked) -> dropout -> add -> norm -> FFN (Linear, GELU, dropout, Linear) -> dropout -> add -> norm;
a final GELU and dropout as in TST. TST's BatchNorm is padding-aware norm="batch" (tsrep's measured
default; see EADCTransformerClassifier's `norm`); LayerNorm is norm="layer".

For the tables a "block" of the search space (n in {2..5}) is two encoder layers, as an
EA-DC-Transformer block holds two layers: n_layers = 2 * n_blocks (set by the caller).

forward(x (B, T, C), valid (B, T)) -> Z (B, T, d_model)
"""

from __future__ import annotations

import math
from functools import partial

import torch
import torch.nn.functional as F
from torch import nn

from tsrep.nn._checks import is_integer, positive_int
from tsrep.nn.norm import SequenceNorm
from tsrep.nn.transformer_layer import TransformerLayer
from tsrep.nn.dropout import Dropout


class TSTEncoder(nn.Module):
    def __init__(self, in_channels: int, max_len: int, d_model: int = 64, n_layers: int = 6, n_heads: int = 8,
                 dim_feedforward: int | None = None, dropout: float = 0.1, norm: str = "batch"):
        super().__init__()
        d_model = positive_int("d_model", d_model)
        n_layers = positive_int("n_layers", n_layers)
        if not is_integer(n_heads) or n_heads < 1 or d_model % n_heads:
            raise ValueError(f"n_heads={n_heads!r} must divide d_model={d_model}")
        self.d_model = d_model
        self.max_len = max_len
        self.input_proj = nn.Linear(in_channels, d_model)
        self.pos_embedding = nn.Parameter(torch.empty(max_len, d_model).uniform_(-0.02, 0.02))
        self.dropout = Dropout(dropout)
        self.layers = nn.ModuleList(
            TransformerLayer(
                d_model, n_heads, dim_feedforward or 4 * d_model, pre_norm=False,
                norm_layer=partial(SequenceNorm, norm), act_layer=nn.GELU, dropout=dropout,
            )
            for _ in range(n_layers)
        )

    def forward(self, x: torch.Tensor, valid: torch.Tensor | None = None) -> torch.Tensor:
        positions = torch.arange(x.shape[1], device=x.device).clamp_max(self.max_len - 1)
        h = self.dropout(self.input_proj(x) * math.sqrt(self.d_model) + self.pos_embedding[positions])
        for layer in self.layers:
            h, _ = layer(h, valid)
        return self.dropout(F.gelu(h))
