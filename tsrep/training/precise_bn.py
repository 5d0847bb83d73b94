"""BatchNorm statistics recomputed after training on the training data as prediction will see it.

During training a BatchNorm layer keeps exponential running averages (momentum 0.1) of the statistics of the
last few batches, and those batches were augmented and mixed (window warping, mixup). Prediction normalises
unaugmented series with those averages: when few batches make an epoch, the averages follow the last handful of
augmented batches and the prediction of a fitted network can change from one epoch to the next while its weights
hardly move (a 62-case problem: training accuracy 1.00 at one epoch, 0.84 at the next, with a learning rate of
1e-6). Recomputing them once training is done, as averages over batches of the unaugmented training set, removes
both the augmentation's shift and the dependence on the last batches: PreciseBN (Wu and Johnson, "Rethinking
'Batch' in BatchNorm", arXiv:2105.07576, 2021). Batches keep the training batch size, since a BatchNorm network
normalises by the statistics of batches of that size; each weighs by its cases, so that a last batch of 3 cases
after one of 64 does not count as much as it.
"""

from __future__ import annotations

import torch
from torch import nn

from tsrep.training.loop import SeriesBatchData, shuffled_batches


def recompute_batchnorm_statistics(
    model: nn.Module, data: SeriesBatchData, batch_size: int, device, generator: torch.Generator
) -> int:
    """Replace the running statistics of `model`'s BatchNorm layers by their average over batches of `data`.

    Every layer that trains in training mode (a frozen module that stays in eval mode keeps its statistics)
    restarts its running statistics and takes the mean of the batch means and variances, each batch weighted by
    its number of cases, over one pass of shuffled batches of `batch_size` cases (shuffled by `generator`, so that
    a training file sorted by class gives batches like those of training), with every other layer in eval mode
    (no dropout) and no gradient. Padded steps are left out of the statistics (tsrep.nn.MaskedBatchNorm1d).
    `model` is left in eval mode. Returns the number of layers recomputed (0: nothing to do).
    """
    if len(data) < 1:
        raise ValueError("recompute_batchnorm_statistics needs at least one case in data, got none")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 2:
        raise ValueError(f"batch_size must be an integer >= 2 (BatchNorm needs two cases a batch), got {batch_size!r}")
    model.train()  # to find the layers that train: a frozen module's train() keeps it in eval mode
    layers = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)
              and m.training and m.track_running_stats]
    model.eval()
    if not layers:
        return 0
    momenta = [layer.momentum for layer in layers]
    try:
        for layer in layers:
            layer.reset_running_stats()
            layer.train()
        cases = 0
        with torch.no_grad():
            for index in shuffled_batches(len(data), batch_size, generator):
                # running += (batch - running) * n_batch / cases so far: the mean over cases of their batch's
                # statistics, so that a short last batch (3 cases after 64) weighs what its cases weigh.
                cases += len(index)
                for layer in layers:
                    layer.momentum = len(index) / cases
                values, mask, _ = data.batch(index, device)
                model(values, mask)
    finally:
        for layer, momentum in zip(layers, momenta):
            layer.momentum = momentum
        model.eval()
    return len(layers)
