"""Encoder-decoder EA-Transformer (Wang et al., "Convolution-enhanced Evolving Attention Networks",
IEEE TPAMI 2023, Sec. 3.1 and 4.4).

Three kinds of attention, all tsrep.nn.attention.MultiHeadAttention with its map convolution
masked for the kind (tsrep.nn.evolving):

- encoder self-attention: full k x k convolution, maps carried from layer to layer (alpha);
- decoder self-attention: causal attention and the causal map convolution (masked kernel + shift);
- encoder-decoder attention: the "cross" convolution, which mixes keys within one query row only.

Every layer is a pre-norm tsrep.nn.TransformerLayer with a ReLU FFN; a decoder layer adds cross-attention.

The paper uses skip connections between maps in the encoder only (they hurt its decoders), so
`decoder_alpha` defaults to 0; it is accepted for ablations and cannot leak the future either.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from tsrep.nn._checks import is_integer, positive_int
from tsrep.nn.transformer_layer import TransformerLayer
from tsrep.nn.dropout import Dropout


def _check_unit(name: str, value: float) -> None:
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be in [0, 1], got {value!r}")


class EATransformerSeq2Seq(nn.Module):
    """Token-to-token encoder-decoder with evolving attention in all three attention kinds.

    Parameters
    ----------
    src_vocab_size, tgt_vocab_size : int
    d_model, n_heads, n_encoder_layers, n_decoder_layers, dim_feedforward, dropout
        Transformer sizes (dim_feedforward None: 4 * d_model).
    alpha, beta : float in [0, 1]
        Encoder map residual weight and convolution weight (paper: 0.5 / 0.1 for Transformer-Base,
        0.1 / 0.1 for Lite). alpha = beta = decoder_beta = cross_beta = 0 is the plain Transformer.
    decoder_alpha : float in [0, 1]
        Map residual weight of both decoder chains (0 in the paper).
    decoder_beta, cross_beta : float in [0, 1] or None
        Convolution weight of decoder self-attention and encoder-decoder attention (None: beta).
    attn_kernel_size : int, odd
    max_len : int
        Rows of the learned positional tables; longer source or target inputs are an error.

    forward(src (B, N) long, tgt (B, M) long, src_valid, tgt_valid) -> (B, M, tgt_vocab_size) logits,
    where the output at target position t depends on tgt[:, :t + 1] only (teacher forcing: feed the
    target shifted right by one).
    """

    def __init__(self, src_vocab_size: int, tgt_vocab_size: int, d_model: int = 256, n_heads: int = 8,
                 n_encoder_layers: int = 6, n_decoder_layers: int = 6, dim_feedforward: int | None = None,
                 dropout: float = 0.1, alpha: float = 0.5, beta: float = 0.1, decoder_alpha: float = 0.0,
                 decoder_beta: float | None = None, cross_beta: float | None = None, attn_kernel_size: int = 3,
                 max_len: int = 512):
        super().__init__()
        decoder_beta = beta if decoder_beta is None else decoder_beta
        cross_beta = beta if cross_beta is None else cross_beta
        for name, value in (("alpha", alpha), ("beta", beta), ("decoder_alpha", decoder_alpha),
                            ("decoder_beta", decoder_beta), ("cross_beta", cross_beta)):
            _check_unit(name, value)
        src_vocab_size = positive_int("src_vocab_size", src_vocab_size)
        tgt_vocab_size = positive_int("tgt_vocab_size", tgt_vocab_size)
        d_model = positive_int("d_model", d_model)
        max_len = positive_int("max_len", max_len)
        if not is_integer(n_heads) or n_heads < 1 or d_model % n_heads != 0:
            raise ValueError(f"n_heads={n_heads!r} must be >= 1 and divide d_model={d_model}")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout!r}")
        dim_feedforward = dim_feedforward or 4 * d_model
        self.d_model = d_model
        self.max_len = max_len
        self.src_embedding = nn.Embedding(src_vocab_size, d_model)
        self.tgt_embedding = nn.Embedding(tgt_vocab_size, d_model)
        self.src_positions = nn.Parameter(torch.empty(max_len, d_model).normal_(0.0, 0.02))
        self.tgt_positions = nn.Parameter(torch.empty(max_len, d_model).normal_(0.0, 0.02))
        self.dropout = Dropout(dropout)
        layer_settings = dict(pre_norm=True, act_layer=nn.ReLU, dropout=dropout, attn_kernel_size=attn_kernel_size)
        self.encoder = nn.ModuleList(
            TransformerLayer(d_model, n_heads, dim_feedforward, alpha=alpha, beta=beta, **layer_settings)
            for _ in range(n_encoder_layers)
        )
        self.encoder_norm = nn.LayerNorm(d_model)
        self.decoder = nn.ModuleList(
            TransformerLayer(
                d_model, n_heads, dim_feedforward, alpha=decoder_alpha, beta=decoder_beta, causal=True,
                cross_attention=True, cross_beta=cross_beta, **layer_settings,
            )
            for _ in range(n_decoder_layers)
        )
        self.decoder_norm = nn.LayerNorm(d_model)
        self.generator = nn.Linear(d_model, tgt_vocab_size)

    def _embed(self, tokens: torch.Tensor, embedding: nn.Embedding, positions: torch.Tensor, what: str):
        if tokens.ndim != 2 or tokens.dtype not in (torch.int64, torch.int32):
            raise ValueError(f"{what} must be a (batch, length) tensor of token ids, got {tuple(tokens.shape)} "
                             f"{tokens.dtype}")
        n = tokens.shape[1]
        if n > self.max_len:
            raise ValueError(f"{what} has {n} positions but the positional table has max_len={self.max_len}")
        if n and (int(tokens.min()) < 0 or int(tokens.max()) >= embedding.num_embeddings):
            raise ValueError(f"{what} holds token ids outside [0, {embedding.num_embeddings})")
        return self.dropout(embedding(tokens) * math.sqrt(self.d_model) + positions[:n])

    @staticmethod
    def _check_valid(valid: torch.Tensor | None, tokens: torch.Tensor, what: str) -> None:
        if valid is None:
            return
        if valid.dtype != torch.bool or valid.shape != tokens.shape:
            raise ValueError(f"{what} must be a bool tensor of the token ids' shape {tuple(tokens.shape)}, "
                             f"got {valid.dtype} {tuple(valid.shape)}")
        if tokens.numel() and not bool(valid[:, 0].all()):
            raise ValueError(f"{what} must mark the first position of every sequence valid (right padding)")

    def encode(self, src: torch.Tensor, src_valid: torch.Tensor | None = None) -> torch.Tensor:
        """src: (B, N) long; src_valid: (B, N) bool or None -> memory (B, N, d)"""
        x = self._embed(src, self.src_embedding, self.src_positions, "src")
        self._check_valid(src_valid, src, "src_valid")
        logits = None
        for layer in self.encoder:
            x, logits = layer(x, src_valid, logits)
        return self.encoder_norm(x)

    def decode(self, tgt, memory, tgt_valid=None, src_valid=None) -> torch.Tensor:
        """tgt: (B, M) long; memory: (B, N, d) -> (B, M, tgt_vocab_size) logits"""
        y = self._embed(tgt, self.tgt_embedding, self.tgt_positions, "tgt")
        self._check_valid(tgt_valid, tgt, "tgt_valid")
        if memory.ndim != 3 or memory.shape[0] != tgt.shape[0] or memory.shape[2] != self.d_model:
            raise ValueError(f"memory must be (batch={tgt.shape[0]}, source length, d_model={self.d_model}), "
                             f"got {tuple(memory.shape)}")
        self_logits = cross_logits = None
        for layer in self.decoder:
            y, self_logits, cross_logits = layer(
                y, tgt_valid, self_logits, memory=memory, memory_valid=src_valid, prev_cross_logits=cross_logits
            )
        return self.generator(self.decoder_norm(y))

    def forward(self, src, tgt, src_valid=None, tgt_valid=None) -> torch.Tensor:
        """src: (B, N) long, tgt: (B, M) long, src_valid (B, N) / tgt_valid (B, M) bool or None
        -> (B, M, tgt_vocab_size) logits"""
        return self.decode(tgt, self.encode(src, src_valid), tgt_valid, src_valid)

    @torch.no_grad()
    def generate(self, src, bos_id: int, max_new_tokens: int, src_valid=None) -> torch.Tensor:
        """Greedy decoding: (B, N) source -> (B, 1 + max_new_tokens) tokens starting with bos_id.

        Every step re-runs the decoder on the whole prefix: the evolved maps of earlier rows do not
        change (they are causal), so no cache is needed for correctness, only for speed.
        """
        memory = self.encode(src, src_valid)
        out = torch.full((src.shape[0], 1), bos_id, dtype=torch.long, device=src.device)
        for _ in range(max_new_tokens):
            step = self.decode(out, memory, None, src_valid)[:, -1].argmax(-1, keepdim=True)
            out = torch.cat([out, step], dim=1)
        return out
