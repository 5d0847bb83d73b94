"""Attention-augmented convolution (Bello et al., "Attention Augmented Convolutional Networks", ICCV 2019)
with evolving attention maps (Wang et al., "Convolution-enhanced Evolving Attention Networks", Sec. 3.4).

    Y = Concat(Conv2d(X), MHA(flatten(X)))        # conv channels | attention channels, half each by default

Self-attention runs over the H*W pixels of the feature map as tokens, so it sees the whole image in one
layer while the k x k convolution sees its window. Its logits carry Bello et al.'s relative positions:

    S[i, j] = (q_i . k_j + q_i . r^H_{h_j - h_i} + q_i . r^W_{w_j - w_i}) / sqrt(d_head)

with learned height and width embeddings r^H (2H - 1 offsets) and r^W (2W - 1), shared by the heads, so
attention knows where a key is relative to its query and commutes with translations. The attention is
tsrep.nn.attention.MultiHeadAttention, given these as an additive logit bias: with alpha or beta > 0 its
(B, K, HW, HW) logits evolve from those of the previous layer (Eq. 1), which is what EA-AA-ResNet adds to
AA-ResNet, and the map convolution runs on the pixel grid, never mixing a row's last pixel with the next
row's first (tsrep.nn.evolving). A stack of these layers carries the logits from one to the next.
"""

from __future__ import annotations

import operator

import torch
from torch import nn

from tsrep.nn._checks import is_integer, positive_int
from tsrep.nn.attention import MultiHeadAttention


def as_pair(value, name: str) -> tuple[int, int]:
    """An int or a pair of positive ints (height, width) -> (int, int); ValueError naming `name` otherwise."""
    pair = (value, value) if is_integer(value) else tuple(value) if isinstance(value, (tuple, list)) else ()
    if len(pair) != 2 or not all(is_integer(v) and v >= 1 for v in pair):
        raise ValueError(f"{name} must be a positive integer or a pair of them, got {value!r}")
    return operator.index(pair[0]), operator.index(pair[1])


class AttentionAugmentedConv2d(nn.Module):
    """Convolution whose output channels are shared with multi-head self-attention over the pixels.

    Parameters
    ----------
    in_channels, out_channels : int
    kernel_size : int, odd
        Kernel of the convolution half (stride 1, "same" padding, so both halves keep H x W).
    attn_channels : int or None
        Output channels computed by attention (None: out_channels // 2, as in EA-AA-ResNet); the
        convolution computes the rest. 0 builds a plain convolution, out_channels pure attention.
        Queries and keys have this width too (Bello et al. allow a separate key width d_k).
    n_heads : int
        Heads K; must divide attn_channels.
    alpha, beta : float in [0, 1]
        Evolving-attention weights (Eq. 1). The defaults are the paper's EA-AA-ResNet-34 setting (Sec. 4.4);
        alpha = beta = 0 is the plain AA convolution of Bello et al.
    attn_kernel_size : int, odd
        Kernel of the map convolution over the (HW x HW) logits.
    feature_size : int, (int, int) or None
        Height and width of the feature maps; required when the layer has attention: it sizes the
        relative-position embeddings and the pixel grid of the map convolution. None only for
        attn_channels=0.
    dropout : float
        Dropout on the attention weights.

    forward(x (B, C_in, H, W), prev_logits (B, K, HW, HW) or None) -> (B, C_out, H, W), logits
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int = 3, attn_channels: int | None = None,
                 n_heads: int = 4, alpha: float = 0.5, beta: float = 1.0, attn_kernel_size: int = 3,
                 feature_size: int | tuple[int, int] | None = None, dropout: float = 0.0):
        super().__init__()
        in_channels = positive_int("in_channels", in_channels)
        out_channels = positive_int("out_channels", out_channels)
        if not is_integer(kernel_size) or kernel_size < 1 or kernel_size % 2 == 0:
            raise ValueError(f"kernel_size must be a positive odd integer, got {kernel_size!r}")
        kernel_size = operator.index(kernel_size)
        attn_channels = out_channels // 2 if attn_channels is None else attn_channels
        if not is_integer(attn_channels) or not 0 <= attn_channels <= out_channels:
            raise ValueError(f"attn_channels must be an integer in [0, out_channels={out_channels}], got {attn_channels!r}")
        attn_channels = operator.index(attn_channels)
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.attn_channels = attn_channels
        conv_channels = out_channels - attn_channels
        self.conv = (
            nn.Conv2d(in_channels, conv_channels, kernel_size, padding=kernel_size // 2) if conv_channels > 0 else None
        )
        self.feature_size = as_pair(feature_size, "feature_size") if feature_size is not None else None
        if attn_channels > 0 and self.feature_size is None:
            raise ValueError(
                "feature_size (height, width) is required when the layer has attention: it sizes the "
                "relative-position logits of Bello et al. and the pixel grid of the map convolution"
            )
        self.attention = (
            MultiHeadAttention(
                in_channels, attn_channels, n_heads, alpha, beta, attn_kernel_size, dropout, map_grid=self.feature_size
            )
            if attn_channels > 0
            else None
        )
        self.relative_logits = (
            RelativePositionLogits2d(*self.feature_size, self.attention.head_dim)
            if self.attention is not None
            else None
        )

    @property
    def n_heads(self) -> int:
        return self.attention.n_heads if self.attention is not None else 0

    def forward(
        self, x: torch.Tensor, prev_logits: torch.Tensor | None = None, need_logits: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """
        x:           (B, C_in, H, W)
        prev_logits: (B, K, H*W, H*W) logits of the previous attention layer at the same resolution, or None
        returns:     (B, C_out, H, W) = [conv (C_out - attn_channels) | attention (attn_channels)];
                     logits (B, K, H*W, H*W) to carry on (None for plain attention unless need_logits,
                     and prev_logits unchanged when this layer has no attention)
        """
        if x.ndim != 4 or x.shape[1] != self.in_channels:
            raise ValueError(f"x must have shape (batch, {self.in_channels}, height, width), got {tuple(x.shape)}")
        b, _, h, w = x.shape
        if self.attention is not None and (h, w) != self.feature_size:
            raise ValueError(f"x has feature maps of {h}x{w}, but feature_size is {self.feature_size}")
        parts = []
        logits = prev_logits
        if self.conv is not None:
            parts.append(self.conv(x))
        if self.attention is not None:
            n = h * w
            if prev_logits is not None and prev_logits.shape != (b, self.n_heads, n, n):
                raise ValueError(
                    f"prev_logits must have shape {(b, self.n_heads, n, n)} (the previous layer's maps at this "
                    f"resolution), got {tuple(prev_logits.shape)}"
                )
            tokens = x.permute(0, 2, 3, 1).reshape(b, n, -1)  # (B, H*W, C_in): pixels become tokens, raster order
            out, logits = self.attention(tokens, None, prev_logits, need_logits, logit_bias=self.relative_logits)
            parts.append(out.transpose(1, 2).reshape(b, self.attn_channels, h, w))
        y = torch.cat(parts, dim=1) if len(parts) > 1 else parts[0]
        return y, logits

    def extra_repr(self) -> str:
        return (
            f"in_channels={self.in_channels}, out_channels={self.out_channels}, "
            f"attn_channels={self.attn_channels}, feature_size={self.feature_size}"
        )


class RelativePositionLogits2d(nn.Module):
    """Relative height and width logits of Bello et al. for the pixels of an H x W map.

    For queries q_i at (h_i, w_i) and keys at (h_j, w_j) in raster order:

        S^rel[i, j] = q_i . r^H_{h_j - h_i} + q_i . r^W_{w_j - w_i}

    r^H: (2H - 1, d) and r^W: (2W - 1, d) learned, shared by the heads, initialised N(0, 1/d).
    Given the scaled queries q / sqrt(d), this is their (Q K^T + S^H + S^W) / sqrt(d) minus Q K^T / sqrt(d).

    forward(q (B, K, H*W, d)) -> (B, K, H*W, H*W)
    """

    def __init__(self, height: int, width: int, head_dim: int):
        super().__init__()
        self.height, self.width = height, width
        self.height_embedding = nn.Parameter(torch.randn(2 * height - 1, head_dim) * head_dim**-0.5)
        self.width_embedding = nn.Parameter(torch.randn(2 * width - 1, head_dim) * head_dim**-0.5)
        # offset index [i, j] = (j - i) + size - 1: row i of a table lists the embeddings seen from position i
        self.register_buffer("height_offsets", _offsets(height), persistent=False)
        self.register_buffer("width_offsets", _offsets(width), persistent=False)

    def forward(self, q: torch.Tensor) -> torch.Tensor:
        """q: (B, K, H*W, d) scaled queries -> (B, K, H*W, H*W) logits to add"""
        b, k, n, d = q.shape
        h, w = self.height, self.width
        q = q.view(b, k, h, w, d)
        rows = torch.einsum("bkhwd,hjd->bkhwj", q, self.height_embedding[self.height_offsets])  # (B, K, H, W, H_key)
        cols = torch.einsum("bkhwd,wjd->bkhwj", q, self.width_embedding[self.width_offsets])  # (B, K, H, W, W_key)
        return (rows[..., :, None] + cols[..., None, :]).reshape(b, k, n, n)

    def extra_repr(self) -> str:
        return f"height={self.height}, width={self.width}, head_dim={self.height_embedding.shape[1]}"


def _offsets(size: int) -> torch.Tensor:
    """(size, size) long: (j - i) + size - 1, the row of a relative-embedding table for positions i -> j."""
    position = torch.arange(size)
    return position[None, :] - position[:, None] + size - 1
