"""Building blocks shared by every backbone (time series, text, vision)."""

from __future__ import annotations

from tsrep._lazy import lazy_attributes

# Loaded on first use (PEP 562): importing one of these modules (tsrep.nn.patching, say) does not import them all,
# and the command lines' --help does not pay for torch.
__getattr__, __dir__ = lazy_attributes(__name__, {
    "stock_ops": "tsrep.nn._compile",
    "MultiHeadAttention": "tsrep.nn.attention",
    "AttentionAugmentedConv2d": "tsrep.nn.attention_augmented_conv",
    **dict.fromkeys(["ATTENTION_KINDS", "attention_kind_names", "build_attention", "register_attention"],
                    "tsrep.nn.attention_kinds"),
    "CrossedCoAttention": "tsrep.nn.crossed",
    **dict.fromkeys(["HEAD_MIXINGS", "DeaconHeadMixing", "PCALayer"], "tsrep.nn.deacon"),
    **dict.fromkeys(["check_interacting_heads", "max_interacting_heads"], "tsrep.nn.interacting"),
    "CausalDilatedConv1d": "tsrep.nn.dilated_conv",
    "Dropout": "tsrep.nn.dropout",
    **dict.fromkeys(["AttentionMapEvolution", "pair_mask"], "tsrep.nn.evolving"),
    **dict.fromkeys(["MaskedBatchNorm1d", "SequenceNorm"], "tsrep.nn.norm"),
    "SequencePooling": "tsrep.nn.pooling",
    "TransformerLayer": "tsrep.nn.transformer_layer",
})

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
