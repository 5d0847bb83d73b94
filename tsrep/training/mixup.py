"""Mixup of training batches (Zhang, Cisse, Dauphin and Lopez-Paz, "mixup: Beyond Empirical Risk
Minimization", ICLR 2018).

Each batch is replaced by convex combinations of its cases with a shuffled copy of itself,
``lam * x + (1 - lam) * x[perm]``, one weight ``lam ~ Beta(alpha, alpha)`` per batch, and the loss
is mixed with the same weight: ``lam * loss(out, y) + (1 - lam) * loss(out, y[perm])``. With a small
alpha (0.2) most weights lie near 0 or 1, so a batch is mostly one case with a little of another:
a regulariser that keeps the network's outputs between classes linear rather than a new task.

Every draw comes from the training loop's generator, in amounts that do not depend on the data,
so a seed fixes the whole run and every process of a data-parallel run draws the same numbers.
"""

from __future__ import annotations

import numpy as np
import torch


def beta_symmetric(alpha: float, generator: torch.Generator) -> float:
    """One draw of Beta(alpha, alpha), seeded by one draw of `generator` (torch has no seeded Beta sampler)."""
    seed = int(torch.randint(2**62, (1,), generator=generator))
    return float(np.random.default_rng(seed).beta(alpha, alpha))


def mixup_partners(alpha: float, batch_index: torch.Tensor, generator: torch.Generator):
    """(lam, partners): the batch's weight and the case mixed into each case of `batch_index` (n,)
    -> partners (n,), a shuffle of `batch_index`. Data-parallel processes each take their shard of
    both (tsrep.training.distributed.shard_indices) and so mix the cases one process would."""
    lam = beta_symmetric(alpha, generator)
    return lam, batch_index[torch.randperm(len(batch_index), generator=generator)]


def mix(values, valid, partner_values, partner_valid, lam: float):
    """Two batches of series (B, T, C) and (B, T', C) with valid steps (B, T) / (B, T') bool or None
    (all valid) -> lam * values + (1 - lam) * partner_values over the longer length, and its valid
    steps: a step is valid where either series has one (padded steps are zero, so a shorter series
    adds nothing past its end)."""
    t = max(values.shape[1], partner_values.shape[1])
    values, valid = pad_steps(values, valid, t)
    partner_values, partner_valid = pad_steps(partner_values, partner_valid, t)
    mixed = lam * values + (1.0 - lam) * partner_values
    if valid is None and partner_valid is None:
        return mixed, None
    full = lambda v: torch.ones(mixed.shape[:2], dtype=torch.bool, device=mixed.device) if v is None else v  # noqa: E731
    return mixed, full(valid) | full(partner_valid)


def pad_steps(values, valid, t: int):
    """(B, t0, C) values and (B, t0) valid steps or None (all valid) -> zero steps, invalid, appended up to length t
    (valid stays None when nothing is appended)."""
    extra = t - values.shape[1]
    if not extra:
        return values, valid
    if valid is None:
        valid = torch.ones(values.shape[:2], dtype=torch.bool, device=values.device)
    return torch.nn.functional.pad(values, (0, 0, 0, extra)), torch.nn.functional.pad(valid, (0, extra))
