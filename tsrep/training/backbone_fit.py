"""Classification training for backbones that take whole tensors (images, token ids), not padded series.

The training loop (tsrep.training.loop.Trainer) with shuffled minibatches drawn with a torch.Generator,
cross-entropy and an optimiser by name (tsrep.training.optim). Nothing else: no workers, no early
stopping; the caller owns the data split.
"""

from __future__ import annotations

import time

import torch
import torch.nn.functional as F
from torch import nn

from tsrep.training.callbacks import CallbackList
from tsrep.training.distributed import setup_data_parallel
from tsrep.training.loop import History, Trainer
from tsrep.training.optim import build_optimizer
from tsrep.training.schedules import LRSchedule


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
        if callable(lr_schedule):  # the user's scheduler, stepped after every epoch as in the estimators
            self.loop_callbacks.append(LRSchedule(lr_schedule, optimizer, epochs * self.steps_per_epoch))
        self.history = History()

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
        X_eval, y_eval = self.eval_data
        logits = predict_logits(self.model, X_eval, batch_size=self.batch_size, device=self.device)
        y_eval = y_eval.cpu()
        return {"val_loss": float(F.cross_entropy(logits, y_eval)),
                "val_score": float((logits.argmax(1) == y_eval).float().mean())}

    def record(self, logs: dict) -> None:
        self.history.train_loss.append(logs["train_loss"])
        if "val_score" in logs:
            self.history.val_loss.append(logs["val_loss"])
            self.history.val_score.append(logs["val_score"])


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
    lr_schedule=None,
    eval_data: tuple[torch.Tensor, torch.Tensor] | None = None,
    device="cpu",
    callbacks=None,
) -> History:
    """Train `model` in place with cross-entropy on (X, y) and return its history
    (tsrep.training.History: train_loss, val_loss, val_score, epoch_seconds per epoch).

    X: (n, ...) inputs of model.forward; y: (n,) long class indices. The rows are reshuffled every epoch by
    `generator` (a fresh one seeded 0 when None), so the same generator state gives the same run.
    optimizer: a name or class for tsrep.training.optim.build_optimizer (AdamW by default).
    lr_schedule: None (constant lr), "cosine" (per-step cosine decay from lr to 0 over all epochs) or a
    callable ``optimizer -> torch scheduler``, stepped after every epoch (as the estimators' lr_schedule).
    eval_data: (X_eval, y_eval): cross-entropy (val_loss) and accuracy (val_score) after every epoch
    (by every rank, on all of it).
    Data-parallel under an initialised process group of several ranks (tsrep.training.distributed,
    e.g. launched by torchrun): each rank trains on its shard of every batch; the result equals one
    process's (same generator state on every rank, checked).
    callbacks: a Callback or a list of them (tsrep.training.callbacks): logs hold train_loss, val_loss and
    val_score (on eval_data, when given), lr and seconds; on_epoch_end returning True stops training.
    """
    callbacks = CallbackList(callbacks)
    _check_xy(X, y, "fit_classifier")
    if eval_data is not None:
        _check_xy(*eval_data, "fit_classifier eval_data")
    for name, value in (("epochs", epochs), ("batch_size", batch_size)):
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if not (lr_schedule in (None, "cosine") or callable(lr_schedule)):
        raise ValueError(f"lr_schedule must be None, 'cosine' or a callable optimizer -> scheduler, got {lr_schedule!r}")
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
