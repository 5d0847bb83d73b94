"""Output heads on the pooled representation (Wang et al., "Convolution-enhanced Evolving Attention Networks",
IEEE TPAMI 2023, Eq. 9-10)."""

from __future__ import annotations

import torch
from torch import nn

from tsrep.backbones.dc_transformer import DCTransformerEncoder
from tsrep.nn import SequencePooling
from tsrep.nn.augmentation import SeriesAugmentation
from tsrep.nn.dropout import Dropout


class SeriesModel(nn.Module):
    """[Augmentation ->] encoder -> pooling -> head. Regression: a linear head (Eq. 9); classification: an
    MLP (Eq. 10). `augmentation` (tsrep.nn.augmentation; None: none) distorts batches in training mode only.

    forward(x (B, T, C), valid (B, T)) -> (B, n_outputs)
    """

    def __init__(
        self, encoder: DCTransformerEncoder, n_outputs: int, task: str, pooling: str, dropout: float,
        augmentation=None,
    ):
        super().__init__()
        self.augment = SeriesAugmentation(augmentation) if augmentation else None
        self.encoder = encoder
        # One pooled row per token: n_positions tokens when the encoder has a patch front end.
        self.pool = SequencePooling(pooling, getattr(encoder, "n_positions", encoder.max_len))
        width = self.pool.out_dim(encoder.d_model)
        if task == "regression":
            self.head = nn.Linear(width, n_outputs)
        else:
            hidden = encoder.d_model
            self.head = nn.Sequential(
                nn.Linear(width, hidden), nn.ReLU(), Dropout(dropout), nn.Linear(hidden, n_outputs)
            )

    def forward(self, x: torch.Tensor, valid: torch.Tensor | None = None) -> torch.Tensor:
        if self.augment is not None:
            x = self.augment(x, valid)
        z = self.encoder(x, valid)
        if valid is not None and z.shape[1] != valid.shape[1]:
            valid = self.encoder.token_valid(valid)  # patch / downsampling front end: tokens, not steps
        return self.head(self.pool(z, valid))
