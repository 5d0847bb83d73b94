"""The (EA-)DC-Transformer for time series (Wang et al., "Convolution-enhanced Evolving Attention
Networks", IEEE TPAMI 2023, Sec. 3.3, Eq. 6; design notes in the documentation, "The DC-Transformer block").

Each layer splits its d output channels between an attention branch (round(p * d) channels,
evolving when alpha or beta > 0) and a causal dilated convolution branch (the rest):

    R^i = Concat(H^i, D^i),  H^i = MHA_evolving(X),  D^i = DilatedConv(X)

p = 0 builds no attention, p = 1 no convolution, alpha = beta = 0 no map convolution: the
degenerate models of the paper's tables are exact and count only parameters that run.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from tsrep.backbones.config import DCTransformerConfig, split_width
from tsrep.nn import CausalDilatedConv1d, SequenceNorm, SequencePooling
from tsrep.nn._checks import is_integer
from tsrep.nn.attention_kinds import attention_kind
from tsrep.nn.checkpointing import checkpointed
from tsrep.nn.conv_stem import check_stem_kind, make_stem
from tsrep.nn.patching import Patching, front_end, n_tokens
from tsrep.nn.dropout import Dropout

__all__ = ["DCTransformerBlock", "DCTransformerConfig", "DCTransformerEncoder", "DCTransformerLayer", "split_width"]


class DCTransformerLayer(nn.Module):
    """One EA-DC-Transformer layer: [attention | dilated conv] -> norm -> FFN -> norm.

    Residual connections around the mixing step and the FFN follow TST (the paper omits them
    from its equations "for brevity"). `config` is valid by construction, so nothing is checked here.
    """

    def __init__(self, config: DCTransformerConfig, dilation: int):
        super().__init__()
        d_model, dropout = config.d_model, config.dropout
        d_attn, d_conv = split_width(d_model, config.p)
        self.attention = (
            attention_kind(config.attention).build(
                d_model, d_attn, config.n_heads, config.alpha, config.beta, config.attn_kernel_size, dropout,
                head_mixing=config.head_mixing, deacon_m=config.deacon_m, deacon_settings=config.deacon_settings,
            )
            if d_attn > 0
            else None
        )
        self.conv = CausalDilatedConv1d(d_model, d_conv, config.kernel_size, dilation) if d_conv > 0 else None
        self.act = nn.LeakyReLU()
        self.dropout = Dropout(dropout)
        self.norm1 = SequenceNorm(config.norm, d_model)
        dim_feedforward = config.dim_feedforward or 4 * d_model
        self.ffn = nn.Sequential(
            nn.Linear(d_model, dim_feedforward),
            nn.ReLU(),
            Dropout(dropout),
            nn.Linear(dim_feedforward, d_model),
        )
        self.norm2 = SequenceNorm(config.norm, d_model)

    def forward(
        self, x: torch.Tensor, valid: torch.Tensor | None, prev_logits: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """
        x: (B, T, d); valid: (B, T) bool or None; prev_logits: (B, K, T, T) or None
        returns (B, T, d) and the logits to carry on (prev_logits when this layer has no attention)
        """
        parts = []
        logits = prev_logits
        if self.attention is not None:
            h, new_logits = self.attention(x, valid, prev_logits)
            if new_logits is not None:
                logits = new_logits
            parts.append(h)
        if self.conv is not None:
            parts.append(self.act(self.conv(x.transpose(1, 2))).transpose(1, 2))
        r = torch.cat(parts, dim=-1) if len(parts) > 1 else parts[0]
        x = self.norm1(x + self.dropout(r), valid)
        x = self.norm2(x + self.dropout(self.ffn(x)), valid)
        return x, logits


class DCTransformerBlock(nn.Module):
    """Two layers with the same dilation, then a residual over the block and a norm."""

    def __init__(self, config: DCTransformerConfig, dilation: int, n_layers: int = 2):
        super().__init__()
        self.layers = nn.ModuleList(DCTransformerLayer(config, dilation) for _ in range(n_layers))
        self.norm = SequenceNorm(config.norm, config.d_model)

    def forward(self, x, valid, prev_logits, checkpointing: bool = False):
        """x: (B, T, d) -> (B, T, d), carried logits; checkpointing: keep only each layer's inputs"""
        h = x
        for layer in self.layers:
            if checkpointing:
                h, prev_logits = checkpointed(layer, h, valid, prev_logits)
            else:
                h, prev_logits = layer(h, valid, prev_logits)
        return self.norm(x + h, valid), prev_logits


class DCTransformerEncoder(nn.Module):
    """Input projection, learnable positional encoding and n_blocks blocks with dilation 2^i.

    The hyperparameters are a :class:`~tsrep.backbones.config.DCTransformerConfig`, given as
    `config` or as its fields by keyword (``DCTransformerEncoder(3, 40, d_model=32, n_heads=8)``,
    checked here, once). max_len is the longest series (in steps); there are n_positions learned
    positions (one per token) and longer inputs reuse the last one.

    Options that depend on the data or the machine, not on the network's maths:
    patch_len, patch_stride: PatchTST-style tokens of patch_len steps every patch_stride steps;
    downsample: tokens are means over windows of `downsample` steps (tsrep.nn.patching). With a
    front end, Z has one row per token, N = ceil(T / stride), and token_valid(valid) gives its mask.
    checkpointing: per-layer activation checkpointing (tsrep.nn.checkpointing), keeping only each
    layer's inputs (one carried (B, K, N, N) map per layer) and recomputing the rest in backward.
    autocast_dtype: None, or run forward under torch.autocast with this dtype (torch.bfloat16; with
    torch.float16 the attention maps run in fp32, past fp16's range).
    conv_stem: None, or the channels of a convolutional stem (tsrep.nn.conv_stem) run on the series at
    full resolution before the front end; patch and downsample tokens are then means of its features
    over each window, and without a front end every step's features are a token.
    stem_kind: the stem's design, a name of tsrep.nn.conv_stem.STEM_KINDS ("conv" or "inception").

    forward(x (B, T, C), valid (B, T)) -> Z (B, N, d_model), N = T without a front end;
    forward(x, valid, stem_mean=True) -> (Z, the mean over valid steps of the stem's features (B, conv_stem)),
    for a head that also reads the stem (tsrep.backbones.heads.SeriesModel, stem_skip).
    """

    def __init__(
        self,
        in_channels: int,
        max_len: int,
        config: DCTransformerConfig | None = None,
        *,
        patch_len: int | None = None,
        patch_stride: int | None = None,
        downsample: int | None = None,
        conv_stem: int | None = None,
        stem_kind: str = "conv",
        checkpointing: bool = False,
        autocast_dtype: torch.dtype | None = None,
        **hyperparameters,
    ):
        super().__init__()
        if config is None:
            unknown = sorted(set(hyperparameters) - set(DCTransformerConfig.names()))
            if unknown:
                raise TypeError(
                    f"DCTransformerEncoder got unexpected keyword argument(s) {unknown}; the hyperparameters are "
                    f"the fields of DCTransformerConfig: {', '.join(DCTransformerConfig.names())}"
                )
            config = DCTransformerConfig.from_params(hyperparameters)
        elif hyperparameters:
            raise TypeError(f"pass the hyperparameters in config or by keyword, not both (got {sorted(hyperparameters)})")
        if conv_stem is not None and (not is_integer(conv_stem) or conv_stem < 1):
            raise ValueError(f"conv_stem must be None or a positive integer (the stem's channels), got {conv_stem!r}")
        check_stem_kind(stem_kind)  # also without a stem: a misspelt kind is an error, not silence
        if checkpointing not in (True, False):
            raise ValueError(f"checkpointing must be a bool, got {checkpointing!r}")
        floating = isinstance(autocast_dtype, torch.dtype) and autocast_dtype.is_floating_point
        if not (autocast_dtype is None or floating):
            raise ValueError(f"autocast_dtype must be None or a floating torch.dtype, got {autocast_dtype!r}")
        self.config = config
        # The stem's features are local shapes already: a token averages them over its window.
        self.stem = make_stem(stem_kind, in_channels, conv_stem) if conv_stem is not None else None
        self.patching = front_end(patch_len, patch_stride, downsample)
        if self.stem is not None and self.patching is not None:
            self.patching = Patching(self.patching.patch_len, self.patching.stride, "mean")
        self.checkpointing = bool(checkpointing)
        self.autocast_dtype = autocast_dtype
        self.d_model = config.d_model
        self.max_len = max_len
        self.n_positions = n_tokens(max_len, self.patching.stride) if self.patching is not None else max_len
        step_features = conv_stem if self.stem is not None else in_channels
        in_features = self.patching.out_features(step_features) if self.patching is not None else step_features
        self.input_proj = nn.Linear(in_features, config.d_model)
        self.pos_embedding = nn.Parameter(torch.empty(self.n_positions, config.d_model).uniform_(-0.02, 0.02))
        self.dropout = Dropout(config.dropout)
        self.blocks = nn.ModuleList(DCTransformerBlock(config, dilation=2**i) for i in range(config.n_blocks))

    def token_valid(self, valid: torch.Tensor | None) -> torch.Tensor | None:
        """(B, T) valid steps -> (B, N) valid rows of Z (the same mask without a front end)."""
        return self.patching.token_valid(valid) if self.patching is not None else valid

    def forward(self, x: torch.Tensor, valid: torch.Tensor | None = None, stem_mean: bool = False):
        """x: (B, T, C) standardised, zero at padded steps; valid: (B, T) bool -> (B, N, d) fp32
        [, (B, conv_stem) fp32 with stem_mean, which needs a stem]"""
        if stem_mean and self.stem is None:
            raise ValueError("stem_mean=True needs an encoder with a convolutional stem (conv_stem)")
        if self.autocast_dtype is None:
            out = self._encode(x, valid, stem_mean)
        else:
            # Mixed precision: products and convolutions in autocast_dtype, the attention softmax in fp32
            # (under fp16 the whole attention map: tsrep.nn.attention), and what leaves the encoder in
            # fp32 for the heads and the loss.
            with torch.autocast(x.device.type, dtype=self.autocast_dtype):
                out = self._encode(x, valid, stem_mean)
            out = tuple(t.float() for t in out) if stem_mean else out.float()
        return out

    def _encode(self, x: torch.Tensor, valid: torch.Tensor | None, stem_mean: bool = False):
        features_mean = None
        if self.stem is not None:
            x = self.stem(x, valid)  # (B, T, conv_stem), zero at padded steps
            if stem_mean:
                # (B, conv_stem): the pooling's masked mean; a batch of equal lengths has no mask
                features_mean = x.mean(1) if valid is None else SequencePooling("mean")(x, valid)
        if self.patching is not None:
            x, valid = self.patching(x, valid)  # (B, N, C * P or C), (B, N)
        t = x.shape[1]
        # Steps past max_len (test series longer than any training series) share the last learned
        # position: the embedding table has never seen them, and an untrained row would be noise.
        positions = torch.arange(t, device=x.device).clamp_max(self.n_positions - 1)
        h = self.input_proj(x) * math.sqrt(self.d_model) + self.pos_embedding[positions]
        h = self.dropout(h)
        logits = None
        for block in self.blocks:
            h, logits = block(h, valid, logits, self.checkpointing and self.training)
        return (h, features_mean) if stem_mean else h
