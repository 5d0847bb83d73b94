"""LSTM and GRU encoders (baselines of Tables I-II of Wang et al., "Convolution-enhanced Evolving
Attention Networks", IEEE TPAMI 2023: "a standard implementation in PyTorch").

A stack of n_layers unidirectional torch.nn.LSTM / nn.GRU layers of width d_model, dropout between
layers. Padded steps are removed with pack_padded_sequence, so a series gets the same states alone
as in a padded batch; the outputs at padded steps are zero.

forward(x (B, T, C), valid (B, T)) -> Z (B, T, d_model)
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from tsrep.nn._checks import positive_int

RNNS = {"lstm": nn.LSTM, "gru": nn.GRU}


class RecurrentEncoder(nn.Module):
    def __init__(self, in_channels: int, max_len: int, kind: str = "lstm", d_model: int = 64,
                 n_layers: int = 2, dropout: float = 0.1):
        super().__init__()
        if kind not in RNNS:
            raise ValueError(f"kind must be one of {tuple(RNNS)}, got {kind!r}")
        d_model = positive_int("d_model", d_model)
        n_layers = positive_int("n_layers", n_layers)
        self.kind = kind
        self.d_model = d_model
        self.max_len = max_len
        self.rnn = RNNS[kind](
            in_channels, d_model, num_layers=n_layers, batch_first=True, dropout=dropout if n_layers > 1 else 0.0
        )

    def forward(self, x: torch.Tensor, valid: torch.Tensor | None = None) -> torch.Tensor:
        if valid is None:
            return self.rnn(x)[0]
        lengths = valid.sum(1).clamp_min(1).cpu()
        packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        out, _ = self.rnn(packed)
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=x.shape[1])
        return out
