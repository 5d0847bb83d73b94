"""One transformer layer for every tsrep transformer: self-attention, optional cross-attention and a
feed-forward network, each a residual branch, with the norm placed before the branch or after the sum.

    post-norm (pre_norm=False; Vaswani et al., "Attention Is All You Need"; BERT; TST):
        x = norm1(x + Dropout(SelfAttn(x)))
        x = cross_norm(x + Dropout(CrossAttn(memory, query=x)))          # with cross_attention only
        x = norm2(x + Dropout(FFN(x)))
    pre-norm (pre_norm=True; Xiong et al., "On Layer Normalization in the Transformer Architecture"; ViT):
        x = x + Dropout(SelfAttn(norm1(x)))
        x = x + Dropout(CrossAttn(memory, query=cross_norm(x)))
        x = x + Dropout(FFN(norm2(x)))
    FFN(x) = W_2 Dropout(act(W_1 x))

The options follow x-transformers (`pre_norm`) and timm (`norm_layer`, `act_layer`). The self-attention is
built by the attention-kind registry (tsrep.nn.attention_kinds), so a registered kind serves here as a built-in
one does; the cross-attention, which takes its queries from another stream, is tsrep.nn.attention.MultiHeadAttention.
The evolved logits chain from layer to layer (Wang et al., "Convolution-enhanced Evolving Attention Networks", Eq. 1).
"""

from __future__ import annotations

import inspect
import numbers
from typing import Callable

import torch
from torch import nn

from tsrep.nn._checks import positive_int
from tsrep.nn.attention import MultiHeadAttention
from tsrep.nn.attention_kinds import AttentionKind, attention_kind
from tsrep.nn.dropout import Dropout


def _check_rate(name: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0.0 <= value < 1.0:
        raise ValueError(f"{name} must be in [0, 1), got {value!r}")


def _check_flags(pre_norm, causal, cross_attention) -> None:
    for name, value in (("pre_norm", pre_norm), ("causal", causal), ("cross_attention", cross_attention)):
        if not isinstance(value, bool):
            raise ValueError(f"{name} must be True or False, got {value!r}")


def _checked_attention_options(attention_options, kind: AttentionKind) -> dict:
    """A copy of attention_options: extra MultiHeadAttention arguments, none that TransformerLayer or the
    attention kind sets itself."""
    if attention_options is not None and not isinstance(attention_options, dict):
        raise ValueError(
            f"attention_options must be a dict of MultiHeadAttention arguments, got {attention_options!r}"
        )
    options = dict(attention_options or {})
    taken = {"causal", "alpha", "beta", "attn_kernel_size", "dropout", "dim_in", "d_model", "n_heads"} & options.keys()
    if taken:
        raise ValueError(f"attention_options must not hold {sorted(taken)}: they are arguments of TransformerLayer")
    if kind.interacting is not None and "interacting" in options:
        raise ValueError(
            f"attention_options must not hold 'interacting': attention={kind.name!r} sets it ({kind.interacting!r})"
        )
    known = inspect.signature(MultiHeadAttention).parameters
    unknown = sorted(options.keys() - known.keys())
    if unknown:
        raise ValueError(f"attention_options has {unknown}, which are not MultiHeadAttention arguments")
    return options


def _build(name: str, factory, *args) -> nn.Module:
    """factory(*args), checked to be a module; ValueError naming the argument otherwise."""
    if isinstance(factory, nn.Module):
        raise ValueError(
            f"{name} must build a new module for each use (a class such as nn.GELU, not an instance such as "
            f"nn.GELU()), got {factory!r}"
        )
    if not callable(factory):
        raise ValueError(
            f"{name} must be a callable returning an nn.Module (a class or a functools.partial), got {factory!r}"
        )
    module = factory(*args)
    if not isinstance(module, nn.Module):
        raise ValueError(f"{name}({', '.join(map(repr, args))}) must return an nn.Module, got {type(module).__name__}")
    return module


class TransformerLayer(nn.Module):
    """Self-attention, optional cross-attention and FFN, with pre- or post-norm residual branches.

    Parameters
    ----------
    d_model : int
        Width of the tokens (and of the attention).
    n_heads : int
        Attention heads; must divide d_model.
    dim_feedforward : int
        Hidden width of the FFN.
    pre_norm : bool
        True: normalise the input of each branch (ViT); False: normalise each residual sum (BERT, TST).
    norm_layer : callable
        d_model -> norm module, e.g. nn.LayerNorm or functools.partial(nn.LayerNorm, eps=1e-6). A norm whose
        forward takes `valid` (tsrep.nn.SequenceNorm's padding-aware BatchNorm) is given the padding mask.
    act_layer : callable
        () -> activation module of the FFN, e.g. nn.GELU or nn.ReLU.
    dropout : float
        Dropout on every residual branch.
    attn_dropout : float or None
        Dropout on the attention weights (None: dropout).
    ffn_dropout : float or None
        Dropout after the FFN's activation (None: dropout; BERT has none there: 0).
    alpha, beta : float in [0, 1]
        Evolving-attention weights of the self-attention; alpha = beta = 0 is plain attention.
    attn_kernel_size : int
        Kernel of the map convolutions.
    causal : bool
        Self-attention attends to earlier tokens only (a decoder), with the causal map convolution.
    cross_attention : bool
        Add a cross-attention branch reading `memory` (an encoder's output); its map convolution is
        the "cross" one, which mixes keys within one query row only.
    cross_beta : float or None
        Map convolution weight of the cross-attention (None: beta); its alpha is alpha.
    attention_options : dict or None
        Further keyword arguments of the self-attention's MultiHeadAttention (interacting, head_mixing,
        deacon_m, deacon_settings, map_grid, map_conv_mask), passed to the kind's build.
    attention : str
        The registered attention kind of the self-attention (tsrep.nn.attention_kinds), built by the registry.
    """

    def __init__(self, d_model: int, n_heads: int, dim_feedforward: int, pre_norm: bool = False,
                 norm_layer: Callable[[int], nn.Module] = nn.LayerNorm, act_layer: Callable[[], nn.Module] = nn.GELU,
                 dropout: float = 0.1, attn_dropout: float | None = None, ffn_dropout: float | None = None,
                 alpha: float = 0.0, beta: float = 0.0, attn_kernel_size: int = 3, causal: bool = False,
                 cross_attention: bool = False, cross_beta: float | None = None, attention_options: dict | None = None,
                 attention: str = "evolving"):
        super().__init__()
        d_model = positive_int("d_model", d_model)
        dim_feedforward = positive_int("dim_feedforward", dim_feedforward)
        _check_flags(pre_norm, causal, cross_attention)
        attn_dropout = dropout if attn_dropout is None else attn_dropout
        ffn_dropout = dropout if ffn_dropout is None else ffn_dropout
        for name, value in (("dropout", dropout), ("attn_dropout", attn_dropout), ("ffn_dropout", ffn_dropout)):
            _check_rate(name, value)
        kind = attention_kind(attention)
        options = _checked_attention_options(attention_options, kind)
        self.pre_norm = pre_norm
        # The order of construction (attention, cross-attention, FFN) decides which random draws
        # initialise which weights; it is that of BERT, ViT and TST, so seeded models start alike.
        self.attention = kind.build(
            d_model, d_model, n_heads, alpha, beta, attn_kernel_size, attn_dropout, causal=causal, **options
        )
        self.norm1 = _build("norm_layer", norm_layer, d_model)
        if cross_attention:
            # Not a registry kind: encoder-decoder attention takes its queries from the decoder stream
            # (forward's `query`), which MultiHeadAttention offers and a kind's module need not.
            self.cross_attention = MultiHeadAttention(
                d_model, d_model, n_heads, alpha, beta if cross_beta is None else cross_beta, attn_kernel_size,
                attn_dropout,
                map_conv_mask="cross",
            )
            self.cross_norm = norm_layer(d_model)
        else:
            self.cross_attention = self.cross_norm = None
        self.ffn = nn.Sequential(
            nn.Linear(d_model, dim_feedforward),
            _build("act_layer", act_layer),
            Dropout(ffn_dropout),
            nn.Linear(dim_feedforward, d_model),
        )
        self.norm2 = norm_layer(d_model)
        self.dropout = Dropout(dropout)
        self._norm_takes_valid = "valid" in inspect.signature(self.norm1.forward).parameters

    def _norm(self, norm: nn.Module, x: torch.Tensor, valid: torch.Tensor | None) -> torch.Tensor:
        return norm(x, valid) if self._norm_takes_valid else norm(x)

    def _before(self, norm: nn.Module, x: torch.Tensor, valid: torch.Tensor | None) -> torch.Tensor:
        """The input of a branch: normalised under pre-norm."""
        return self._norm(norm, x, valid) if self.pre_norm else x

    def _after(self, norm: nn.Module, x: torch.Tensor, valid: torch.Tensor | None) -> torch.Tensor:
        """A residual sum: normalised under post-norm."""
        return x if self.pre_norm else self._norm(norm, x, valid)

    def forward(self, x: torch.Tensor, valid: torch.Tensor | None = None, prev_logits: torch.Tensor | None = None,
                need_logits: bool = False, *, memory: torch.Tensor | None = None,
                memory_valid: torch.Tensor | None = None,
                prev_cross_logits: torch.Tensor | None = None) -> tuple[torch.Tensor, ...]:
        """
        x:                 (B, N, d_model) tokens
        valid:             (B, N) bool, False at padded tokens (None: all valid)
        prev_logits:       (B, K, N, N) self-attention logits carried from the layer before, or None
        need_logits:       return the logits of plain attention too (otherwise None)
        memory:            (B, S, d_model) what cross-attention reads; required exactly when built with it
        memory_valid:      (B, S) bool or None
        prev_cross_logits: (B, K, N, S) cross-attention logits carried from the layer before, or None
        returns:           x (B, N, d_model), self-attention logits (B, K, N, N) or None; with cross-attention
                           also its logits (B, K, N, S) or None
        """
        if (memory is None) != (self.cross_attention is None):
            has_cross = self.cross_attention is not None
            raise ValueError(
                f"memory must be given exactly when the layer has cross-attention: this layer was built with "
                f"cross_attention={has_cross} and memory is {'a tensor' if memory is not None else None}"
            )
        h, logits = self.attention(self._before(self.norm1, x, valid), valid, prev_logits, need_logits)
        x = self._after(self.norm1, x + self.dropout(h), valid)
        if self.cross_attention is not None:
            h, cross_logits = self.cross_attention(
                memory, memory_valid, prev_cross_logits, need_logits,
                query=self._before(self.cross_norm, x, valid), query_valid=valid,
            )
            x = self._after(self.cross_norm, x + self.dropout(h), valid)
        x = self._after(self.norm2, x + self.dropout(self.ffn(self._before(self.norm2, x, valid))), valid)
        if self.cross_attention is not None:
            return x, logits, cross_logits
        return x, logits
