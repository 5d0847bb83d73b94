"""Multi-head self-attention that exposes its pre-softmax logits, with evolving attention as a flag.

One module serves plain attention (alpha = beta = 0) and evolving attention (Wang et al.,
"Convolution-enhanced Evolving Attention Networks", Eq. 1):
the evolution is an optional step between the logits and the softmax, so every backbone that
uses this module gets the same evolving-attention code.
"""

from __future__ import annotations

import math
import operator
import sys
from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn

from tsrep.nn._checks import is_integer
from tsrep.nn.deacon import DeaconHeadMixing
from tsrep.nn.evolving import AttentionMapEvolution, query_key_product
from tsrep.nn.interacting import n_virtual_heads, virtual_heads
from tsrep.nn.map_dropout import attend_values


def _fused_kernels(q: torch.Tensor):
    """tsrep.nn.fused_evolving when it may apply: on CUDA tensors, or once its switch has been imported (it
    forces the kernels on or off); None otherwise, so CPU runs never import triton."""
    if q.is_cuda or "tsrep.nn.fused_evolving" in sys.modules:
        from tsrep.nn import fused_evolving

        return fused_evolving
    return None


class MultiHeadAttention(nn.Module):
    """Self-attention over (B, N, dim_in) returning (B, N, d_model) and the (evolved) logits.

    Parameters
    ----------
    dim_in : int
        Width of the input tokens.
    d_model : int
        Width of queries, keys, values and of the output; must be divisible by n_heads.
    n_heads : int
    alpha, beta : float in [0, 1]
        Evolving-attention weights; alpha = beta = 0 is plain attention and builds no evolution.
    attn_kernel_size : int
        Kernel of the map convolution (used when beta > 0).
    dropout : float
        Dropout on the attention weights.
    interacting : {None, "pairs", "summed"}
        Interacting-head attention (Li and Luo, tsrep.nn.interacting): every query head with every
        key head (h*h maps, W^O: h*h*d_head -> d_model), or Algorithm 1's summed logits (h maps).
        The evolving step then convolves over the h*h (or h) maps.
    head_mixing : {None, "deacon-direct", "deacon-average", "deacon-nonlinear"}
        DEACON PCA layer over the head outputs before W^O (Ampazis and Sakketou, tsrep.nn.deacon).
    deacon_m : int or None
        Components the PCA layer keeps (None: all heads); W^O is sized by it.
    deacon_settings : dict or None
        deacon_dp, deacon_xi, deacon_inner_steps, gha_lr of the PCA layer (tsrep.nn.deacon.PCALayer).
    causal : bool
        Decoder self-attention: query i attends to keys j <= i only.
    map_conv_mask : {None, "full", "causal", "cross"}
        Mask of the map convolution (tsrep.nn.evolving); None: "causal" when causal else "full".
        Encoder-decoder attention uses "cross".
    map_grid : (int, int) or None
        (H, W) when the tokens are the pixels of an H x W feature map in raster order: the map
        convolution then never mixes across an image row boundary (tsrep.nn.evolving).
    """

    def __init__(self, dim_in: int, d_model: int, n_heads: int, alpha: float = 0.0, beta: float = 0.0,
                 attn_kernel_size: int = 3, dropout: float = 0.0, interacting: str | None = None,
                 head_mixing: str | None = None, deacon_m: int | None = None, deacon_settings: dict | None = None,
                 causal: bool = False, map_conv_mask: str | None = None, map_grid: tuple[int, int] | None = None):
        super().__init__()
        if not is_integer(n_heads) or n_heads < 1 or d_model % n_heads != 0:
            raise ValueError(f"n_heads={n_heads} must be >= 1 and divide the attention width {d_model}")
        n_heads = operator.index(n_heads)
        self.n_heads = n_heads
        self.head_dim = d_model // n_heads
        self.interacting = interacting
        n_maps = n_virtual_heads(n_heads, interacting)  # maps and head outputs: h, or h*h for pairs
        self.n_maps = n_maps
        self.qkv = nn.Linear(dim_in, 3 * d_model)
        self.mixing = (
            DeaconHeadMixing(head_mixing, n_maps, self.head_dim, deacon_m, **(deacon_settings or {}))
            if head_mixing is not None
            else None
        )
        self.out = nn.Linear(self.mixing.out_features if self.mixing is not None else n_maps * self.head_dim, d_model)
        self.dropout = dropout
        self.causal = causal
        if map_conv_mask is None:
            map_conv_mask = "causal" if causal else "full"
        self.evolution = (
            AttentionMapEvolution(n_maps, alpha, beta, attn_kernel_size, conv_mask=map_conv_mask, grid=map_grid)
            if (alpha > 0 or beta > 0)
            else None
        )

    @property
    def is_evolving(self) -> bool:
        return self.evolution is not None

    def forward(self, x: torch.Tensor, valid: torch.Tensor | None = None, prev_logits: torch.Tensor | None = None,
                need_logits: bool = False, query: torch.Tensor | None = None, query_valid: torch.Tensor | None = None,
                logit_bias: torch.Tensor | Callable[[torch.Tensor], torch.Tensor] | None = None,
                ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """
        x:           (B, N, dim_in) input of keys and values (and of queries for self-attention)
        valid:       (B, N) bool, False at padded steps (None: all valid)
        prev_logits: (B, K, M, N) logits carried from the previous attention layer, or None
        query:       (B, M, dim_in) input of the queries when they come from another stream (crossed
                     co-attention, M = N; a decoder attending to its encoder's output x, any M).
                     None: self-attention, M = N.
        query_valid: (B, M) bool of valid queries when `query` is given (None: all valid); padded
                     query rows are only zeroed in the map, their outputs are whatever the caller masks
        logit_bias:  added to Q K^T / sqrt(d_head), before the evolution (it is part of this layer's
                     S in Eq. 1) and the softmax: a tensor broadcastable to (B, K, M, N), or a callable
                     of the scaled queries Q / sqrt(d_head) (B, K, M, d_head) returning one, for
                     query-dependent terms such as relative-position logits (Bello et al.)
        returns:     out (B, M, d_model); logits (B, K, M, N) finite and unmasked, carried to the next
                     layer (None for plain attention unless need_logits)
        """
        b, n, _ = x.shape
        if query is None:
            q, k, v = self.qkv(x).view(b, n, 3, self.n_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        else:
            w_q, w_kv = self.qkv.weight.split([self.qkv.out_features // 3, 2 * self.qkv.out_features // 3])
            b_q, b_kv = self.qkv.bias.split([self.qkv.out_features // 3, 2 * self.qkv.out_features // 3])
            q = F.linear(query, w_q, b_q).view(b, query.shape[1], self.n_heads, self.head_dim).transpose(1, 2)
            k, v = F.linear(x, w_kv, b_kv).view(b, n, 2, self.n_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        if self.interacting is not None:
            q, k, v = virtual_heads(q, k, v, self.interacting)

        if query is not None and query_valid is None and valid is not None:
            # The keys' padding says nothing about the queries of another stream.
            query_valid = torch.ones(b, q.shape[-2], dtype=torch.bool, device=q.device)
        out_valid = valid if query is None else query_valid
        device = q.device.type
        if torch.is_autocast_enabled(device) and torch.get_autocast_dtype(device) == torch.float16:
            # fp16 ends at 65504: Q K^T of tokens of magnitude ~50 overflows to inf, and the softmax
            # gives NaN. The map (logits, evolution, softmax, @ V) runs in fp32 instead; bf16 has
            # fp32's range and keeps the autocast dtype. W^O below runs under autocast again.
            with torch.autocast(device, enabled=False):
                h, logits = self._attend(
                    q.float(), k.float(), v.float(), valid, prev_logits, need_logits, query_valid, logit_bias
                )
        else:
            h, logits = self._attend(q, k, v, valid, prev_logits, need_logits, query_valid, logit_bias)
        return self._merge_heads(h, out_valid), logits

    def _attend(
        self,
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        valid: torch.Tensor | None,
        prev_logits: torch.Tensor | None,
        need_logits: bool,
        query_valid: torch.Tensor | None,
        logit_bias: torch.Tensor | Callable[[torch.Tensor], torch.Tensor] | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """
        q: (B, K, M, d_head); k, v: (B, K, N, d_head); the rest as in forward
        returns: head outputs (B, K, M, d_head); logits (B, K, M, N) or None (plain attention)
        """
        n = k.shape[-2]
        p_drop = self.dropout if self.training else 0.0
        scale = 1.0 / math.sqrt(self.head_dim)
        if callable(logit_bias):
            logit_bias = logit_bias(q * scale)
        if logit_bias is not None:
            logit_bias = logit_bias.to(q.dtype)
        if self.evolution is None and not need_logits:
            # Plain attention: let PyTorch pick its fused kernel (a float mask is added to the logits).
            mask = self._attend_mask(valid, q.shape[-2], n, q.device)
            if logit_bias is not None:
                mask = logit_bias if mask is None else logit_bias.masked_fill(~mask, float("-inf"))
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p_drop), None

        fused = _fused_kernels(q)
        if fused is not None and fused.applies(self.evolution, q, k, logit_bias, query_valid, self.causal):
            # One kernel for the evolution, the softmax and @ V, keeping no map but the evolved logits.
            return fused.evolving_attention(self.evolution, q, k, v, scale, prev_logits, valid, p_drop)

        # Scaling q (B, K, M, d_head) instead of the map saves a pass over the (B, K, M, N) map.
        if self.evolution is not None:
            # The evolution makes the Q K^T map itself, so it may overwrite it (one map per step).
            logits = self.evolution.from_queries_keys(q, k, scale, prev_logits, valid, query_valid, logit_bias)
        else:
            logits = query_key_product(q * scale, k)
            if logit_bias is not None:
                logits = logits + logit_bias
        scores = logits
        mask = self._attend_mask(valid, q.shape[-2], n, q.device)
        if mask is not None:
            # -inf only here, after the convolution, never in the carried map.
            scores = logits.masked_fill(~mask, float("-inf"))
        # Softmax in at least fp32 (bf16/fp16 logits lose the small differences that matter here),
        # dropout with cheaper random draws than F.dropout, @ V, keeping one fp32 map for backward
        # (tsrep.nn.map_dropout).
        return attend_values(scores, v, p_drop), logits

    def _attend_mask(self, valid: torch.Tensor | None, m: int, n: int, device) -> torch.Tensor | None:
        """(B or 1, 1, M or 1, N) bool, True where a query may attend to a key; None: everywhere."""
        mask = valid[:, None, None, :] if valid is not None else None
        if self.causal:
            if m != n:
                raise ValueError(f"causal attention needs as many queries as keys, got {m} and {n}")
            lower = torch.ones(m, n, dtype=torch.bool, device=device).tril()[None, None]
            mask = lower if mask is None else mask & lower
        return mask

    def _merge_heads(self, h: torch.Tensor, valid: torch.Tensor | None) -> torch.Tensor:
        """(B, H, N, d_head) head outputs -> concat (or DEACON mixing) -> W^O -> (B, N, d_model)"""
        if self.mixing is not None:
            return self.out(self.mixing(h, valid))
        b, _, n, _ = h.shape
        return self.out(h.transpose(1, 2).reshape(b, n, -1))
