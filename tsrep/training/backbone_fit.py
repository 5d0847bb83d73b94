"""A plain classification loop for backbones that take whole tensors (images, token ids), not padded series.

Shuffled minibatches drawn with a torch.Generator, cross-entropy, loss.backward(), an optimiser by name
(tsrep.training.optim). Nothing else: no workers, no early stopping; the caller owns the data split.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from tsrep.training.callbacks import CallbackList, current_lr
from tsrep.training.distributed import DataParallel, setup_data_parallel
from tsrep.training.loop import backward_and_step, n_batches, shuffled_batches
from tsrep.training.optim import build_optimizer


@dataclass
class FitHistory:
    """Per-epoch mean training loss, held-out accuracy (when eval data is given) and wall seconds."""

    train_loss: list[float] = field(default_factory=list)
    eval_accuracy: list[float] = field(default_factory=list)
    epoch_seconds: list[float] = field(default_factory=list)


def _check_xy(X: torch.Tensor, y: torch.Tensor, what: str) -> None:
    if not isinstance(X, torch.Tensor) or not isinstance(y, torch.Tensor):
        raise TypeError(f"{what}: X and y must be torch tensors, got {type(X).__name__} and {type(y).__name__}")
    if y.ndim != 1 or len(X) != len(y):
        raise ValueError(f"{what}: y must be 1-D with one label per row of X, got X {tuple(X.shape)}, y {tuple(y.shape)}")
    if len(X) == 0:
        raise ValueError(f"{what}: X has no cases")
    if X.is_floating_point() and not bool(torch.isfinite(X).all()):
        raise ValueError(f"{what}: X contains NaN or infinite values")


def fit_classifier(
    model: nn.Module,
    X: torch.Tensor,
    y: torch.Tensor,
    *,
    epochs: int = 10,
    batch_size: int = 64,
    lr: float = 1e-3,
    generator: torch.Generator | None = None,
    optimizer="adamw",
    optimizer_kwargs: dict | None = None,
    grad_clip: float | None = 1.0,
    lr_schedule: str | None = None,
    eval_data: tuple[torch.Tensor, torch.Tensor] | None = None,
    device="cpu",
    callbacks=None,
) -> FitHistory:
    """Train `model` in place with cross-entropy on (X, y) and return its history.

    X: (n, ...) inputs of model.forward; y: (n,) long class indices. The rows are reshuffled every epoch by
    `generator` (a fresh one seeded 0 when None), so the same generator state gives the same run.
    optimizer: a name or class for tsrep.training.optim.build_optimizer (AdamW by default).
    lr_schedule: None (constant lr) or "cosine" (per-step cosine decay from lr to 0 over all epochs).
    eval_data: (X_eval, y_eval) scored with `evaluate` after every epoch (by every rank, on all of it).
    Data-parallel under an initialised process group of several ranks (tsrep.training.distributed,
    e.g. launched by torchrun): each rank trains on its shard of every batch; the result equals one
    process's (same generator state on every rank, checked).
    callbacks: a Callback or a list of them (tsrep.training.callbacks): logs hold train_loss, val_score
    (the accuracy on eval_data, when given), lr and seconds; on_epoch_end returning True stops training.
    """
    callbacks = CallbackList(callbacks)
    _check_xy(X, y, "fit_classifier")
    for name, value in (("epochs", epochs), ("batch_size", batch_size)):
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if lr_schedule not in (None, "cosine"):
        raise ValueError(f"lr_schedule must be None or 'cosine', got {lr_schedule!r}")
    if generator is None:
        generator = torch.Generator().manual_seed(0)
    device = setup_data_parallel(device)  # under torchrun: join the process group, take this rank's GPU
    model.to(device)
    opt = build_optimizer(optimizer, model.parameters(), lr, optimizer_kwargs)
    parallel = DataParallel(model, device)  # one process: the model itself, nothing more
    parallel.check_batch_size(batch_size)
    parallel.check_inputs(X, generator)
    min_size = parallel.min_batch_size
    steps_per_epoch = n_batches(len(X), batch_size, min_size)
    scheduler = (
        torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs * steps_per_epoch)
        if lr_schedule == "cosine"
        else None
    )
    history = FitHistory()
    info = {
        "model": model, "epochs": epochs, "start_epoch": 0, "member": None, "phase": "train",
        "params": {"epochs": epochs, "batch_size": batch_size, "lr": lr, "optimizer": optimizer,
                   "grad_clip": grad_clip, "lr_schedule": lr_schedule},
    }
    with callbacks.fitting(info, history):
        with parallel:
            for epoch in range(epochs):
                parallel.model.train()
                total, seen = 0.0, 0
                tic = time.perf_counter()
                for index in shuffled_batches(len(X), batch_size, generator, min_size):
                    shard = parallel.shard(index)  # one process: index itself
                    xb, yb = X[shard].to(device), y[shard].to(device)
                    opt.zero_grad(set_to_none=True)
                    loss = parallel.weight_loss(F.cross_entropy(parallel.model(xb), yb), len(shard), len(index))
                    batch_loss = parallel.batch_loss(loss)
                    backward_and_step(model, opt, loss, grad_clip, f"training loss at epoch {epoch}", lr, batch_loss)
                    if scheduler is not None:
                        scheduler.step()
                    total += batch_loss.item() * len(index)
                    seen += len(index)
                history.epoch_seconds.append(time.perf_counter() - tic)  # training only, as before
                history.train_loss.append(total / max(seen, 1))
                epoch_logs = {"train_loss": history.train_loss[-1]}
                if eval_data is not None:
                    history.eval_accuracy.append(evaluate(model, *eval_data, batch_size=batch_size, device=device))
                    epoch_logs["val_score"] = history.eval_accuracy[-1]
                epoch_logs.update(lr=current_lr(opt), seconds=time.perf_counter() - tic)
                if callbacks.epoch_end(epoch, epoch_logs):
                    break
    return history


@torch.no_grad()
def predict_logits(model: nn.Module, X: torch.Tensor, batch_size: int = 256, device="cpu") -> torch.Tensor:
    """Model outputs (n, n_classes) for every row of X, in eval mode, gathered on the CPU."""
    model.eval()
    outs = [model(X[i : i + batch_size].to(device)).float().cpu() for i in range(0, len(X), batch_size)]
    return torch.cat(outs)


def evaluate(model: nn.Module, X: torch.Tensor, y: torch.Tensor, batch_size: int = 256, device="cpu") -> float:
    """Accuracy of model's argmax on (X, y)."""
    _check_xy(X, y, "evaluate")
    return float((predict_logits(model, X, batch_size, device).argmax(1) == y.cpu()).float().mean())
