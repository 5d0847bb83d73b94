"""Classification training for backbones that take whole tensors (images; token ids with their attention
mask), not padded series.

The training loop (tsrep.training.loop.Trainer) with shuffled minibatches drawn with a torch.Generator,
cross-entropy (or any loss) and an optimiser by name (tsrep.training.optim). Nothing else: no workers, no
early stopping; the caller owns the data split. A model whose forward takes an ``attention_mask`` gets the
mask in every training and prediction batch, or the call is refused (TensorInputs.check_reaches).
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import time
from collections.abc import Mapping

import torch
import torch.nn.functional as F
from torch import nn

from tsrep.training.callbacks import CallbackList
from tsrep.training.distributed import setup_data_parallel
from tsrep.training.loop import History, Trainer
from tsrep.training.optim import build_optimizer
from tsrep.training.schedules import LRSchedule


class TensorInputs:
    """The inputs of a model as whole tensors with one row per case: positional (a tensor, or a tuple of
    them) and/or keyword (a dict, such as a Hugging Face tokenizer's BatchEncoding, whose keys name
    forward's arguments: ``{"input_ids": ..., "attention_mask": ...}``). ``model(*rows.args, **rows.kwargs)``
    runs a batch of rows."""

    def __init__(self, X, what: str):
        if isinstance(X, torch.Tensor):
            args, kwargs = (X,), {}
        elif isinstance(X, tuple) and X:
            args, kwargs = X, {}
        elif isinstance(X, Mapping) and X:
            args, kwargs = (), dict(X)
        else:
            raise TypeError(
                f"{what}: X must be a torch tensor, a non-empty tuple of tensors or a dict of tensors (keyword "
                f"arguments of the model), got {type(X).__name__}"
            )
        tensors = [*args, *kwargs.values()]
        if not all(isinstance(t, torch.Tensor) for t in tensors):
            kinds = [type(t).__name__ for t in tensors]
            raise TypeError(f"{what}: every part of X must be a torch tensor, got {kinds}")
        if any(t.ndim == 0 for t in tensors) or len({len(t) for t in tensors}) != 1:
            raise ValueError(f"{what}: the tensors of X must have one row per case, got shapes "
                             f"{[tuple(t.shape) for t in tensors]}")
        self.args, self.kwargs = tuple(args), kwargs
        self.first = tensors[0]

    def __len__(self) -> int:
        return len(self.first)

    def rows(self, index, device) -> TensorInputs:
        """The rows `index` (a tensor of indices or a slice) on `device`."""
        part = copy.copy(self)
        part.args = tuple(t[index].to(device) for t in self.args)
        part.kwargs = {k: t[index].to(device) for k, t in self.kwargs.items()}
        part.first = part.args[0] if part.args else next(iter(part.kwargs.values()))
        return part

    def run(self, model: nn.Module) -> torch.Tensor:
        return model(*self.args, **self.kwargs)

    def check_reaches(self, model: nn.Module, what: str) -> None:
        """ValueError when model.forward takes an ``attention_mask`` that X does not give: padded token ids
        without their mask would attend to the padding, so a text model's batch must carry it."""
        forward = getattr(model, "forward", None)
        try:
            parameters = list(inspect.signature(forward).parameters)
        except (TypeError, ValueError):
            return
        if "attention_mask" not in parameters or "attention_mask" in self.kwargs:
            return
        if parameters.index("attention_mask") >= len(self.args):
            raise ValueError(
                f"{what}: {type(model).__name__}.forward takes an attention_mask, but X gives none: padded token "
                "ids would attend to their padding. Pass X=(input_ids, attention_mask) or the tokenizer's dict "
                "(input_ids, attention_mask)"
            )


def _check_xy(X, y: torch.Tensor, what: str) -> TensorInputs:
    inputs = X if isinstance(X, TensorInputs) else TensorInputs(X, what)
    if not isinstance(y, torch.Tensor):
        raise TypeError(f"{what}: y must be a torch tensor, got {type(y).__name__}")
    if y.ndim != 1 or len(inputs) != len(y):
        raise ValueError(
            f"{what}: y must be 1-D with one label per row of X, got X {tuple(inputs.first.shape)}, y {tuple(y.shape)}"
        )
    if len(inputs) == 0:
        raise ValueError(f"{what}: X has no cases")
    for t in (*inputs.args, *inputs.kwargs.values()):
        if t.is_floating_point() and not bool(torch.isfinite(t).all()):
            raise ValueError(f"{what}: X contains NaN or infinite values")
    return inputs


def autocast_context(device, dtype: torch.dtype | None):
    """torch.autocast with `dtype` on `device`'s type (matrix products and convolutions in dtype; the
    attention softmax in float32, tsrep.nn.attention), or no context at all when dtype is None: full
    precision, bit for bit as without."""
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(torch.device(device).type, dtype=dtype)


def _check_autocast_dtype(dtype, what: str) -> None:
    if not (dtype is None or (isinstance(dtype, torch.dtype) and dtype.is_floating_point)):
        raise ValueError(f"{what}: autocast_dtype must be None or a floating torch.dtype, got {dtype!r}")


def accuracy(outputs: torch.Tensor, targets: torch.Tensor) -> float:
    return float((outputs.argmax(1) == targets).float().mean())


class ClassifierTrainer(Trainer):
    """The loop of :func:`fit_classifier` and :func:`fit_tensors`: whole input tensors (TensorInputs),
    a loss (cross-entropy by default), an optional per-step lr schedule and a held-out score after every
    epoch. autocast_dtype: None, or the forward passes run under torch.autocast with it (autocast_context)
    and the loss takes their outputs in float32."""

    def __init__(self, model, X, y, optimizer, device, generator, batch_size, grad_clip, lr, epochs,
                 lr_schedule=None, eval_data=None, callbacks=None, loss_fn=F.cross_entropy, score_fn=accuracy,
                 autocast_dtype=None):
        super().__init__(model, optimizer, X.first, device, generator, batch_size, grad_clip, lr, callbacks)
        self.X, self.y, self.eval_data = X, y, eval_data
        self.loss_fn, self.score_fn = loss_fn, score_fn
        self.autocast_dtype = autocast_dtype
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
        xb, yb = self.X.rows(shard, self.device), self.y[shard].to(self.device)
        with autocast_context(self.device, self.autocast_dtype):
            outputs = xb.run(self.parallel.model)
        # The loss outside autocast, in float32 (.float() returns a float32 tensor itself: no copy, no change).
        return self.loss_fn(outputs.float(), yb), len(shard), len(index)

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
        logits = predict_logits(self.model, X_eval, batch_size=self.batch_size, device=self.device,
                                autocast_dtype=self.autocast_dtype)
        y_eval = y_eval.cpu()
        return {"val_loss": float(self.loss_fn(logits, y_eval)), "val_score": float(self.score_fn(logits, y_eval))}

    def record(self, logs: dict) -> None:
        self.history.train_loss.append(logs["train_loss"])
        if "val_score" in logs:
            self.history.val_loss.append(logs["val_loss"])
            self.history.val_score.append(logs["val_score"])


def fit_classifier(
    model: nn.Module,
    X,
    y: torch.Tensor,
    *,
    epochs: int = 10,
    batch_size: int = 64,
    lr: float = 1e-3,
    generator: torch.Generator | None = None,
    optimizer="adamw",
    optimizer_kwargs: dict | None = None,
    weight_decay: float = 0.0,
    grad_clip: float | None = 1.0,
    lr_schedule=None,
    eval_data: tuple | None = None,
    device="cpu",
    callbacks=None,
) -> History:
    """Train `model` in place with cross-entropy on (X, y) and return its history
    (tsrep.training.History: train_loss, val_loss, val_score, epoch_seconds per epoch).

    X: the inputs of model.forward, one row per case: a tensor (n, ...), a tuple of tensors passed
    positionally, e.g. ``(input_ids, attention_mask)``, or a dict of tensors passed by keyword, such as a
    Hugging Face tokenizer's output (``tokenizer(texts, padding=True, return_tensors="pt")``). A model
    whose forward takes an ``attention_mask`` must be given one (ValueError otherwise): padded token ids
    without their mask would attend to the padding. y: (n,) long class indices. The rows are reshuffled
    every epoch by `generator` (a fresh one seeded 0 when None), so the same generator state gives the
    same run.
    optimizer: a name or class for tsrep.training.optim.build_optimizer (AdamW by default);
    weight_decay: decoupled, on weight matrices only (build_optimizer).
    lr_schedule: None (constant lr), "cosine" (per-step cosine decay from lr to 0 over all epochs) or a
    callable ``optimizer -> torch scheduler``, stepped after every epoch (as the estimators' lr_schedule).
    eval_data: (X_eval, y_eval), X_eval in any of X's forms: cross-entropy (val_loss) and accuracy
    (val_score) after every epoch (by every rank, on all of it).
    Data-parallel under an initialised process group of several ranks (tsrep.training.distributed,
    e.g. launched by torchrun): each rank trains on its shard of every batch; the result equals one
    process's (same generator state on every rank, checked).
    callbacks: a Callback or a list of them (tsrep.training.callbacks): logs hold train_loss, val_loss and
    val_score (on eval_data, when given), lr and seconds; on_epoch_end returning True stops training.
    """
    return fit_tensors(
        model, X, y, epochs=epochs, batch_size=batch_size, lr=lr, generator=generator, optimizer=optimizer,
        optimizer_kwargs=optimizer_kwargs, weight_decay=weight_decay, grad_clip=grad_clip, lr_schedule=lr_schedule,
        eval_data=eval_data, device=device, callbacks=callbacks, what="fit_classifier",
    )


def fit_tensors(model: nn.Module, X, y: torch.Tensor, *, epochs: int, batch_size: int, lr: float,
                generator: torch.Generator | None, optimizer, optimizer_kwargs, weight_decay: float, grad_clip,
                lr_schedule, eval_data, device, callbacks, loss_fn=F.cross_entropy, score_fn=accuracy,
                fit_info: dict | None = None, what: str = "fit_tensors",
                autocast_dtype: torch.dtype | None = None) -> History:
    """:func:`fit_classifier` with any loss: ``loss_fn(outputs, targets)`` (scalar, mean over the batch) and
    ``score_fn(outputs, targets)`` (higher is better, the val_score of eval_data); y may then be float
    targets. fit_info: what the callbacks' on_fit_start gets (the loop's settings when None).
    autocast_dtype: None (float32), or mixed precision: every forward pass (training and eval_data) under
    torch.autocast with this dtype on the device's type, e.g. torch.bfloat16; the loss and scores in float32.
    The estimators of tsrep.estimators.text and .vision train through it."""
    callbacks = CallbackList(callbacks)
    inputs = _check_xy(X, y, what)
    if eval_data is not None:
        X_eval, y_eval = eval_data
        eval_data = (_check_xy(X_eval, y_eval, f"{what} eval_data"), y_eval)
    for name, value in (("epochs", epochs), ("batch_size", batch_size)):
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if not (lr_schedule in (None, "cosine") or callable(lr_schedule)):
        raise ValueError(f"lr_schedule must be None, 'cosine' or a callable optimizer -> scheduler, got {lr_schedule!r}")
    inputs.check_reaches(model, what)
    _check_autocast_dtype(autocast_dtype, what)
    if generator is None:
        generator = torch.Generator().manual_seed(0)
    device = setup_data_parallel(device)  # under torchrun: join the process group, take this rank's GPU
    model.to(device)
    opt = build_optimizer(optimizer, model.parameters(), lr, optimizer_kwargs, weight_decay=weight_decay)
    trainer = ClassifierTrainer(
        model, inputs, y, opt, device, generator, batch_size, grad_clip, lr, epochs, lr_schedule, eval_data, callbacks,
        loss_fn, score_fn, autocast_dtype,
    )
    if fit_info is None:
        fit_info = {
            "member": None, "phase": "train",
            "params": {"epochs": epochs, "batch_size": batch_size, "lr": lr, "optimizer": optimizer,
                       "weight_decay": weight_decay, "grad_clip": grad_clip, "lr_schedule": lr_schedule},
        }
    return trainer.fit(epochs, fit_info)


@torch.no_grad()
def predict_logits(model: nn.Module, X, batch_size: int = 256, device="cpu",
                   autocast_dtype: torch.dtype | None = None) -> torch.Tensor:
    """Model outputs (n, n_classes) for every row of X (any form :func:`fit_classifier` takes; the
    attention mask, where the model takes one, included), in eval mode, gathered on the CPU in float32.
    autocast_dtype: None, or the forward passes run under torch.autocast with it (as in fit_tensors)."""
    inputs = X if isinstance(X, TensorInputs) else TensorInputs(X, "predict_logits")
    inputs.check_reaches(model, "predict_logits")
    _check_autocast_dtype(autocast_dtype, "predict_logits")
    model.eval()
    outs = []
    for i in range(0, len(inputs), batch_size):
        with autocast_context(device, autocast_dtype):
            out = inputs.rows(slice(i, i + batch_size), device).run(model)
        outs.append(out.float().cpu())
    return torch.cat(outs)


def evaluate(model: nn.Module, X, y: torch.Tensor, batch_size: int = 256, device="cpu") -> float:
    """Accuracy of model's argmax on (X, y); X in any form :func:`fit_classifier` takes."""
    inputs = _check_xy(X, y, "evaluate")
    return accuracy(predict_logits(model, inputs, batch_size, device), y.cpu())
