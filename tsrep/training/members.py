"""The members of a seed ensemble trained together: their weights stacked, one forward and backward pass for all.

Members of one architecture differ only in their weights and their random numbers. Stacked (each weight becomes
``(n_members, *shape)``) and run through one network's forward pass under :func:`torch.func.vmap` (the model
ensembling recipe of torch.func's documentation), they take their optimiser steps together: each operation is one
kernel launch for all members where separate fits launch one each. A GPU's steps on small problems are bound by
those launches, so there the members cost little more than one fit. On a CPU the arithmetic is the same and the
stock operations vmap needs are slower than the hand-fused steps, so separate fits stay the CPU's choice.

Each member keeps what a separate fit would own: its shuffles and mixup draws (its generator), its dropout numbers
(vmap's ``randomness="different"``), its BatchNorm statistics (stacked buffers), its gradient clipping (the norm
of its own gradient) and, with a validation split, its early stopping and best epoch. The numbers drawn differ
from a separate fit's, so a member is another sample of the same recipe, not the same network.

forward of :class:`StackedMembers`: values (M, B, T, C), valid (M, B, T) bool or None -> outputs (M, B, n_outputs).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import torch
from torch import nn
from torch.func import functional_call, stack_module_state, vmap
from tqdm.auto import tqdm

from tsrep.nn._compile import stacked_members
from tsrep.training.config import TrainConfig
from tsrep.training.deacon import pca_layers
from tsrep.training.loop import History, SeriesBatchData, check_finite_loss, shuffled_batches, train_supervised
from tsrep.training.mixup import mix, mixup_partners, pad_steps
from tsrep.training.optim import build_optimizer
from tsrep.training.schedules import LRSchedule


@dataclass
class DeferredTraining:
    """What one member's fit prepared for :func:`tsrep.training.train_supervised`, kept until every member has
    built its network: the arguments of that call and the global random states at the moment it would have run
    (so that a member trained on its own after all equals a separate fit)."""

    model: nn.Module
    train: SeriesBatchData
    val: SeriesBatchData | None
    loss_fn: object
    score_fn: object
    config: TrainConfig
    device: torch.device
    generator: torch.Generator
    all_data: SeriesBatchData | None = None  # all of TRAIN, validation part included (PreciseBN reads it)
    rng_state: torch.Tensor = field(default_factory=torch.get_rng_state)
    cuda_rng_state: torch.Tensor | None = None
    generator_state: torch.Tensor | None = None  # the shuffling generator's, set from `generator` when None

    def __post_init__(self):
        if self.generator_state is None:
            self.generator_state = self.generator.get_state()


def why_not_together(runs: list[DeferredTraining]) -> str | None:
    """None when the members of `runs` can train together, else why not (a phrase for a warning)."""
    first = runs[0]
    if len({run.val is None for run in runs}) > 1:
        return "some members hold out a validation split and others not"
    if any(pca_layers(run.model) for run in runs):
        return "DEACON head mixing trains its projections by its own rule"
    if first.config.lr_schedule not in ("onecycle", "cosine", "none"):
        return f"lr_schedule={first.config.lr_schedule!r} steps on each member's own losses"
    if any(not p.requires_grad for p in first.model.parameters()):
        return "part of the network is frozen"
    shapes = lambda run: [(k, v.shape, v.dtype) for k, v in run.model.state_dict().items()]  # noqa: E731
    for run in runs[1:]:
        if run.config != first.config or shapes(run) != shapes(first) or type(run.model) is not type(first.model):
            return "the members' networks or settings differ"
        if run.train.values.shape != first.train.values.shape or run.device != first.device:
            return "the members' data or devices differ"
    return None


def train_one(run: DeferredTraining) -> History:
    """The deferred member trained on its own, from the random states its fit left (also after an attempt to train
    it with the others): a separate fit's result."""
    devices = [run.device.index or 0] if run.device.type == "cuda" else []
    run.generator.set_state(run.generator_state)
    with torch.random.fork_rng(devices=devices):
        torch.set_rng_state(run.rng_state)
        if run.cuda_rng_state is not None:
            torch.cuda.set_rng_state(run.cuda_rng_state, run.device)
        return train_supervised(run.model, run.train, run.val, run.loss_fn, run.score_fn, run.config, run.device,
                                run.generator)


class StackedMembers(nn.Module):
    """The weights and buffers of M networks of one architecture, each stacked along a new first axis, run
    through the first network's forward pass by vmap (stock operations: tsrep.nn.stock_ops).

    The networks themselves are left untouched until :meth:`copy_into`. Train and eval mode are the first
    network's (a module that keeps itself in eval mode, such as a frozen part, stays so)."""

    def __init__(self, models: list[nn.Module]):
        super().__init__()
        params, buffers = stack_module_state(models)
        self.parameter_names = list(params)
        self.buffer_names = list(buffers)
        self.weights = nn.ParameterList([nn.Parameter(params[name].detach()) for name in self.parameter_names])
        for i, name in enumerate(self.buffer_names):
            self.register_buffer(f"buffer_{i}", buffers[name].detach().clone())
        self._template = [models[0]]  # a list: not a submodule, so its own weights are no parameters of this one
        self.n_members = len(models)

    def train(self, mode: bool = True):
        super().train(mode)
        self._template[0].train(mode)
        return self

    def forward(self, values: torch.Tensor, valid: torch.Tensor | None) -> torch.Tensor:
        """values (M, B, T, C), valid (M, B, T) bool or None -> (M, B, n_outputs)"""
        template = self._template[0]

        def one_member(params, buffers, x, v):
            return functional_call(template, (params, buffers), (x, v))

        params = dict(zip(self.parameter_names, self.weights))
        buffers = {name: getattr(self, f"buffer_{i}") for i, name in enumerate(self.buffer_names)}
        # The hand-fused autograd functions have no batching rules: vmap traces the stock operations (with the
        # cheaper dropout masks, which it batches).
        with stacked_members():
            return vmap(one_member, in_dims=(0, 0, 0, None if valid is None else 0), randomness="different")(
                params, buffers, values, valid
            )

    @torch.no_grad()
    def member_state(self, m: int) -> dict:
        """CPU copies of member m's weights and buffers, by their names in the network."""
        pairs = zip(self.parameter_names, self.weights)
        state = {name: weight[m].detach().to("cpu", copy=True) for name, weight in pairs}
        for i, name in enumerate(self.buffer_names):
            state[name] = getattr(self, f"buffer_{i}")[m].to("cpu", copy=True)
        return state

    @torch.no_grad()
    def copy_into(self, models: list[nn.Module]) -> None:
        """Member m's weights and buffers into models[m]."""
        for m, model in enumerate(models):
            for name, weight in zip(self.parameter_names, self.weights):
                model.get_parameter(name).copy_(weight[m])
            for i, name in enumerate(self.buffer_names):
                model.get_buffer(name).copy_(getattr(self, f"buffer_{i}")[m])


def clip_each_member(weights, max_norm: float) -> None:
    """Scale each member's gradient to a norm of at most max_norm, as clip_grad_norm_ does for one network
    (the norm over all of that member's gradients)."""
    grads = [w.grad for w in weights if w.grad is not None]
    if not grads:
        return
    squares = torch.stack([g.flatten(1).float().pow(2).sum(1) for g in grads]).sum(0)  # (M,)
    factor = (max_norm / (squares.sqrt() + 1e-6)).clamp(max=1.0)
    for g in grads:
        g.mul_(factor.view(-1, *([1] * (g.ndim - 1))).to(g.dtype))


def _members_batch(runs: list[DeferredTraining], data: list[SeriesBatchData], indices: list[torch.Tensor],
                   mixup: float):
    """Each member's batch of its own cases (`data`: each member's training cases; mixed with partners under
    mixup), padded to one length.
    Returns values (M, B, T, C), valid (M, B, T) or None, and per member (targets, weights, partner targets,
    partner weights, lam)."""
    device = runs[0].device
    batches, extras = [], []
    for run, train, index in zip(runs, data, indices):
        values, valid, targets = train.batch(index, device)
        weights = train.batch_weights(index, device)
        if mixup:
            lam, partners = mixup_partners(mixup, index, run.generator)
            partner_values, partner_valid, partner_targets = train.batch(partners, device)
            values, valid = mix(values, valid, partner_values, partner_valid, lam)
            extras.append((targets, weights, partner_targets, train.batch_weights(partners, device), lam))
        else:
            extras.append((targets, weights, None, None, 1.0))
        batches.append((values, valid))
    return (*_stacked(batches), extras)


def _stacked(batches: list[tuple[torch.Tensor, torch.Tensor | None]]):
    """Each member's (values (B, t_m, C), valid (B, t_m) or None) -> values (M, B, T, C) and valid (M, B, T), or
    None when every step of every member's batch is valid, over the longest member's T."""
    length = max(values.shape[1] for values, _ in batches)
    padded = [pad_steps(values, valid, length) for values, valid in batches]
    values = torch.stack([v for v, _ in padded])
    if all(valid is None for _, valid in padded):
        return values, None
    full = torch.ones(values.shape[1:3], dtype=torch.bool, device=values.device)
    return values, torch.stack([full if valid is None else valid for _, valid in padded])


def train_together(runs: list[DeferredTraining]) -> list[History]:
    """Train the deferred members' networks together (in place); returns each member's history.

    The runs must pass :func:`why_not_together`. The loop is :func:`train_supervised`'s for each member at once:
    the same epochs and step floor, shuffles, mixup, schedule, gradient clipping and per-epoch finiteness check,
    and with a validation split each member's own early stopping (:class:`MemberEarlyStopping`): a member that has
    stopped records nothing more (its steps go on with the others' and are discarded) and keeps its best epoch's
    weights; training ends when every member has stopped. The members' dropout draws from the global generator,
    seeded here from the first member's state (so that a fit is reproducible) and restored after (so that the
    caller's is untouched)."""
    first = runs[0]
    devices = [first.device.index or 0] if first.device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices):
        torch.set_rng_state(first.rng_state)
        if first.cuda_rng_state is not None:
            torch.cuda.set_rng_state(first.cuda_rng_state, first.device)
        return _train_together(runs)


def _train_together(runs: list[DeferredTraining]) -> list[History]:
    first = runs[0]
    config, device = first.config, first.device
    # Each member's training cases gathered on the device, not copied there step by step.
    data = [run.train.to_device(device) for run in runs]
    models = [run.model for run in runs]
    stack = StackedMembers(models).to(device)
    optimizer = build_optimizer(config.optimizer, stack.parameters(), config.lr, config.optimizer_kwargs,
                                weight_decay=config.weight_decay, member_axis=True)
    n_cases = len(first.train)
    steps_per_epoch = sum(1 for _ in shuffled_batches(n_cases, config.batch_size, torch.Generator()))
    epochs = max(config.max_epochs, math.ceil(config.min_steps / max(steps_per_epoch, 1)))
    schedule = LRSchedule(config.lr_schedule, optimizer, epochs * steps_per_epoch)
    histories = [History() for _ in runs]
    stopping = [MemberEarlyStopping(config.patience) for _ in runs] if first.val is not None else None
    dtype = torch.float32 if device.type == "mps" else torch.float64
    with tqdm(total=epochs, desc=f"{len(runs)} members", leave=False, disable=not config.verbose) as bar:
        for epoch in range(epochs):
            if stopping is not None and all(member.stopped for member in stopping):
                break
            _train_epoch(stack, runs, data, optimizer, schedule, config, histories, stopping, epoch, dtype)
            bar.set_postfix({"train_loss": f"{sum(h.train_loss[-1] for h in histories) / len(histories):.4f}"},
                            refresh=False)
            bar.update()
    stack.copy_into(models)
    for m, (model, history) in enumerate(zip(models, histories)):
        history.best_epoch = len(history.train_loss) - 1
        if stopping is not None and stopping[m].best_state is not None:
            history.best_epoch = stopping[m].best_epoch
            load_member_state(model, stopping[m].best_state)
        model.eval()
    return histories


def _train_epoch(stack, runs, data, optimizer, schedule, config, histories, stopping, epoch: int, dtype) -> None:
    """One epoch of every member: the optimiser steps, then each running member's record and early stopping."""
    device, n_cases = runs[0].device, len(runs[0].train)
    tic = time.perf_counter()
    stack.train()
    totals, seen = torch.zeros(len(runs), dtype=dtype, device=device), 0
    for indices in zip(*(shuffled_batches(n_cases, config.batch_size, run.generator) for run in runs)):
        optimizer.zero_grad(set_to_none=True)
        values, valid, extras = _members_batch(runs, data, list(indices), config.mixup)
        outputs = stack(values, valid)
        losses = []
        for run, out, (targets, weights, partner_targets, partner_weights, lam) in zip(runs, outputs, extras):
            loss = _case_loss(run.loss_fn, out, targets, weights)
            if partner_targets is not None:
                loss = lam * loss + (1.0 - lam) * _case_loss(run.loss_fn, out, partner_targets, partner_weights)
            losses.append(loss)
        losses = torch.stack(losses)
        losses.sum().backward()  # the members share no weight: each gets its own loss's gradient
        if config.grad_clip:
            clip_each_member(stack.weights, config.grad_clip)
        optimizer.step()
        schedule.after_step()
        totals += losses.detach() * len(indices[0])
        seen += len(indices[0])
    seconds = time.perf_counter() - tic
    validation = _validate(stack, runs, config.batch_size) if stopping is not None else None
    for m, history in enumerate(histories):
        if stopping is not None and stopping[m].stopped:
            continue
        history.train_loss.append(check_finite_loss(totals[m], f"training loss of member {m} at epoch {epoch}",
                                                    config.lr) / max(seen, 1))
        history.epoch_seconds.append(seconds)
        if validation is not None:
            val_loss, val_score = validation[m]
            history.val_loss.append(val_loss)
            history.val_score.append(val_score)
            stopping[m].epoch_end(epoch, val_score, val_loss, stack, m)


class MemberEarlyStopping:
    """One member's early stopping, as tsrep.training.loop.EarlyStopping: the best epoch has the highest
    validation score, ties broken by the lower validation loss; `patience` epochs without a better one stop the
    member (None: never)."""

    def __init__(self, patience: int | None):
        self.patience = patience
        self.best_key: tuple[float, float] | None = None
        self.best_state: dict | None = None
        self.best_epoch = -1
        self.waited = 0
        self.stopped = False

    def epoch_end(self, epoch: int, val_score: float, val_loss: float, stack: "StackedMembers", member: int) -> None:
        key = (val_score, -val_loss)
        if self.best_key is None or key > self.best_key:
            self.best_key, self.best_state, self.best_epoch, self.waited = key, stack.member_state(member), epoch, 0
        else:
            self.waited += 1
        self.stopped = self.patience is not None and self.waited >= self.patience


@torch.no_grad()
def _validate(stack: "StackedMembers", runs: list[DeferredTraining], batch_size: int) -> list[tuple[float, float]]:
    """(validation loss, score) of every member on its own validation cases, in eval mode, as
    tsrep.training.loop.SupervisedTrainer.validate computes them for one network."""
    stack.eval()
    device = runs[0].device
    n_val = len(runs[0].val)
    outputs = []
    for start in range(0, n_val, batch_size):
        index = torch.arange(start, min(start + batch_size, n_val))
        values, valid = _stacked([run.val.batch(index, device)[:2] for run in runs])
        outputs.append(stack(values, valid).float().cpu())
    outputs = torch.cat(outputs, dim=1)  # (M, n_val, n_outputs)
    return [(float(run.loss_fn(out, run.val.targets)), float(run.score_fn(out, run.val.targets)))
            for run, out in zip(runs, outputs)]


def load_member_state(model: nn.Module, state: dict) -> None:
    """Copy a member's weights and buffers (StackedMembers.member_state) into `model`."""
    parameters = dict(model.named_parameters())
    with torch.no_grad():
        for name, tensor in state.items():
            (parameters[name] if name in parameters else model.get_buffer(name)).copy_(tensor)


def _case_loss(loss_fn, outputs, targets, weights):
    return loss_fn(outputs, targets) if weights is None else loss_fn(outputs, targets, weights)
