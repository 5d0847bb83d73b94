"""Softmax, dropout and the product with the values on materialised attention maps (evolving attention).

On a CPU, F.dropout on a (B, K, N, N) map spends most of its time drawing one random float per
entry (measured: 354 ms for 16 x 8 x 512 x 512 entries on 2 cores, against 49 ms for the softmax
that precedes it; 30 % of an EA-DC-Transformer training step at T = 128). Here one 64-bit draw
gives four 16-bit uniform integers, and an entry is dropped when its integer falls below a
threshold: a quarter of the draws (90 ms for the same map).

The drop probability is quantised to a multiple of 2^-16: p_eff = round(p * 65536) / 65536
(|p_eff - p| <= 7.7e-6), and kept entries are scaled by 1 / (1 - p_eff), so the expectation is
exact. The scale is returned rather than applied, so a caller can put it on a smaller tensor
(attention: on the (B, K, N, d_head) head outputs instead of the map).

attend_values does softmax -> dropout -> @ V in one autograd step that keeps the softmax output and
the one-byte keep mask for backward, not also the dropped weights (one fp32 map less per layer),
and recomputes the dropped weights in backward.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from tsrep.nn._compile import cheap_masks, compiling, refuse_double_backward

_LEVELS = 1 << 16


def keep_mask(like: torch.Tensor, p: float) -> tuple[torch.Tensor | None, float]:
    """(bool mask of like's shape, True with probability 1 - p_eff, and 1 / (1 - p_eff)); (None, 1) for p_eff = 0."""
    threshold = round(p * _LEVELS)
    if threshold == 0:
        return None, 1.0
    n = like.numel()
    # Full 64-bit range: every one of the four 16-bit lanes is uniform over [-2^15, 2^15).
    # new_empty, not torch.empty: under torch.func.vmap it is batched, so that every member draws its own bits.
    bits = like.new_empty(((n + 3) // 4,), dtype=torch.int64).random_(-(2**63), None)
    return bits.view(torch.int16)[:n].view(like.shape) >= threshold - _LEVELS // 2, _LEVELS / (_LEVELS - threshold)


def attend_values(scores: torch.Tensor, v: torch.Tensor, p: float) -> torch.Tensor:
    """softmax(scores) (in at least fp32) -> dropout p -> @ v.

    scores: (..., M, N) logits, -inf where a query may not attend; v: (..., N, d) -> (..., M, d) in v's dtype
    """
    if not 0.0 <= p < 1.0:
        raise ValueError(f"dropout must be in [0, 1), got {p!r}")
    if compiling():
        # torch.compile fuses the softmax, its own dropout and the product, and draws its own random numbers.
        probs = torch.softmax(scores, dim=-1, dtype=torch.promote_types(scores.dtype, torch.float32)).to(v.dtype)
        if cheap_masks() and p > 0 and probs.device.type == "cpu":  # stacked members on a CPU: the cheaper mask
            keep, scale = keep_mask(probs, p)
            return (probs * keep.to(probs.dtype).mul_(scale)) @ v if keep is not None else probs @ v
        return F.dropout(probs, p) @ v
    keep, scale = keep_mask(scores, p) if p > 0 else (None, 1.0)
    return SoftmaxDropoutValues.apply(scores, v, keep, scale)


class SoftmaxDropoutValues(torch.autograd.Function):
    """h = (softmax(s) * keep) @ v * scale; backward keeps softmax(s), keep and v."""

    @staticmethod
    def forward(ctx, scores, v, keep, scale):
        probs = torch.softmax(scores, dim=-1, dtype=torch.promote_types(scores.dtype, torch.float32))
        weights = probs.to(v.dtype)
        if keep is not None:
            weights = weights * keep
        h = weights @ v
        if scale != 1.0:
            h = h * scale
        ctx.save_for_backward(probs, v, keep)
        ctx.scale, ctx.scores_dtype = scale, scores.dtype
        return h

    @staticmethod
    def backward(ctx, grad):
        refuse_double_backward("attention softmax-dropout-values step")
        probs, v, keep = ctx.saved_tensors
        grad = grad.to(v.dtype)
        if ctx.scale != 1.0:
            grad = grad * ctx.scale
        weights = probs.to(v.dtype)
        if keep is not None:
            weights = weights * keep
        # (grad^T @ W)^T, not W^T @ grad: a product with a transposed map is ~15x slower on CPU.
        grad_v = (grad.transpose(-2, -1) @ weights).transpose(-2, -1) if ctx.needs_input_grad[1] else None
        grad_scores = None
        if ctx.needs_input_grad[0]:
            grad_weights = grad @ v.transpose(-2, -1)
            if keep is not None:
                grad_weights = grad_weights * keep
            grad_scores = torch._softmax_backward_data(grad_weights.to(probs.dtype), probs, -1, probs.dtype)
            grad_scores = grad_scores.to(ctx.scores_dtype)
        return grad_scores, grad_v, None, None
