"""Supervised training: a step budget, a learning-rate schedule and, with a validation split carved from
the training data, selection of the best epoch and early stopping."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from tsrep.training.callbacks import CallbackList, current_lr
from tsrep.training.deacon import with_deacon
from tsrep.training.distributed import DataParallel
from tsrep.training.optim import build_optimizer
from tsrep.training.resume import TrainCheckpoint, rng_states, set_rng_states
from tsrep.training.schedules import LRSchedule


@dataclass
class TrainConfig:
    """Settings of :func:`train_supervised`.

    The number of epochs is ``max_epochs``, raised where needed so that at least ``min_steps``
    optimiser steps are taken (small data sets give few steps per epoch); early stopping on a
    validation split may end it sooner.
    """

    lr: float = 1e-3
    batch_size: int = 64
    max_epochs: int = 100
    min_steps: int = 0
    patience: int | None = 20
    optimizer: object = "radam"
    optimizer_kwargs: dict | None = None
    weight_decay: float = 0.0
    lr_schedule: str = "none"
    grad_clip: float | None = 4.0
    verbose: bool = False


@dataclass
class History:
    train_loss: list[float] = field(default_factory=list)
    val_loss: list[float] = field(default_factory=list)
    val_score: list[float] = field(default_factory=list)
    best_epoch: int = -1


@dataclass
class SeriesBatchData:
    """Padded series (n, T, C) float32, valid mask (n, T) bool, targets (n,) long or (n, k) float,
    per-case loss weights (n,) float or None (all 1)."""

    values: torch.Tensor
    valid: torch.Tensor
    targets: torch.Tensor | None = None
    weights: torch.Tensor | None = None

    def __len__(self) -> int:
        return self.values.shape[0]

    def subset(self, index) -> "SeriesBatchData":
        pick = lambda t: None if t is None else t[index]  # noqa: E731
        return SeriesBatchData(self.values[index], self.valid[index], pick(self.targets), pick(self.weights))

    def batch(self, index: torch.Tensor, device) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
        valid = self.valid[index]
        # Trim to the longest series of the batch: short batches of unequal-length data run faster.
        t = int(valid.sum(1).max())
        valid = valid[:, :t]
        values = self.values[index, :t].to(device)
        targets = self.targets[index].to(device) if self.targets is not None else None
        mask = None if bool(valid.all()) else valid.to(device)
        return values, mask, targets

    def batch_weights(self, index: torch.Tensor, device) -> torch.Tensor | None:
        return None if self.weights is None else self.weights[index].to(device)


def predict_outputs(
    model: nn.Module, data: SeriesBatchData, batch_size: int, device, parallel: DataParallel | None = None
) -> torch.Tensor:
    """Model outputs for every case, in batches, gathered on the CPU.

    With an enabled `parallel`, each rank runs a contiguous block of the batches and every rank
    returns all the outputs (the same batches as one process, so the same numbers on every rank).
    """
    model.eval()
    outs = []
    starts = list(range(0, len(data), batch_size))
    if parallel is not None:
        starts = parallel.split_list(starts)
    with torch.no_grad():
        for start in starts:
            index = torch.arange(start, min(start + batch_size, len(data)))
            values, mask, _ = data.batch(index, device)
            outs.append(model(values, mask).float().cpu())
    out = torch.cat(outs) if outs else torch.empty(0)
    return parallel.gather(out) if parallel is not None else out


def n_batches(n: int, batch_size: int, min_size: int = 2) -> int:
    """Batches per epoch that :func:`shuffled_batches` yields."""
    full, rest = divmod(n, batch_size)
    return full + (1 if rest and (rest >= min_size or n < min_size) else 0)


def shuffled_batches(n: int, batch_size: int, generator: torch.Generator, min_size: int = 2):
    """Index tensors of one epoch, reshuffled by `generator`; a trailing batch of fewer than `min_size`
    cases is left out (one case breaks BatchNorm and adds noise; data parallelism needs a case per
    rank: DataParallel.min_batch_size); its cases come back next epoch."""
    order = torch.randperm(n, generator=generator)
    for start in range(0, n, batch_size):
        index = order[start : start + batch_size]
        if len(index) < min_size and n >= min_size:
            continue
        yield index


def backward_and_step(
    model: nn.Module, optimizer, loss: torch.Tensor, grad_clip, what: str, lr, checked: torch.Tensor | None = None
) -> None:
    """Backward, clip the gradient norm, step; a non-finite loss is an error naming `what`.

    checked: the value tested for finiteness instead of `loss`; data-parallel loops pass the global
    batch loss (DataParallel.batch_loss), the same on every rank, so that every rank stops alike.
    """
    checked = loss if checked is None else checked
    if not torch.isfinite(checked):
        raise FloatingPointError(f"{what} became {checked.item()}; try a smaller lr (now {lr})")
    loss.backward()
    if grad_clip:
        nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
    optimizer.step()


def _cpu_state(model: nn.Module) -> dict:
    return {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}


def train_supervised(
    model: nn.Module,
    train: SeriesBatchData,
    val: SeriesBatchData | None,
    loss_fn,
    score_fn,
    config: TrainConfig,
    device,
    generator: torch.Generator,
    callbacks=None,
    checkpoint: TrainCheckpoint | None = None,
    fit_info: dict | None = None,
) -> History:
    """Train `model` in place; with a validation set, restore the weights of the best epoch.

    loss_fn(outputs, targets) -> scalar loss, called as loss_fn(outputs, targets, weights) with the
    batch's slice of ``train.weights`` when the data has per-case weights. score_fn(outputs, targets)
    -> float, higher is better; ties are broken on validation loss.

    callbacks: a Callback, a list of them or a CallbackList (tsrep.training.callbacks): on_fit_start
    gets `fit_info` plus "model", "epochs", "start_epoch"; on_epoch_end gets train_loss, val_loss and
    val_score (with a validation set), lr and seconds, and stops training by returning True.
    checkpoint: a TrainCheckpoint (tsrep.training.resume); the whole training state is written to it
    after every epoch, and a matching state found there is resumed after its last finished epoch
    (with the same data, settings and seed the result equals an uninterrupted run's on a CPU).

    Data-parallel under an initialised process group of several ranks (tsrep.training.distributed):
    each rank trains on its shard of every batch and the result equals one process's.
    """
    callbacks = callbacks if isinstance(callbacks, CallbackList) else CallbackList(callbacks)
    # PCA layers (DEACON head mixing) are trained by the DEACON rule, everything else by config.optimizer.
    optimizer = with_deacon(
        model,
        lambda params: build_optimizer(
            config.optimizer, params, config.lr, config.optimizer_kwargs, weight_decay=config.weight_decay
        ),
    )
    history = History()
    best_key, best_state, waited = None, None, 0
    parallel = DataParallel(model, device)  # one process: the model itself, nothing more
    parallel.check_batch_size(config.batch_size)
    parallel.check_inputs(train.values, generator)  # before any other collective: a mismatch fails on every rank
    steps_per_epoch = n_batches(len(train), config.batch_size, parallel.min_batch_size)
    epochs = max(config.max_epochs, math.ceil(config.min_steps / max(steps_per_epoch, 1)))
    base_optimizer = getattr(optimizer, "base", optimizer)  # an optimiser with DEACON: its ordinary part
    schedule = LRSchedule(
        config.lr_schedule, base_optimizer, epochs * steps_per_epoch,
        plateau_patience=max(1, (config.patience or 20) // 2),
    )
    start_epoch, finished = 0, False
    if checkpoint is not None:
        checkpoint.bind(train, val, model)
        state = checkpoint.load()
        if state is not None:
            model.load_state_dict(state["model"])
            optimizer.load_state_dict(state["optimizer"])
            schedule.load_state_dict(state["schedule"])
            generator.set_state(state["generator"])
            set_rng_states(state["rng"])
            if state.get("cuda_rng") is not None and torch.device(device).type == "cuda":
                torch.cuda.set_rng_state(state["cuda_rng"], device)
            history = History(
                [float(v) for v in state["train_loss"]], [float(v) for v in state["val_loss"]],
                [float(v) for v in state["val_score"]], int(state["best_epoch"]),
            )
            best_key = None if state["best_key"] is None else tuple(float(v) for v in state["best_key"])
            best_state, waited = state["best_state"], int(state["waited"])
            start_epoch, finished = int(state["epoch"]), bool(state["finished"])
    info = {**(fit_info or {}), "model": model, "epochs": epochs, "start_epoch": start_epoch}
    with callbacks.fitting(info, history):
        with parallel:
            show = config.verbose and parallel.is_main
            bar = tqdm(range(start_epoch, epochs), disable=not show or finished, desc="epochs", leave=False)
            for epoch in bar:
                if finished:
                    break
                tic = time.perf_counter()
                parallel.model.train()
                total, seen = 0.0, 0
                for index in shuffled_batches(len(train), config.batch_size, generator, parallel.min_batch_size):
                    shard = parallel.shard(index)  # one process: index itself
                    values, mask, targets = train.batch(shard, device)
                    weights = train.batch_weights(shard, device)
                    optimizer.zero_grad(set_to_none=True)
                    outputs = parallel.model(values, mask)
                    raw = loss_fn(outputs, targets) if weights is None else loss_fn(outputs, targets, weights)
                    loss = parallel.weight_loss(raw, len(shard), len(index))
                    batch_loss = parallel.batch_loss(loss)
                    backward_and_step(
                        model, optimizer, loss, config.grad_clip, f"training loss at epoch {epoch}", config.lr,
                        batch_loss,
                    )
                    schedule.after_step()
                    total += batch_loss.item() * len(index)
                    seen += len(index)
                history.train_loss.append(total / max(seen, 1))
                epoch_logs = {"train_loss": history.train_loss[-1]}
                monitored = history.train_loss[-1]
                if val is not None and len(val):
                    out = predict_outputs(model, val, config.batch_size, device, parallel)
                    val_loss = float(loss_fn(out, val.targets))
                    val_score = float(score_fn(out, val.targets))
                    history.val_loss.append(val_loss)
                    history.val_score.append(val_score)
                    epoch_logs.update(val_loss=val_loss, val_score=val_score)
                    monitored = val_loss
                    key = (val_score, -val_loss)
                    if best_key is None or key > best_key:
                        best_key, best_state, waited = key, _cpu_state(model), 0
                        history.best_epoch = epoch
                    else:
                        waited += 1
                epoch_logs.update(lr=current_lr(base_optimizer), seconds=time.perf_counter() - tic)
                stop = callbacks.epoch_end(epoch, epoch_logs)
                schedule.after_epoch(monitored)
                bar.set_postfix({k: f"{v:.4f}" for k, v in epoch_logs.items() if k in ("train_loss", "val_loss", "val_score")})
                patience_over = config.patience is not None and val is not None and waited >= config.patience
                finished = stop or patience_over or epoch + 1 >= epochs
                if checkpoint is not None:
                    checkpoint.save({
                        "epoch": epoch + 1, "finished": finished,
                        "model": _cpu_state(model), "optimizer": optimizer.state_dict(),
                        "schedule": schedule.state_dict(), "generator": generator.get_state(),
                        "rng": rng_states(),
                        "cuda_rng": torch.cuda.get_rng_state(device) if torch.device(device).type == "cuda" else None,
                        "train_loss": torch.tensor(history.train_loss, dtype=torch.float64),
                        "val_loss": torch.tensor(history.val_loss, dtype=torch.float64),
                        "val_score": torch.tensor(history.val_score, dtype=torch.float64),
                        "best_epoch": history.best_epoch,
                        "best_key": None if best_key is None else list(best_key),
                        "best_state": best_state, "waited": waited,
                    })
                if finished:
                    break
    if best_state is not None:
        model.load_state_dict(best_state)
    else:
        history.best_epoch = len(history.train_loss) - 1
    model.eval()  # a fitted model predicts; predicting must not change its state (train -> eval)
    return history


def accuracy_score_fn(outputs: torch.Tensor, targets: torch.Tensor) -> float:
    return float((outputs.argmax(1) == targets).float().mean())


def count_parameters(model: nn.Module, trainable_only: bool = True) -> int:
    return int(sum(p.numel() for p in model.parameters() if p.requires_grad or not trainable_only))


def stratified_split(y: np.ndarray, fraction: float, rng: np.random.Generator, stratify: bool):
    """Indices (train, val) with about `fraction` of the cases in val, one per class at least when stratified."""
    n = len(y)
    n_val = int(math.ceil(fraction * n)) if fraction > 0 else 0
    if n_val == 0 or n - n_val < 2:
        return np.arange(n), np.array([], dtype=int)
    if stratify:
        classes, counts = np.unique(y, return_counts=True)
        if n_val >= len(classes) and counts.min() >= 2:
            val = []
            for c, count in zip(classes, counts):
                members = rng.permutation(np.flatnonzero(y == c))
                take = max(1, int(round(fraction * count)))
                val.extend(members[: min(take, count - 1)])
            val = np.sort(np.array(val))
            return np.setdiff1d(np.arange(n), val), val
    perm = rng.permutation(n)
    return np.sort(perm[n_val:]), np.sort(perm[:n_val])
