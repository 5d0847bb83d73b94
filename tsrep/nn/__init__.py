"""Building blocks shared by every backbone (time series, text, vision)."""

from tsrep.nn.attention import MultiHeadAttention
from tsrep.nn.dilated_conv import CausalDilatedConv1d
from tsrep.nn.evolving import AttentionMapEvolution, pair_mask
from tsrep.nn.norm import MaskedBatchNorm1d, SequenceNorm
from tsrep.nn.pooling import SequencePooling

__all__ = [
    "AttentionMapEvolution",
    "CausalDilatedConv1d",
    "MaskedBatchNorm1d",
    "MultiHeadAttention",
    "SequenceNorm",
    "SequencePooling",
    "pair_mask",
]
