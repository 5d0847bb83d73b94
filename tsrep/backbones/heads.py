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
    stem_skip: the head also reads the mean over valid steps of the encoder's stem features, a path past the
    transformer like the global-average heads of ResNet (Wang, Yan and Oates 2017) and InceptionTime (Ismail
    Fawaz et al. 2020); no effect when the encoder has no stem.

    forward(x (B, T, C), valid (B, T)) -> (B, n_outputs)
    """

    def __init__(
        self, encoder: DCTransformerEncoder, n_outputs: int, task: str, pooling: str, dropout: float,
        augmentation=None, stem_skip: bool = False,
    ):
        super().__init__()
        self.augment = SeriesAugmentation(augmentation) if augmentation else None
        self.encoder = encoder
        # One pooled row per token: n_positions tokens when the encoder has a patch front end.
        self.pool = SequencePooling(pooling, getattr(encoder, "n_positions", encoder.max_len))
        width = self.pool.out_dim(encoder.d_model)
        self.stem_skip = bool(stem_skip) and getattr(encoder, "stem", None) is not None
        if self.stem_skip:
            width += encoder.stem.channels
        if task == "regression":
            self.head = nn.Linear(width, n_outputs)
        else:
            hidden = encoder.d_model
            self.head = nn.Sequential(
                nn.Linear(width, hidden), nn.ReLU(), Dropout(dropout), nn.Linear(hidden, n_outputs)
            )

    def forward(self, x: torch.Tensor, valid: torch.Tensor | None = None) -> torch.Tensor:
        """x: (B, T, C) standardised, zero at padded steps; valid: (B, T) bool or None -> (B, n_outputs)"""
        if self.augment is not None:
            x = self.augment(x, valid)
        if self.stem_skip:
            z, stem_mean = self.encoder(x, valid, stem_mean=True)  # (B, N, d), (B, conv_stem)
        else:
            z, stem_mean = self.encoder(x, valid), None
        if valid is not None and z.shape[1] != valid.shape[1]:
            valid = self.encoder.token_valid(valid)  # patch / downsampling front end: tokens, not steps
        pooled = self.pool(z, valid)  # (B, width of the pooling)
        if stem_mean is not None:
            pooled = torch.cat([pooled, stem_mean], dim=-1)
        return self.head(pooled)
