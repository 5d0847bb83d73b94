"""The training loop of every tsrep fit, and supervised training on padded series.

:class:`Trainer` is the one loop: shuffled minibatches, a gradient step per batch, an evaluation and
the callbacks after every epoch, in small steps that subclasses override (the design of skorch's
``NeuralNet``). :func:`train_supervised` (the estimators), :func:`tsrep.training.pretrain.pretrain_masked`
(masked pretraining) and :func:`tsrep.training.tensor_fit.fit_classifier` (text and vision backbones)
are its users. Early stopping with the best epoch's weights (:class:`EarlyStopping`), the per-epoch
learning-rate schedule (tsrep.training.schedules.LRSchedule), the progress bar (:class:`ProgressBar`)
and the tuner's pruning (tsrep.training.callbacks.OptunaPruning) are callbacks of that loop;
checkpoints are its resume and save_checkpoint steps.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from tsrep.training.callbacks import Callback, CallbackList, current_lr
from tsrep.training.config import TrainConfig
from tsrep.training.deacon import OptimizerWithDeacon, with_deacon
from tsrep.training.distributed import DataParallel, is_main_process
from tsrep.training.mixup import mix, mixup_partners
from tsrep.training.optim import build_optimizer
from tsrep.training.resume import TrainCheckpoint, rng_states, set_rng_states
from tsrep.training.schedules import LRSchedule


@dataclass
class History:
    """Per-epoch record of a training run: what the estimators' ``history_`` and
    :func:`tsrep.training.fit_classifier` hold.

    train_loss: mean training loss of every epoch; val_loss, val_score: loss and score (accuracy for
    classifiers, higher is better) on the held-out data after every epoch, empty without held-out data;
    epoch_seconds: wall seconds of every epoch's training (the optimiser steps, not the evaluation);
    best_epoch: the epoch whose weights the model keeps (early stopping), else the last one (-1 when
    the loop does not choose one).
    """

    train_loss: list[float] = field(default_factory=list)
    val_loss: list[float] = field(default_factory=list)
    val_score: list[float] = field(default_factory=list)
    # Wall times are no part of what a run learnt: a resumed or reloaded fit equals the uninterrupted one.
    epoch_seconds: list[float] = field(default_factory=list, compare=False)
    best_epoch: int = -1


#: Training data up to this size is copied to a GPU once (SeriesBatchData.to_device), larger data batch by batch.
RESIDENT_BYTES = 1 << 30


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
        """(values, mask or None, targets) of the cases `index` (a CPU tensor) on `device`.

        The valid steps stay on the CPU, so trimming to the batch's longest series reads no device memory; the
        copies to the device do not wait for it either (non_blocking): a step's kernels are queued while the
        previous step's still run. Values already on the device (:meth:`to_device`) are gathered there."""
        valid = self.valid[index]
        # Trim to the longest series of the batch: short batches of unequal-length data run faster.
        t = int(valid.sum(1).max())
        valid = valid[:, :t]
        rows = self._rows(index)
        values = self.values[rows, :t].to(device, non_blocking=True)
        targets = self.targets[rows].to(device, non_blocking=True) if self.targets is not None else None
        mask = None if bool(valid.all()) else valid.to(device, non_blocking=True)
        return values, mask, targets

    def batch_weights(self, index: torch.Tensor, device) -> torch.Tensor | None:
        return None if self.weights is None else self.weights[self._rows(index)].to(device, non_blocking=True)

    def _rows(self, index: torch.Tensor) -> torch.Tensor:
        return index if self.values.device.type == "cpu" else index.to(self.values.device, non_blocking=True)

    def to_device(self, device) -> "SeriesBatchData":
        """The values, targets and weights copied to `device` once (the valid steps stay on the CPU): batches are
        then gathered there instead of copied there step by step. The same object on a CPU, or when the data is
        larger than RESIDENT_BYTES (it then travels batch by batch)."""
        device = torch.device(device)
        size = sum(t.nbytes for t in (self.values, self.targets, self.weights) if t is not None)
        if device.type == "cpu" or size > RESIDENT_BYTES:
            return self
        move = lambda t: None if t is None else t.to(device)  # noqa: E731
        return SeriesBatchData(move(self.values), self.valid, move(self.targets), move(self.weights))


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


def backward_and_step(model: nn.Module, optimizer, loss: torch.Tensor, grad_clip) -> None:
    """Backward, clip the gradient norm, step. Nothing here waits for the device: the loss is checked for
    finiteness once per epoch (Trainer.train_epoch), not by a host synchronisation every step."""
    loss.backward()
    if grad_clip:
        nn.utils.clip_grad_norm_(model.parameters(), grad_clip, foreach=True)
    optimizer.step()


def check_finite_loss(total: torch.Tensor, what: str, lr) -> float:
    """The epoch's summed batch losses as a float: one host synchronisation per epoch. A non-finite sum
    (some batch's loss was NaN or infinite) is a FloatingPointError naming `what`."""
    value = float(total)
    if not math.isfinite(value):
        raise FloatingPointError(f"{what} became {value}; try a smaller lr (now {lr})")
    return value


def cpu_state_dict(module: nn.Module) -> dict:
    """Detached CPU copies of a module's weights: what pickles, checkpoints and the best epoch store."""
    return {k: v.detach().to("cpu", copy=True) for k, v in module.state_dict().items()}


class Trainer:
    """The training loop, in small steps that subclasses override.

    :meth:`fit` calls :meth:`resume`, then runs every epoch as

    1. :meth:`train_epoch`: the cases reshuffled by `generator` (:func:`shuffled_batches`), each batch
       through :meth:`train_step`: :meth:`batch_loss` (forward pass and loss of this rank's share of
       the batch), backward, gradient clipping, the optimiser step and :meth:`after_step` (a
       per-step learning-rate schedule);
    2. :meth:`validate`: the logs of an evaluation after the epoch (none here);
    3. :meth:`record`: the epoch's logs into the history;
    4. the callbacks' ``on_epoch_end``: the user's (`callbacks`), then the loop's own
       (``loop_callbacks``: early stopping, a per-epoch schedule, a progress bar); True from any of
       them stops training after this epoch;
    5. :meth:`save_checkpoint`: the state to resume from, once the stop decision is known.

    The callbacks get the documented hooks and logs (tsrep.training.callbacks): ``on_fit_start``
    gets `fit_info` plus "model", "epochs", "start_epoch"; the logs hold "train_loss", what
    :meth:`validate` returns, "lr" and "seconds".

    Data-parallel under an initialised process group of several ranks
    (tsrep.training.distributed.DataParallel): every rank draws the same shuffles and computes the
    loss of its shard of every batch, weighted so that the averaged gradient is the one-process
    gradient; without one, every data-parallel call returns its input and the loop is a plain loop.

    Parameters
    ----------
    model : nn.Module
        Trained in place.
    optimizer : torch.optim.Optimizer or OptimizerWithDeacon
    inputs : torch.Tensor, shape (n_cases, ...)
        The training inputs: their number sets the batches, and every rank must hold the same (checked).
    device : torch.device
    generator : torch.Generator
        Shuffles the cases every epoch; the same state on every rank (checked).
    batch_size : int
    grad_clip : float or None
        Largest gradient norm (None or 0: no clipping).
    lr : float
        Named in the error a non-finite loss raises.
    callbacks : Callback, list of them, CallbackList or None
        The user's callbacks.

    Attributes
    ----------
    history : object
        What the epochs are recorded in (set by subclasses); ``on_fit_end`` gets it as
        ``logs["history"]`` and :meth:`fit` returns it.
    loop_callbacks : list of Callback
        The loop's own callbacks, called after the user's.
    parallel : DataParallel
    """

    #: Named, with the epoch, in the error a non-finite loss raises.
    loss_name = "training loss"

    def __init__(self, model: nn.Module, optimizer, inputs: torch.Tensor, device, generator: torch.Generator,
                 batch_size: int, grad_clip: float | None, lr: float, callbacks=None):
        self.model = model
        self.optimizer = optimizer
        # The lr schedules and the logged lr refer to the ordinary optimiser, not the DEACON part.
        self.base_optimizer = optimizer.base if isinstance(optimizer, OptimizerWithDeacon) else optimizer
        self.device = device
        self.generator = generator
        self.batch_size = batch_size
        self.grad_clip = grad_clip
        self.lr = lr
        self.callbacks = callbacks if isinstance(callbacks, CallbackList) else CallbackList(callbacks)
        self.loop_callbacks: list[Callback] = []
        self.history = None
        self.parallel = DataParallel(model, device)  # one process: the model itself, nothing more
        self.parallel.check_batch_size(batch_size)
        self.parallel.check_inputs(inputs, generator)  # before any other collective: a mismatch fails on every rank
        self.n_cases = len(inputs)

    @property
    def steps_per_epoch(self) -> int:
        return n_batches(self.n_cases, self.batch_size, self.parallel.min_batch_size)

    def fit(self, epochs: int, fit_info: dict | None = None):
        """Train for the epochs from :meth:`resume`'s start to `epochs`, or until a callback stops it;
        returns ``self.history``."""
        start_epoch, finished = self.resume()
        info = {**(fit_info or {}), "model": self.model, "epochs": epochs, "start_epoch": start_epoch}
        callbacks = CallbackList([*self.callbacks.callbacks, *self.loop_callbacks])
        with callbacks.fitting(info, self.history), self.parallel:
            for epoch in range(start_epoch, start_epoch if finished else epochs):
                tic = time.perf_counter()
                logs = {"train_loss": self.train_epoch(epoch), **self.validate()}
                logs.update(lr=current_lr(self.base_optimizer), seconds=time.perf_counter() - tic)
                self.record(logs)
                stop = callbacks.epoch_end(epoch, logs)
                self.save_checkpoint(epoch, finished=stop or epoch + 1 >= epochs)
                if stop:
                    break
        return self.history

    def train_epoch(self, epoch: int) -> float:
        """One pass over the reshuffled cases; returns the mean loss, each batch weighted by its size.

        The batch losses are summed on the device and read once, at the end of the epoch: a read (and the
        finiteness test) after every step would make the host wait for the device at every step. A
        non-finite loss is a FloatingPointError then, naming the epoch (the rank's losses are the global
        ones under data parallelism, so every rank stops alike)."""
        self.parallel.model.train()
        # float64 sums as Python floats did (MPS has no float64)
        dtype = torch.float32 if torch.device(self.device).type == "mps" else torch.float64
        total, seen = torch.zeros((), dtype=dtype, device=self.device), 0
        for index in shuffled_batches(self.n_cases, self.batch_size, self.generator, self.parallel.min_batch_size):
            loss, size = self.train_step(index, epoch)
            total += loss * size
            seen += size
        return check_finite_loss(total, f"{self.loss_name} at epoch {epoch}", self.lr) / max(seen, 1)

    def train_step(self, index: torch.Tensor, epoch: int) -> tuple[torch.Tensor, int]:
        """One optimiser step on the batch `index` (n_batch,) of case indices; returns the batch's
        loss (a detached scalar tensor on the device, the same on every rank) and its size as
        :meth:`batch_loss` counts it."""
        self.optimizer.zero_grad(set_to_none=True)
        loss, n_shard, n_batch = self.batch_loss(index)
        # A batch that counts nothing (no masked entry) has a zero loss on every rank: any weight does.
        loss = self.parallel.weight_loss(loss, n_shard, max(n_batch, 1))
        batch_loss = self.parallel.batch_loss(loss)
        backward_and_step(self.model, self.optimizer, loss, self.grad_clip)
        self.after_step()
        return batch_loss.detach(), n_batch

    def batch_loss(self, index: torch.Tensor) -> tuple[torch.Tensor, int, int]:
        """(loss, n_shard, n_batch): the mean loss over this rank's share of the batch `index`, and
        what it averages over in the share (n_shard) and in the whole batch (n_batch), e.g. cases."""
        raise NotImplementedError

    def after_step(self) -> None:
        """After every optimiser step (a per-step learning-rate schedule); nothing here."""

    def validate(self) -> dict:
        """Logs of an evaluation after every epoch, e.g. {"val_loss": ..., "val_score": ...}; none here."""
        return {}

    def record(self, logs: dict) -> None:
        """Keep the epoch's logs in ``self.history``; nothing here."""

    def resume(self) -> tuple[int, bool]:
        """Load a saved state when there is one; returns the first epoch to run and whether the
        saved run had finished. Here: (0, False), a fresh start."""
        return 0, False

    def save_checkpoint(self, epoch: int, finished: bool) -> None:
        """Save the state after `epoch` (`finished`: no epoch follows); nothing here."""

    def loop_state(self) -> dict:
        """The weights, optimiser and shuffling generator states, as checkpoints hold them."""
        return {"model": cpu_state_dict(self.model), "optimizer": self.optimizer.state_dict(),
                "generator": self.generator.get_state()}

    def load_loop_state(self, state: dict) -> None:
        """Set what :meth:`loop_state` returned."""
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.generator.set_state(state["generator"])


class EarlyStopping(Callback):
    """Keep the weights of the best epoch, stop after `patience` epochs without a better one, and
    load the best weights when training ends (not when it raised).

    The best epoch has the highest ``logs["val_score"]``, ties broken by the lower
    ``logs["val_loss"]``; an epoch without "val_loss" in its logs is not compared.

    Parameters
    ----------
    model : nn.Module
    patience : int or None
        None: never stop.
    history : History
        Its ``best_epoch`` is kept at the best epoch so far.
    """

    def __init__(self, model: nn.Module, patience: int | None, history: History):
        self.model = model
        self.patience = patience
        self.history = history
        self.best_key: tuple[float, float] | None = None
        self.best_state: dict | None = None
        self.waited = 0

    def on_epoch_end(self, epoch: int, logs: dict) -> bool:
        if "val_loss" in logs:
            key = (logs["val_score"], -logs["val_loss"])
            if self.best_key is None or key > self.best_key:
                self.best_key, self.best_state, self.waited = key, cpu_state_dict(self.model), 0
                self.history.best_epoch = epoch
            else:
                self.waited += 1
        return self.patience is not None and self.waited >= self.patience

    def on_fit_end(self, logs: dict) -> None:
        if logs["error"] is None and self.best_state is not None:
            self.model.load_state_dict(self.best_state)

    def state_dict(self) -> dict:
        return {"best_key": None if self.best_key is None else list(self.best_key),
                "best_state": self.best_state, "waited": self.waited}

    def load_state_dict(self, state: dict) -> None:
        self.best_key = None if state["best_key"] is None else tuple(float(v) for v in state["best_key"])
        self.best_state, self.waited = state["best_state"], int(state["waited"])


class ProgressBar(Callback):
    """A tqdm bar over the epochs, on rank 0 only, showing the latest logs.

    Parameters
    ----------
    desc : str
    shown : mapping of str to str
        Label on the bar -> key of the logs.
    """

    def __init__(self, desc: str, shown: Mapping[str, str]):
        self.desc = desc
        self.shown = dict(shown)
        self._bar = None

    def on_fit_start(self, info: dict) -> None:
        self._bar = tqdm(total=info["epochs"] - info["start_epoch"], desc=self.desc, leave=False,
                         disable=not is_main_process())

    def on_epoch_end(self, epoch: int, logs: dict) -> None:
        self._bar.set_postfix({label: f"{logs[key]:.4f}" for label, key in self.shown.items() if key in logs},
                              refresh=False)
        self._bar.update()

    def on_fit_end(self, logs: dict) -> None:
        if self._bar is not None:
            self._bar.close()
        self._bar = None


class SupervisedTrainer(Trainer):
    """The loop of :func:`train_supervised`: padded series, a loss with optional per-case weights,
    a validation set with early stopping, a learning-rate schedule, resumable checkpoints."""

    def __init__(self, model, train: SeriesBatchData, val: SeriesBatchData | None, loss_fn, score_fn,
                 config: TrainConfig, device, generator, callbacks=None, checkpoint: TrainCheckpoint | None = None):
        # PCA layers (DEACON head mixing) are trained by the DEACON rule, everything else by config.optimizer.
        optimizer = with_deacon(
            model,
            lambda params: build_optimizer(
                config.optimizer, params, config.lr, config.optimizer_kwargs, weight_decay=config.weight_decay
            ),
        )
        super().__init__(model, optimizer, train.values, device, generator, config.batch_size, config.grad_clip,
                         config.lr, callbacks)
        self.train, self.val, self.loss_fn, self.score_fn = train, val, loss_fn, score_fn
        self.batches = train.to_device(device)  # what the steps read: on a GPU, the data copied there once
        self.mixup = config.mixup
        self.checkpoint = checkpoint
        self.history = History()
        self.epochs = max(config.max_epochs, math.ceil(config.min_steps / max(self.steps_per_epoch, 1)))
        self.schedule = LRSchedule(
            config.lr_schedule, self.base_optimizer, self.epochs * self.steps_per_epoch,
            plateau_patience=max(1, (config.patience or 20) // 2),
        )
        self.early_stopping = EarlyStopping(model, config.patience if val is not None else None, self.history)
        self.loop_callbacks += [self.early_stopping, self.schedule]
        if config.verbose:
            self.loop_callbacks.append(ProgressBar("epochs", {k: k for k in ("train_loss", "val_loss", "val_score")}))

    def batch_loss(self, index):
        shard = self.parallel.shard(index)  # one process: index itself
        values, mask, targets = self.batches.batch(shard, self.device)
        weights = self.batches.batch_weights(shard, self.device)
        if not self.mixup:
            return self.case_loss(self.parallel.model(values, mask), targets, weights), len(shard), len(index)
        lam, partners = mixup_partners(self.mixup, index, self.generator)
        partners = self.parallel.shard(partners)
        partner_values, partner_mask, partner_targets = self.batches.batch(partners, self.device)
        values, mask = mix(values, mask, partner_values, partner_mask, lam)
        outputs = self.parallel.model(values, mask)
        loss = lam * self.case_loss(outputs, targets, weights) + (1.0 - lam) * self.case_loss(
            outputs, partner_targets, self.batches.batch_weights(partners, self.device)
        )
        return loss, len(shard), len(index)

    def train_epoch(self, epoch: int) -> float:
        tic = time.perf_counter()
        loss = super().train_epoch(epoch)
        self.history.epoch_seconds.append(time.perf_counter() - tic)
        return loss

    def case_loss(self, outputs, targets, weights):
        return self.loss_fn(outputs, targets) if weights is None else self.loss_fn(outputs, targets, weights)

    def after_step(self) -> None:
        self.schedule.after_step()

    def validate(self) -> dict:
        if self.val is None or not len(self.val):
            return {}
        out = predict_outputs(self.model, self.val, self.batch_size, self.device, self.parallel)
        return {"val_loss": float(self.loss_fn(out, self.val.targets)),
                "val_score": float(self.score_fn(out, self.val.targets))}

    def record(self, logs: dict) -> None:
        self.history.train_loss.append(logs["train_loss"])
        if "val_loss" in logs:
            self.history.val_loss.append(logs["val_loss"])
            self.history.val_score.append(logs["val_score"])

    def resume(self) -> tuple[int, bool]:
        if self.checkpoint is None:
            return 0, False
        self.checkpoint.bind(self.train, self.val, self.model)
        state = self.checkpoint.load()
        if state is None:
            return 0, False
        self.load_loop_state(state)
        self.schedule.load_state_dict(state["schedule"])
        set_rng_states(state["rng"])
        if state.get("cuda_rng") is not None and torch.device(self.device).type == "cuda":
            torch.cuda.set_rng_state(state["cuda_rng"], self.device)
        self.history.train_loss, self.history.val_loss, self.history.val_score = (
            [float(v) for v in state[name]] for name in ("train_loss", "val_loss", "val_score")
        )
        self.history.epoch_seconds = [float(v) for v in state.get("epoch_seconds", ())]  # older states lack it
        self.history.best_epoch = int(state["best_epoch"])
        self.early_stopping.load_state_dict(state)
        return int(state["epoch"]), bool(state["finished"])

    def save_checkpoint(self, epoch: int, finished: bool) -> None:
        if self.checkpoint is None:
            return
        on_cuda = torch.device(self.device).type == "cuda"
        self.checkpoint.save({
            "epoch": epoch + 1, "finished": finished, **self.loop_state(),
            "schedule": self.schedule.state_dict(), "rng": rng_states(),
            "cuda_rng": torch.cuda.get_rng_state(self.device) if on_cuda else None,
            **{name: torch.tensor(getattr(self.history, name), dtype=torch.float64)
               for name in ("train_loss", "val_loss", "val_score", "epoch_seconds")},
            "best_epoch": self.history.best_epoch, **self.early_stopping.state_dict(),
        })


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
    trainer = SupervisedTrainer(model, train, val, loss_fn, score_fn, config, device, generator, callbacks, checkpoint)
    history = trainer.fit(trainer.epochs, fit_info)
    if trainer.early_stopping.best_state is None:
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
