"""Classification training for backbones that take whole tensors (images, token ids), not padded series.

The training loop (tsrep.training.loop.Trainer) with shuffled minibatches drawn with a torch.Generator,
cross-entropy and an optimiser by name (tsrep.training.optim). Nothing else: no workers, no early
stopping; the caller owns the data split.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from tsrep.training.callbacks import CallbackList
from tsrep.training.distributed import setup_data_parallel
from tsrep.training.loop import Trainer
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


class ClassifierTrainer(Trainer):
    """The loop of :func:`fit_classifier`: whole input tensors, cross-entropy, an optional per-step
    lr schedule and held-out accuracy after every epoch."""

    def __init__(self, model, X, y, optimizer, device, generator, batch_size, grad_clip, lr, epochs,
                 lr_schedule=None, eval_data=None, callbacks=None):
        super().__init__(model, optimizer, X, device, generator, batch_size, grad_clip, lr, callbacks)
        self.X, self.y, self.eval_data = X, y, eval_data
        self.scheduler = (
            torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs * self.steps_per_epoch)
            if lr_schedule == "cosine"
            else None
        )
        self.history = FitHistory()

    def batch_loss(self, index):
        shard = self.parallel.shard(index)  # one process: index itself
        xb, yb = self.X[shard].to(self.device), self.y[shard].to(self.device)
        return F.cross_entropy(self.parallel.model(xb), yb), len(shard), len(index)

    def train_epoch(self, epoch: int) -> float:
        tic = time.perf_counter()
        loss = super().train_epoch(epoch)
        self.history.epoch_seconds.append(time.perf_counter() - tic)  # training only, not the evaluation
        return loss

    def after_step(self) -> None:
        if self.scheduler is not None:
            self.scheduler.step()

    def validate(self) -> dict:
        if self.eval_data is None:
            return {}
        return {"val_score": evaluate(self.model, *self.eval_data, batch_size=self.batch_size, device=self.device)}

    def record(self, logs: dict) -> None:
        self.history.train_loss.append(logs["train_loss"])
        if "val_score" in logs:
            self.history.eval_accuracy.append(logs["val_score"])


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
    trainer = ClassifierTrainer(
        model, X, y, opt, device, generator, batch_size, grad_clip, lr, epochs, lr_schedule, eval_data, callbacks
    )
    fit_info = {
        "member": None, "phase": "train",
        "params": {"epochs": epochs, "batch_size": batch_size, "lr": lr, "optimizer": optimizer,
                   "grad_clip": grad_clip, "lr_schedule": lr_schedule},
    }
    return trainer.fit(epochs, fit_info)


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
