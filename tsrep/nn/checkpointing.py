"""Per-layer activation checkpointing that leaves BatchNorm running statistics as one plain pass would.

torch.utils.checkpoint (use_reentrant=False) keeps only a layer's inputs and re-runs its forward in
backward. For an EA-DC-Transformer layer that means one (B, K, N, N) map per layer is kept (the
carried logits, the next layer's input) instead of about four (A_in, the ReLU output, the softmax
output and the dropped weights), at the price of one more forward pass. Dropout draws the same
masks in the recomputation (the RNG state is restored). BatchNorm would update its running
statistics a second time in the recomputation: its momentum is 0 and its batch counter is
restored while the layer is recomputed, so a checkpointed model trains exactly like a plain one.
"""

from __future__ import annotations

import contextlib
import functools

import torch
from torch import nn


@contextlib.contextmanager
def frozen_batchnorm_statistics(module: nn.Module):
    """Within the block, BatchNorm layers of `module` normalise with batch statistics as usual but
    leave running_mean, running_var and num_batches_tracked unchanged."""
    saved = []
    for m in module.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm) and m.track_running_stats and m.momentum is not None:
            counter = m.num_batches_tracked.clone() if m.num_batches_tracked is not None else None
            saved.append((m, m.momentum, counter))
            m.momentum = 0.0  # running = (1 - 0) * running + 0 * batch: unchanged
    try:
        yield
    finally:
        for m, momentum, counter in saved:
            m.momentum = momentum
            if counter is not None:
                m.num_batches_tracked.copy_(counter)


def checkpointed(layer: nn.Module, *args):
    """layer(*args), keeping only args for backward when gradients are needed (else a plain call)."""
    if not torch.is_grad_enabled():
        return layer(*args)
    return _eager_checkpoint()(layer, *args)


@functools.cache
def _eager_checkpoint():
    """torch's checkpoint with the BatchNorm guard, run eagerly: torch.compile cannot trace a checkpoint with a
    context_fn, so a checkpointed layer runs eagerly and the rest compiled. Built on first use: importing
    torch.utils.checkpoint and applying torch.compiler.disable load torch._dynamo (seconds), which a fit
    without checkpointing, and `import tsrep`, need not pay."""
    from torch.utils.checkpoint import checkpoint

    @torch.compiler.disable
    def run(layer, *args):
        return checkpoint(
            layer,
            *args,
            use_reentrant=False,
            context_fn=lambda: (contextlib.nullcontext(), frozen_batchnorm_statistics(layer)),
        )

    return run
