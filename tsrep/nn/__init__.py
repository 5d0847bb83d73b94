"""Building blocks shared by every backbone (time series, text, vision)."""

from tsrep.nn._compile import stock_ops
from tsrep.nn.attention import MultiHeadAttention
from tsrep.nn.attention_augmented_conv import AttentionAugmentedConv2d
from tsrep.nn.attention_kinds import ATTENTION_KINDS, attention_kind_names, build_attention, register_attention
from tsrep.nn.crossed import CrossedCoAttention
from tsrep.nn.deacon import HEAD_MIXINGS, DeaconHeadMixing, PCALayer
from tsrep.nn.interacting import check_interacting_heads, max_interacting_heads
from tsrep.nn.dilated_conv import CausalDilatedConv1d
from tsrep.nn.dropout import Dropout
from tsrep.nn.evolving import AttentionMapEvolution, pair_mask
from tsrep.nn.norm import MaskedBatchNorm1d, SequenceNorm
from tsrep.nn.pooling import SequencePooling
from tsrep.nn.transformer_layer import TransformerLayer

__all__ = [
    "AttentionAugmentedConv2d",
    "ATTENTION_KINDS",
    "HEAD_MIXINGS",
    "CrossedCoAttention",
    "DeaconHeadMixing",
    "PCALayer",
    "attention_kind_names",
    "build_attention",
    "register_attention",
    "check_interacting_heads",
    "max_interacting_heads",
    "AttentionMapEvolution",
    "CausalDilatedConv1d",
    "Dropout",
    "MaskedBatchNorm1d",
    "MultiHeadAttention",
    "SequenceNorm",
    "SequencePooling",
    "TransformerLayer",
    "pair_mask",
    "stock_ops",
]
