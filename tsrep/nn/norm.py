"""Normalisation over the channel axis of (B, T, C) sequences that ignores padded steps."""

from __future__ import annotations

import torch
from torch import nn

from tsrep.nn._compile import compiling

NORMS = ("layer", "batch")


class _SumOverRanks(torch.autograd.Function):
    """Sum of a tensor over the ranks of a process group; the gradient of each rank's input is the
    sum of the output gradients of all ranks (every rank's loss depends on every rank's input)."""

    @staticmethod
    def forward(ctx, tensor: torch.Tensor, group) -> torch.Tensor:
        ctx.group = group
        out = tensor.clone()
        torch.distributed.all_reduce(out, group=group)
        return out

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        grad = grad.clone()
        torch.distributed.all_reduce(grad, group=ctx.group)
        return grad, None


class MaskedBatchNorm1d(nn.BatchNorm1d):
    """BatchNorm over channels whose batch statistics use only valid (non-padded) steps.

    Data parallelism: while `process_group` is set (tsrep.training.distributed.DataParallel sets it
    for the length of a data-parallel fit), training statistics are sums over the ranks of that
    group, taken inside the autograd graph as torch.nn.SyncBatchNorm does (which runs on GPUs only):
    every rank normalises its shard with the statistics of the whole global batch, the gradient
    flows through them to every rank, and the running statistics are the one-process ones.
    """

    process_group = None  # a torch.distributed group while training data-parallel, else None

    def forward(self, x: torch.Tensor, valid: torch.Tensor | None = None) -> torch.Tensor:
        """x: (B, T, C); valid: (B, T) bool or None -> (B, T, C)"""
        if self.training and self.process_group is not None:
            return self._forward_synced(x, valid)
        if not self.training or valid is None:
            # Eval uses running statistics; without padding the stock BatchNorm is exact. It runs on the
            # (B * T, C) rows, a view of x: a (B, C, T) transpose would cost a copy in and one out.
            return super().forward(x.reshape(-1, x.shape[-1])).view(x.shape)
        if compiling():
            return self._forward_weighted(x, valid)
        flat = x[valid]  # (n_valid, C): only real steps feed the statistics
        normed = super().forward(flat)
        out = torch.zeros_like(x)
        out[valid] = normed
        return out

    def forward_channels_first(self, x: torch.Tensor, valid: torch.Tensor | None = None) -> torch.Tensor:
        """forward for x: (B, C, T) (a convolution's layout); valid: (B, T) bool or None -> (B, C, T)"""
        if (not self.training or valid is None) and self.process_group is None:
            return super().forward(x)  # the stock kernel, in the layout it is fastest in
        return self.forward(x.transpose(1, 2), valid).transpose(1, 2)

    def _forward_synced(self, x: torch.Tensor, valid: torch.Tensor | None) -> torch.Tensor:
        """x: (B, T, C); valid: (B, T) bool or None -> (B, T, C), with statistics over all ranks"""
        flat = x[valid] if valid is not None else x.reshape(-1, x.shape[-1])  # (n_valid, C)
        rows = flat.double()  # sum and sum of squares in float64: E[x^2] - mean^2 loses nothing that matters
        count = rows.new_full((1,), rows.shape[0])
        totals = _SumOverRanks.apply(torch.cat([rows.sum(0), (rows * rows).sum(0), count]), self.process_group)
        c = flat.shape[1]
        n = totals[-1]
        mean = totals[:c] / n
        var = (totals[c : 2 * c] / n - mean * mean).clamp_min(0)  # biased, as BatchNorm normalises
        normed = self._normalised(flat, mean, var).to(x.dtype)
        self._update_running_statistics(mean, var, n)
        if valid is None:
            return normed.view_as(x)
        out = torch.zeros_like(x)
        out[valid] = normed
        return out

    def _forward_weighted(self, x: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
        """x: (B, T, C); valid: (B, T) bool -> (B, T, C): the statistics of the indexed path from sums weighted
        by the mask, with no shape that depends on the data (torch.compile cannot trace x[valid])."""
        dtype = torch.promote_types(x.dtype, torch.float32)
        weights = valid.unsqueeze(-1).to(dtype)  # (B, T, 1)
        xf = x.to(dtype)
        n = weights.sum()
        mean = (xf * weights).sum((0, 1)) / n
        var = ((xf - mean).square() * weights).sum((0, 1)) / n  # biased, as BatchNorm normalises
        self._update_running_statistics(mean, var, n)
        return (self._normalised(xf, mean, var) * weights).to(x.dtype)  # zero at padded steps, as indexing leaves them

    def _normalised(self, rows: torch.Tensor, mean: torch.Tensor, var: torch.Tensor) -> torch.Tensor:
        """(rows - mean) / sqrt(var + eps), then the affine map: as the stock kernel under autocast, in at least
        float32 (the caller casts back to its input's dtype)."""
        dtype = torch.promote_types(rows.dtype, torch.float32)
        normed = (rows.to(dtype) - mean.to(dtype)) * torch.rsqrt(var + self.eps).to(dtype)
        return normed * self.weight + self.bias if self.affine else normed

    def _update_running_statistics(self, mean: torch.Tensor, var: torch.Tensor, n: torch.Tensor) -> None:
        """BatchNorm's running-statistics update from a batch's mean, biased variance and number of rows."""
        if not self.track_running_stats:
            return
        with torch.no_grad():
            self.num_batches_tracked.add_(1)
            factor = 1.0 / float(self.num_batches_tracked) if self.momentum is None else self.momentum
            unbiased = var * n / (n - 1).clamp_min(1)
            # copy_ of an out-of-place lerp: the same numbers as lerp_, which torch.func.vmap (ensemble members
            # trained together) has no batching rule for.
            self.running_mean.copy_(torch.lerp(self.running_mean, mean.to(self.running_mean.dtype), factor))
            self.running_var.copy_(torch.lerp(self.running_var, unbiased.to(self.running_var.dtype), factor))


class SequenceNorm(nn.Module):
    """LayerNorm or padding-aware BatchNorm over the channels of (B, T, C), chosen by name."""

    def __init__(self, kind: str, dim: int):
        super().__init__()
        if kind not in NORMS:
            raise ValueError(f"norm must be one of {NORMS}, got {kind!r}")
        self.kind = kind
        self.norm = nn.LayerNorm(dim) if kind == "layer" else MaskedBatchNorm1d(dim)

    def forward(self, x: torch.Tensor, valid: torch.Tensor | None = None) -> torch.Tensor:
        """x: (B, T, C); valid: (B, T) bool or None -> (B, T, C)"""
        if self.kind == "layer":
            return self.norm(x)
        return self.norm(x, valid)

    def forward_channels_first(self, x: torch.Tensor, valid: torch.Tensor | None = None) -> torch.Tensor:
        """forward for x: (B, C, T); valid: (B, T) bool or None -> (B, C, T)"""
        if self.kind == "layer":
            return self.norm(x.transpose(1, 2)).transpose(1, 2)
        return self.norm.forward_channels_first(x, valid)
