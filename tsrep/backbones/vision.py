"""EA-ViT: a Vision Transformer (Dosovitskiy et al., ICLR 2021) whose attention maps evolve (Wang et al.,
"Convolution-enhanced Evolving Attention Networks", IEEE TPAMI 2023, Sec. 3.4, 4.4).

    tokens = [cls; PatchEmbed(image)] + pos                        # (B, 1 + N_patches, d_model)
    per layer: x = x + MHA_evolving(LN(x), prev_logits);  x = x + MLP(LN(x))   # pre-LN, as ViT
    logits = Linear(LN(x)[:, 0])                                   # class token

The attention is tsrep.nn.attention.MultiHeadAttention: the (B, K, N+1, N+1) logits of each layer evolve
from those of the layer before (Eq. 1), the chain running through every layer. alpha = beta = 0 is the
plain ViT of the same size, built by the same code with no evolution parameters. The paper's EA-ViT
setting is alpha = 0.1, beta = 0.3 with the 3 x 3 map convolution (Sec. 4.4); those are the defaults.
"""

from __future__ import annotations

from functools import partial

import torch
from torch import nn

from tsrep.nn._checks import is_integer, positive_int
from tsrep.nn.attention_augmented_conv import as_pair
from tsrep.nn.transformer_layer import TransformerLayer
from tsrep.nn.dropout import Dropout


class PatchEmbedding(nn.Module):
    """Non-overlapping patches -> tokens: a convolution with kernel = stride = patch size.

    forward(images (B, C, H, W)) -> (B, (H/p_h) * (W/p_w), d_model), patches in row-major order
    """

    def __init__(self, image_size, patch_size, in_channels: int, d_model: int):
        super().__init__()
        self.image_size = as_pair(image_size, "image_size")
        self.patch_size = as_pair(patch_size, "patch_size")
        if any(i % p for i, p in zip(self.image_size, self.patch_size)):
            raise ValueError(
                f"image_size={image_size!r} must be divisible by patch_size={patch_size!r} in height and width"
            )
        self.grid = (self.image_size[0] // self.patch_size[0], self.image_size[1] // self.patch_size[1])
        self.n_patches = self.grid[0] * self.grid[1]
        self.proj = nn.Conv2d(in_channels, d_model, kernel_size=self.patch_size, stride=self.patch_size)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """images: (B, C, H, W) -> (B, N_patches, d_model)"""
        return self.proj(images).flatten(2).transpose(1, 2)


class ViTLayer(TransformerLayer):
    """ViT's pre-LN encoder layer: a TransformerLayer with pre_norm, LayerNorm(eps=1e-6) and GELU.

    forward(x (B, N, d_model), prev_logits (B, K, N, N) or None, need_logits) -> (B, N, d_model), logits or None
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        dim_feedforward: int,
        alpha: float,
        beta: float,
        attn_kernel_size: int,
        dropout: float,
        attn_dropout: float,
    ):
        super().__init__(
            d_model, n_heads, dim_feedforward, pre_norm=True, norm_layer=partial(nn.LayerNorm, eps=1e-6),
            act_layer=nn.GELU, dropout=dropout, attn_dropout=attn_dropout, alpha=alpha, beta=beta,
            attn_kernel_size=attn_kernel_size,
        )

    @property
    def mlp(self) -> nn.Sequential:
        """The feed-forward network under timm's name for it."""
        return self.ffn

    def forward(
        self, x: torch.Tensor, prev_logits: torch.Tensor | None = None, need_logits: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """x: (B, N, d_model); prev_logits: (B, K, N, N) or None -> (B, N, d_model), logits (B, K, N, N) or None"""
        # Images have no padding: every token is valid.
        return super().forward(x, None, prev_logits, need_logits)


class EAViT(nn.Module):
    """Vision Transformer with evolving attention; alpha = beta = 0 gives the plain ViT.

    Parameters
    ----------
    image_size, patch_size : int or (int, int)
        Height and width of the input images and of the patches; the image must split into whole patches.
    in_channels : int
    n_classes : int
        Outputs of the classification head on the class token.
    d_model, n_layers, n_heads : int
        Token width, number of layers, heads per layer (n_heads divides d_model).
    dim_feedforward : int or None
        Hidden width of the MLPs (None: 4 * d_model).
    alpha, beta : float in [0, 1]
        Evolving-attention weights (Eq. 1); the defaults are the paper's EA-ViT setting (Sec. 4.4).
    attn_kernel_size : int, odd
        Kernel of the map convolution.
    dropout : float
        Dropout after the embeddings, in the MLPs and on the attention output (0.1 in the paper's fine-tuning).
    attn_dropout : float
        Dropout on the attention weights.

    forward(images (B, C, H, W)) -> (B, n_classes); forward_features(images) -> (B, 1 + N_patches, d_model)
    """

    def __init__(self, image_size, patch_size, n_classes: int, in_channels: int = 3, d_model: int = 64,
                 n_layers: int = 4, n_heads: int = 4, dim_feedforward: int | None = None, alpha: float = 0.1,
                 beta: float = 0.3, attn_kernel_size: int = 3, dropout: float = 0.1, attn_dropout: float = 0.0):
        super().__init__()
        n_classes = positive_int("n_classes", n_classes)
        in_channels = positive_int("in_channels", in_channels)
        d_model = positive_int("d_model", d_model)
        n_layers = positive_int("n_layers", n_layers)
        if not is_integer(n_heads) or n_heads < 1 or d_model % n_heads:
            raise ValueError(f"n_heads={n_heads!r} must be a positive integer dividing d_model={d_model}")
        for name, value in (("dropout", dropout), ("attn_dropout", attn_dropout)):
            if not 0.0 <= value < 1.0:
                raise ValueError(f"{name} must be in [0, 1), got {value!r}")
        self.in_channels = in_channels
        self.patch_embedding = PatchEmbedding(image_size, patch_size, in_channels, d_model)
        self.image_size = self.patch_embedding.image_size
        # Initialisation as in ViT/timm: small normal class token and position table.
        self.cls_token = nn.Parameter(torch.empty(1, 1, d_model).normal_(std=1e-6))
        self.pos_embedding = nn.Parameter(
            nn.init.trunc_normal_(torch.empty(1, 1 + self.patch_embedding.n_patches, d_model), std=0.02)
        )
        self.dropout = Dropout(dropout)
        self.layers = nn.ModuleList(
            ViTLayer(
                d_model, n_heads, dim_feedforward or 4 * d_model, alpha, beta, attn_kernel_size, dropout, attn_dropout
            )
            for _ in range(n_layers)
        )
        self.norm = nn.LayerNorm(d_model, eps=1e-6)
        self.head = nn.Linear(d_model, n_classes)

    @property
    def is_evolving(self) -> bool:
        return self.layers[0].attention.is_evolving

    def forward_features(
        self, images: torch.Tensor, return_logits: bool = False
    ) -> torch.Tensor | tuple[torch.Tensor, list[torch.Tensor]]:
        """
        images:  (B, C, H, W) with C = in_channels and (H, W) = image_size
        returns: (B, 1 + N_patches, d_model) after the final LayerNorm, token 0 the class token; with
                 return_logits, also each layer's (evolved) attention logits (B, K, 1 + N, 1 + N)
        """
        expected = (self.in_channels, *self.image_size)
        if images.ndim != 4 or tuple(images.shape[1:]) != expected:
            raise ValueError(f"images must have shape (batch, {', '.join(map(str, expected))}), got {tuple(images.shape)}")
        x = self.patch_embedding(images)
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1) + self.pos_embedding
        x = self.dropout(x)
        logits, maps = None, []
        for layer in self.layers:
            x, logits = layer(x, logits, need_logits=return_logits)
            maps.append(logits)
        x = self.norm(x)
        return (x, maps) if return_logits else x

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """images: (B, C, H, W) -> class scores (B, n_classes)"""
        return self.head(self.forward_features(images)[:, 0])
