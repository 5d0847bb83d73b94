"""Evolving attention in fused GPU kernels (Triton): no N x N map is kept but the evolved logits the next layer reads.

The reference (tsrep.nn.evolving, tsrep.nn.attention, tsrep.nn.map_dropout) materialises for every layer the
Q K^T map, the blended map, the masked scores and the fp32 softmax, and keeps two of them for backward: at
N = 2048 tokens, batch 16 and 4 heads that is several GiB per layer. Here one kernel computes, tile by tile,

    S       = scale * q @ k^T
    A_in    = keep * lerp(S, prev, alpha)                   (S alone in the first layer)
    C       = Conv2d_{K x K heads, k x k, zero padding}(A_in) + bias
    A_logit = keep * (beta * ReLU(C) + (1 - beta) * A_in)   (stored: the next layer's prev)
    out     = dropout(softmax(A_logit, -inf at padded keys)) @ v

with an online softmax over key tiles and the backward recomputing the tiles from q, k and prev instead of
keeping maps (Dao et al., "FlashAttention: Fast and Memory-Efficient Exact Attention with IO-Awareness"). keep
is True where query and key are both valid.

The convolution needs every tile's one-cell halo across all K heads (for k = 3). Its S part is separable: with
q~, k~ the queries and keys zeroed at padded (and out-of-range) steps,

    conv(keep * S)_o[i, j] = sum_{h, a, c} W[o, h, a, c] * scale * q~_h[i + a - r] . k~_h[j + c - r]
                           = Qhat_o[i] . Khat[j],
    Qhat_o[i] = scale * concat_{h, c} sum_a W[o, h, a, c] q~_h[i + a - r],   Khat[j] = concat_{h, c} k~_h[j + c - r],

a product of (N, K*k*d_head) features that torch builds (and differentiates) outside the kernels: one more
tensor-core product per tile instead of K*k*k shifted ones. The prev part is a real convolution over a stored map:
the kernel reads prev's K*k*k shifted tiles (cache-resident neighbours).

Backward, in two kernels: the first walks the query tiles of each key tile (keys outer, as FlashAttention-2),
recomputes the map and its softmax, accumulates dv, dk and dKhat in registers and dq, dQhat by atomic adds, and
writes dC (and, in later layers, the direct part of d prev) in the maps' dtype; the second adds the transposed
convolution of dC to d prev and reduces the weight gradient of the prev part. In the first layer there is no
prev, no dC map and no second kernel.

Scope (`applies`): an encoder map convolution ("full", no pixel grid, beta > 0), self-attention (M = N) without
a logit bias, optional key padding, float32 or bfloat16. Attention dropout runs in the kernel with Triton's
Philox generator (tl.rand): a uniform per (batch, head, query, key) from a per-call seed drawn from torch's CPU
generator (so torch.manual_seed and activation checkpointing's saved RNG state replay it); backward redraws it.

On the GPU the fused path is taken automatically where it applies; `fused_evolving(False)` turns it off and
`fused_evolving(True)` forces it on (for CPU tensors this needs Triton's interpreter, TRITON_INTERPRET=1 set
before triton is imported: the tests). Under float32 the products run in IEEE fp32 (no TF32).
"""

from __future__ import annotations

import functools
import importlib.util
import threading
from contextlib import contextmanager

import torch
import torch.nn.functional as F

from tsrep.nn._compile import compiling, refuse_double_backward, thread_setting


_state = threading.local()
_DTYPES = (torch.float32, torch.bfloat16)


@contextmanager
def fused_evolving(enabled: bool | None = True):
    """Choose the evolving-attention implementation for the forward passes inside the block.

    True: the fused Triton kernels wherever the case is in scope, whatever the device (CPU tensors need
    Triton's interpreter); False: the reference ops everywhere; None: the default, fused on CUDA tensors
    when triton is importable.
    """
    if enabled not in (True, False, None) or isinstance(enabled, (int, float)) and not isinstance(enabled, bool):
        raise TypeError(f"fused_evolving(enabled) takes True, False or None, got {enabled!r}")
    with thread_setting(_state, "mode", enabled):
        yield


@functools.cache
def triton_available() -> bool:
    """Whether triton is installed (the kernels, tsrep.nn._evolving_kernels, import it when they first run)."""
    return importlib.util.find_spec("triton") is not None


def _kernels():
    from tsrep.nn import _evolving_kernels

    return _evolving_kernels


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _next_power_of_2(n: int) -> int:
    return 1 << max(0, n - 1).bit_length()


def applies(evolution, q: torch.Tensor, k: torch.Tensor, logit_bias, query_valid, causal: bool) -> bool:
    """Whether MultiHeadAttention._attend should take the fused path for this evolution and these q (B, K, M, d),
    k (B, K, N, d)."""
    mode = getattr(_state, "mode", None)
    if mode is False or compiling():  # torch.compile and stock_ops() trace the stock ops
        return False
    in_scope = (
        evolution is not None
        and evolution.fusable()
        and logit_bias is None
        and query_valid is None
        and not causal
        and q.shape[-2] == k.shape[-2]
        and q.dtype in _DTYPES
    )
    if not in_scope:
        return False
    if mode is True:
        if not triton_available():
            raise RuntimeError("fused_evolving(True) needs triton (pip install triton)")
        return True
    return q.is_cuda and triton_available()


def evolving_attention(evolution, q, k, v, scale: float, prev_logits=None, valid=None, dropout: float = 0.0):
    """The fused step for an AttentionMapEvolution `evolution` (its weights, alpha and beta); arguments and
    results as fused_evolving_attention."""
    conv = evolution.conv
    return fused_evolving_attention(
        q, k, v, conv.weight, conv.bias, scale, evolution.alpha, evolution.beta, prev_logits, valid, dropout
    )


def fused_evolving_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor,
    scale: float,
    alpha: float,
    beta: float,
    prev_logits: torch.Tensor | None = None,
    valid: torch.Tensor | None = None,
    dropout: float = 0.0,
    block: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """
    q, k, v:     (B, K, N, d_head) float32 or bfloat16 (k and v are cast to q's dtype)
    weight:      (K, K, k, k) map convolution, k odd; bias (K,)
    prev_logits: (B, K, N, N) the previous layer's evolved logits, or None in the first layer
    valid:       (B, N) bool, False at padded steps, or None
    dropout:     attention dropout probability (0 in evaluation)
    block:       query/key tile size (a power of two >= 16; None: 64)
    returns:     head outputs (B, K, N, d_head) in q's dtype; evolved logits A_logit (B, K, N, N) in q's dtype,
                 zero in padded rows and columns
    """
    if not 0.0 <= dropout < 1.0:
        raise ValueError(f"dropout must be in [0, 1), got {dropout!r}")
    if k.shape != q.shape or v.shape != q.shape:
        raise ValueError(f"q, k and v must have one shape (self-attention), got {q.shape}, {k.shape}, {v.shape}")
    dtype = q.dtype
    if dtype not in _DTYPES:
        raise TypeError(f"the fused evolving attention takes float32 or bfloat16, got {dtype}")
    ks = weight.shape[-1]
    if ks % 2 == 0 or weight.shape[-2] != ks:
        raise ValueError(f"the map kernel must be square and odd, got {tuple(weight.shape[-2:])}")
    has_prev = prev_logits is not None and alpha > 0
    with torch.autocast(q.device.type, enabled=False):
        k, v = k.to(dtype), v.to(dtype)
        coef = scale * (1.0 - alpha) if has_prev else scale
        q_hat, k_hat = window_features(q, k, weight, coef, valid)
        prev = prev_logits.to(dtype) if has_prev else None
        # Drawn from torch's generator: torch.manual_seed and checkpointing's saved RNG state replay the masks.
        seed = int(torch.randint(0, 2**30, (1,)).item()) if dropout > 0 else 0
        return _FusedEvolvingAttention.apply(
            q, k, v, q_hat, k_hat, prev, weight, bias, valid, float(scale), float(alpha) if has_prev else 0.0,
            float(beta), float(dropout), seed, block or 64,
        )


def window_features(q, k, weight, coef: float, valid):
    """The separable S part of the map convolution (module docstring): Qhat (B, K, N, W), Khat (B, N, W) with
    W = K * k * d_head zero-padded to a power of two >= 16, in q's dtype, built with differentiable torch ops.

    q, k: (B, K, N, d); weight (K, K, k, k); coef: the factor of S in A_in (scale, times 1 - alpha in later layers)
    """
    b, heads, n, d = q.shape
    ks = weight.shape[-1]
    r = ks // 2
    qf, kf = q.float(), k.float()
    if valid is not None:
        m = valid[:, None, :, None].to(qf.dtype)
        qf, kf = qf * m, kf * m
    # windows[b, h, i, d, a] = x[b, h, i + a - r, d], zero outside [0, N)
    q_win = F.pad(qf, (0, 0, r, r)).unfold(2, ks, 1)
    k_win = F.pad(kf, (0, 0, r, r)).unfold(2, ks, 1)
    q_hat = torch.einsum("ohac,bhida->boihcd", weight.float() * coef, q_win).reshape(b, heads, n, heads * ks * d)
    k_hat = k_win.permute(0, 2, 1, 4, 3).reshape(b, n, heads * ks * d)
    width = heads * ks * d
    padded = max(16, _next_power_of_2(width))
    if padded != width:
        q_hat, k_hat = F.pad(q_hat, (0, padded - width)), F.pad(k_hat, (0, padded - width))
    return q_hat.to(q.dtype).contiguous(), k_hat.to(q.dtype).contiguous()


class _FusedEvolvingAttention(torch.autograd.Function):
    """(out, A_logit) of the module docstring; saves q, k, v, Qhat, Khat, prev, the output and the row log-sum-exps."""

    @staticmethod
    def forward(ctx, q, k, v, q_hat, k_hat, prev, weight, bias, valid, scale, alpha, beta, p_drop, seed, block):
        b, heads, n, d = q.shape
        ks = weight.shape[-1]
        q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
        prev = prev.contiguous() if prev is not None else None
        valid8 = valid.to(torch.int8).contiguous() if valid is not None else None
        w_alpha = (weight.detach().float() * alpha).contiguous()  # the prev part of the convolution
        bias32 = bias.detach().float().contiguous()
        out = torch.empty_like(q)
        logits = torch.empty(b, heads, n, n, dtype=q.dtype, device=q.device)
        lse = torch.empty(b, heads, n, dtype=torch.float32, device=q.device)
        meta = _meta(q, q_hat, ks, prev, valid, p_drop, block)
        grid = (_cdiv(n, block), b * heads)
        _kernels()._forward_kernel[grid](
            q, k, v, q_hat, k_hat, _or(prev, q), _or(valid8, q), w_alpha, bias32, out, logits, lse,
            n, d, scale, alpha, beta, p_drop, seed, **meta,
        )
        ctx.save_for_backward(q, k, v, q_hat, k_hat, prev, weight, bias, valid8, out, lse)
        ctx.settings = scale, alpha, beta, p_drop, seed, block
        ctx.set_materialize_grads(False)
        return out, logits

    @staticmethod
    def backward(ctx, grad_out, grad_logits):
        refuse_double_backward("evolving attention kernel")
        q, k, v, q_hat, k_hat, prev, weight, bias, valid8, out, lse = ctx.saved_tensors
        scale, alpha, beta, p_drop, seed, block = ctx.settings
        b, heads, n, d = q.shape
        ks = weight.shape[-1]
        width = q_hat.shape[-1]
        if grad_out is None:
            grad_out = torch.zeros_like(out)
        grad_out = grad_out.to(q.dtype).contiguous()
        grad_logits = grad_logits.to(q.dtype).contiguous() if grad_logits is not None else None
        # delta_i = sum_j P_ij dP_ij = dO_i . O_i (FlashAttention's backward; holds with dropout too)
        delta = (grad_out.float() * out.float()).sum(-1).contiguous()
        f32 = dict(dtype=torch.float32, device=q.device)
        grad_q = torch.zeros(b, heads, n, d, **f32)
        grad_k = torch.empty(b, heads, n, d, **f32)
        grad_v = torch.empty(b, heads, n, d, **f32)
        grad_q_hat = torch.zeros(b, heads, n, width, **f32)
        grad_k_hat = torch.empty(b, heads, n, width, **f32)  # one per output head, summed below
        n_blocks = _cdiv(n, block)
        grad_bias = torch.empty(b * heads, n_blocks, **f32)
        has_prev = prev is not None
        grad_c = torch.empty(b, heads, n, n, dtype=q.dtype, device=q.device) if has_prev else None
        grad_prev = torch.empty(b, heads, n, n, dtype=q.dtype, device=q.device) if has_prev else None
        w_alpha = (weight.detach().float() * alpha).contiguous()
        meta = _meta(q, q_hat, ks, prev, valid8, p_drop, block)
        _kernels()._backward_kernel[(n_blocks, b * heads)](
            q, k, v, q_hat, k_hat, _or(prev, q), _or(valid8, q), w_alpha, bias.detach().float().contiguous(),
            grad_out, lse, delta, _or(grad_logits, q), grad_q, grad_k, grad_v, grad_q_hat, grad_k_hat,
            _or(grad_c, q), _or(grad_prev, q), grad_bias,
            n, d, scale, alpha, beta, p_drop, seed, (1.0 - alpha) * (1.0 - beta) * scale, alpha * (1.0 - beta),
            HAS_DLOGITS=grad_logits is not None, **meta,
        )
        grad_weight = None
        if has_prev:
            # Per tile and output head, the sums of (keep * prev_h) * shifted dC_o: the prev part's weight gradient.
            partial = torch.empty(b * heads, n_blocks, n_blocks, heads, ks, ks, **f32)
            _kernels()._prev_backward_kernel[(n_blocks, n_blocks, b * heads)](
                prev, _or(valid8, q), w_alpha, grad_c, grad_prev, partial, n,
                K=heads, KS=ks, BM=block, BN=block, HAS_MASK=valid8 is not None, num_warps=meta["num_warps"],
            )
            grad_weight = alpha * partial.view(b, heads, -1, heads, ks, ks).sum((0, 2)).transpose(0, 1)
            grad_weight = grad_weight.to(weight.dtype)
        return (
            grad_q.to(q.dtype), grad_k.to(k.dtype), grad_v.to(v.dtype), grad_q_hat.to(q_hat.dtype),
            grad_k_hat.sum(1).to(k_hat.dtype), grad_prev, grad_weight, _bias_grad(grad_bias, b, heads, bias.dtype),
            None, None, None, None, None, None, None,
        )


def _bias_grad(partial: torch.Tensor, b: int, heads: int, dtype) -> torch.Tensor:
    """(B*K, blocks) per-tile sums of dC -> (K,)"""
    return partial.view(b, heads, -1).sum((0, 2)).to(dtype)


def _or(tensor, placeholder):
    """A pointer argument for an absent tensor (the kernel never reads it: its constexpr flag is off)."""
    return tensor if tensor is not None else placeholder


def _meta(q, q_hat, ks, prev, valid, p_drop, block):
    if block < 16 or block & (block - 1):
        raise ValueError(f"block must be a power of two >= 16, got {block}")
    return dict(
        K=q.shape[1], KS=ks, BM=block, BN=block, BD=max(16, _next_power_of_2(q.shape[-1])),
        BW=q_hat.shape[-1], HAS_PREV=prev is not None, HAS_MASK=valid is not None, DROPOUT=p_drop > 0,
        PREC="ieee" if q.dtype == torch.float32 else "tf32",
        # A (64, 64) fp32 tile is 32 registers a thread at 4 warps, and the backward holds about eight.
        num_warps=8 if block >= 64 else 4,
    )
