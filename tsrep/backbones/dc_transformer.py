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
import numbers

import torch
from torch import nn

from tsrep.nn import CausalDilatedConv1d, SequenceNorm
from tsrep.nn.attention_kinds import build_attention, validate_attention_options
from tsrep.nn.checkpointing import checkpointed
from tsrep.nn.deacon import DEACON_DP, DEACON_INNER_STEPS, DEACON_XI
from tsrep.nn.patching import front_end, n_tokens


def split_width(d_model: int, p: float) -> tuple[int, int]:
    """Channels of the attention branch and of the convolution branch for fraction p."""
    d_attn = int(round(p * d_model))
    return d_attn, d_model - d_attn


class DCTransformerLayer(nn.Module):
    """One EA-DC-Transformer layer: [attention | dilated conv] -> norm -> FFN -> norm.

    Residual connections around the mixing step and the FFN follow TST (the paper omits them
    from its equations "for brevity").
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        p: float,
        alpha: float,
        beta: float,
        attn_kernel_size: int,
        kernel_size: int,
        dilation: int,
        dim_feedforward: int,
        dropout: float,
        norm: str,
        attention: str = "evolving",
        head_mixing: str | None = None,
        deacon_m: int | None = None,
        deacon_settings: dict | None = None,
    ):
        super().__init__()
        d_attn, d_conv = split_width(d_model, p)
        self.attention = (
            build_attention(
                attention, d_model, d_attn, n_heads, alpha, beta, attn_kernel_size, dropout,
                head_mixing=head_mixing, deacon_m=deacon_m, deacon_settings=deacon_settings,
            )
            if d_attn > 0
            else None
        )
        self.conv = CausalDilatedConv1d(d_model, d_conv, kernel_size, dilation) if d_conv > 0 else None
        self.act = nn.LeakyReLU()
        self.dropout = nn.Dropout(dropout)
        self.norm1 = SequenceNorm(norm, d_model)
        self.ffn = nn.Sequential(
            nn.Linear(d_model, dim_feedforward),
            nn.ReLU(),
            nn.Dropout(dropout),
            nn.Linear(dim_feedforward, d_model),
        )
        self.norm2 = SequenceNorm(norm, d_model)

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

    def __init__(self, n_layers: int = 2, norm: str = "batch", d_model: int = 64, **layer_kwargs):
        super().__init__()
        self.layers = nn.ModuleList(
            DCTransformerLayer(d_model=d_model, norm=norm, **layer_kwargs) for _ in range(n_layers)
        )
        self.norm = SequenceNorm(norm, d_model)

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

    max_len is the longest series (in steps); there are n_positions learned positions (one per
    token) and longer inputs reuse the last one.
    attention, head_mixing, deacon_m and deacon_settings choose the attention kind of every layer
    (tsrep.nn.attention_kinds: "evolving", "vanilla", "interacting", "interacting-summed",
    "crossed"; DEACON head mixing); deacon_settings holds dP, xi, inner_steps, gha_lr.

    Cost options (none changes the maths of the layers; the documentation's design notes, "Cost"):
    checkpointing: per-layer activation checkpointing (tsrep.nn.checkpointing), keeping only each
    layer's inputs (one carried (B, K, N, N) map per layer) and recomputing the rest in backward.
    autocast_dtype: None, or run forward under torch.autocast with this dtype (torch.bfloat16; with
    torch.float16 the attention maps run in fp32, past fp16's range).
    patch_len, patch_stride: PatchTST-style tokens of patch_len steps every patch_stride steps;
    downsample: tokens are means over windows of `downsample` steps (tsrep.nn.patching). With a
    front end, Z has one row per token, N = ceil(T / stride), and token_valid(valid) gives its mask.

    forward(x (B, T, C), valid (B, T)) -> Z (B, N, d_model), N = T without a front end
    """

    def __init__(
        self,
        in_channels: int,
        max_len: int,
        d_model: int = 64,
        n_blocks: int = 3,
        n_heads: int = 8,
        p: float = 0.25,
        alpha: float = 0.5,
        beta: float = 0.5,
        attn_kernel_size: int = 3,
        kernel_size: int = 3,
        dim_feedforward: int | None = None,
        dropout: float = 0.1,
        norm: str = "batch",
        attention: str = "evolving",
        head_mixing: str | None = None,
        deacon_m: int | None = None,
        deacon_settings: dict | None = None,
        checkpointing: bool = False,
        patch_len: int | None = None,
        patch_stride: int | None = None,
        downsample: int | None = None,
        autocast_dtype: torch.dtype | None = None,
    ):
        super().__init__()
        if checkpointing not in (True, False):
            raise ValueError(f"checkpointing must be a bool, got {checkpointing!r}")
        floating = isinstance(autocast_dtype, torch.dtype) and autocast_dtype.is_floating_point
        if not (autocast_dtype is None or floating):
            raise ValueError(f"autocast_dtype must be None or a floating torch.dtype, got {autocast_dtype!r}")
        self.patching = front_end(patch_len, patch_stride, downsample)
        self.checkpointing = bool(checkpointing)
        self.autocast_dtype = autocast_dtype
        validate_backbone_params(d_model, n_blocks, n_heads, p, alpha, beta, attn_kernel_size, kernel_size, dropout)
        settings = dict(deacon_settings or {})
        validate_attention_options(
            attention, head_mixing, deacon_m, n_heads, split_width(d_model, p)[0],
            settings.get("dP", DEACON_DP), settings.get("xi", DEACON_XI), settings.get("inner_steps", DEACON_INNER_STEPS),
        )
        self.d_model = d_model
        self.max_len = max_len
        self.n_positions = n_tokens(max_len, self.patching.stride) if self.patching is not None else max_len
        in_features = self.patching.out_features(in_channels) if self.patching is not None else in_channels
        self.input_proj = nn.Linear(in_features, d_model)
        self.pos_embedding = nn.Parameter(torch.empty(self.n_positions, d_model).uniform_(-0.02, 0.02))
        self.dropout = nn.Dropout(dropout)
        self.blocks = nn.ModuleList(
            DCTransformerBlock(
                d_model=d_model,
                norm=norm,
                n_heads=n_heads,
                p=p,
                alpha=alpha,
                beta=beta,
                attn_kernel_size=attn_kernel_size,
                kernel_size=kernel_size,
                dilation=2**i,
                dim_feedforward=dim_feedforward or 4 * d_model,
                dropout=dropout,
                attention=attention,
                head_mixing=head_mixing,
                deacon_m=deacon_m,
                deacon_settings=deacon_settings,
            )
            for i in range(n_blocks)
        )

    def token_valid(self, valid: torch.Tensor | None) -> torch.Tensor | None:
        """(B, T) valid steps -> (B, N) valid rows of Z (the same mask without a front end)."""
        return self.patching.token_valid(valid) if self.patching is not None else valid

    def forward(self, x: torch.Tensor, valid: torch.Tensor | None = None) -> torch.Tensor:
        """x: (B, T, C) standardised, zero at padded steps; valid: (B, T) bool -> (B, N, d) fp32"""
        if self.autocast_dtype is None:
            return self._encode(x, valid)
        # Mixed precision: products and convolutions in autocast_dtype, the attention softmax in fp32
        # (under fp16 the whole attention map: tsrep.nn.attention), and what leaves the encoder in
        # fp32 for the heads and the loss.
        with torch.autocast(x.device.type, dtype=self.autocast_dtype):
            return self._encode(x, valid).float()

    def _encode(self, x: torch.Tensor, valid: torch.Tensor | None) -> torch.Tensor:
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
        return h


def _is_int(value) -> bool:
    """An integer, numpy's included (GridSearchCV hands numpy grids' values through); never a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _is_real(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def validate_backbone_params(d_model, n_blocks, n_heads, p, alpha, beta, attn_kernel_size, kernel_size, dropout):
    """Raise ValueError naming the first bad hyperparameter."""
    if not _is_int(d_model) or d_model < 1:
        raise ValueError(f"d_model must be a positive integer, got {d_model!r}")
    if not _is_int(n_blocks) or n_blocks < 1:
        raise ValueError(f"n_blocks must be a positive integer, got {n_blocks!r}")
    if not _is_real(p) or not 0.0 <= p <= 1.0:
        raise ValueError(f"p must be in [0, 1], got {p!r}")
    for name, value in (("alpha", alpha), ("beta", beta)):
        if not _is_real(value) or not 0.0 <= value <= 1.0:
            raise ValueError(f"{name} must be in [0, 1], got {value!r}")
    d_attn, _ = split_width(d_model, p)
    if p > 0 and d_attn == 0:
        raise ValueError(f"p={p} gives no attention channel at d_model={d_model}; use p=0 or a larger p")
    if d_attn > 0 and not _is_int(n_heads):
        raise ValueError(f"n_heads must be a positive integer, got {n_heads!r}")
    if d_attn > 0 and (n_heads < 1 or d_attn % n_heads != 0):
        raise ValueError(
            f"n_heads={n_heads!r} must divide the attention width round(p * d_model) = {d_attn}"
        )
    if not _is_int(attn_kernel_size) or attn_kernel_size < 1 or attn_kernel_size % 2 == 0:
        raise ValueError(f"attn_kernel_size must be a positive odd integer, got {attn_kernel_size!r}")
    if not _is_int(kernel_size) or kernel_size < 1:
        raise ValueError(f"kernel_size must be a positive integer, got {kernel_size!r}")
    if not _is_real(dropout):
        raise ValueError(f"dropout must be in [0, 1), got {dropout!r}")
    if not 0.0 <= dropout < 1.0:
        raise ValueError(f"dropout must be in [0, 1), got {dropout!r}")
