"""Learning-rate schedules by name, for every tsrep training loop.

    "onecycle": Smith and Topin, "Super-Convergence: Very Fast Training of Neural Networks Using Large
                Learning Rates" (2019): linear warm-up from lr / 25 to lr over the first 25 % of the
                steps, cosine annealing to lr / 1e4 over the rest (momentum is not cycled, so that any
                optimiser works). Stepped after every optimiser step.
    "cosine":   linear warm-up from 0 over the first 5 % of the steps, then cosine decay to 0
                (Loshchilov and Hutter, "SGDR", 2017, without restarts). Stepped after every step.
    "plateau":  the lr is halved when the monitored loss (validation loss when there is a validation
                split, else training loss) has not improved for `plateau_patience` epochs
                (torch's ReduceLROnPlateau). Stepped after every epoch.
    "none":     constant lr.

Or a callable ``optimizer -> scheduler`` returning a torch learning-rate scheduler
(``torch.optim.lr_scheduler.LRScheduler`` or ``ReduceLROnPlateau``), as skorch's ``LRScheduler``
callback takes one: e.g. ``functools.partial(torch.optim.lr_scheduler.StepLR, step_size=10)``. It is
built on the training optimiser and stepped after every epoch; a ``ReduceLROnPlateau`` is stepped
with the monitored loss of "plateau".
"""

from __future__ import annotations

import math

import torch

from tsrep.training.callbacks import Callback

LR_SCHEDULES = ("onecycle", "cosine", "plateau", "none")

ONECYCLE_WARMUP = 0.25
COSINE_WARMUP = 0.05


def check_lr_schedule(name) -> None:
    if callable(name):
        return
    if name not in LR_SCHEDULES:
        raise ValueError(f"lr_schedule must be one of {LR_SCHEDULES} or a callable optimizer -> scheduler, got {name!r}")


def build_scheduler(make, optimizer: torch.optim.Optimizer):
    """``make(optimizer)``, checked to be a torch learning-rate scheduler of `optimizer`: anything else is a
    TypeError naming lr_schedule, before any training step."""
    scheduler = make(optimizer)
    plateau = isinstance(scheduler, torch.optim.lr_scheduler.ReduceLROnPlateau)
    if not (isinstance(scheduler, torch.optim.lr_scheduler.LRScheduler) or plateau):
        raise TypeError(
            f"lr_schedule={make!r} must return a torch.optim.lr_scheduler scheduler of the optimizer it is given, "
            f"got {type(scheduler).__name__}"
        )
    if scheduler.optimizer is not optimizer:
        raise ValueError(
            f"lr_schedule={make!r} returned a scheduler of another optimizer: build it on the optimizer passed in"
        )
    return scheduler


class LRSchedule(Callback):
    """One object for the per-step and the per-epoch schedules: call ``after_step()`` after every
    optimiser step and ``after_epoch(monitored_loss)`` after every epoch; each does what its kind needs.

    As a callback of the training loop (tsrep.training.loop.Trainer), ``on_epoch_end`` calls
    ``after_epoch`` with the epoch's validation loss, or its training loss without a validation set.
    """

    def __init__(self, name, optimizer: torch.optim.Optimizer, total_steps: int, plateau_patience: int = 10):
        check_lr_schedule(name)
        self.name = name
        total_steps = max(int(total_steps), 1)
        if callable(name):
            self._scheduler = build_scheduler(name, optimizer)
            self.name = "plateau" if isinstance(self._scheduler, torch.optim.lr_scheduler.ReduceLROnPlateau) else "epoch"
        elif name in ("onecycle", "cosine"):
            # Factors of the lr set on the optimiser, one per step (any number of steps, even 1).
            start, end, share = (1 / 25, 1e-4, ONECYCLE_WARMUP) if name == "onecycle" else (0.0, 0.0, COSINE_WARMUP)
            warmup = max(1, int(round(share * total_steps)))

            def factor(step: int) -> float:
                if step < warmup:  # step 0 already takes a small step (never lr = 0)
                    return start + (1 - start) * (step + 1) / warmup
                progress = min(1.0, (step - warmup) / max(1, total_steps - 1 - warmup))
                return end + (1 - end) * 0.5 * (1.0 + math.cos(math.pi * progress))

            self._scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
        elif name == "plateau":
            self._scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(
                optimizer, factor=0.5, patience=plateau_patience
            )
        else:
            self._scheduler = None

    def after_step(self) -> None:
        if self.name in ("onecycle", "cosine"):
            self._scheduler.step()

    def after_epoch(self, monitored_loss: float) -> None:
        if self.name == "plateau":
            self._scheduler.step(monitored_loss)
        elif self.name == "epoch":  # a user's scheduler
            self._scheduler.step()

    def on_epoch_end(self, epoch: int, logs: dict) -> None:
        self.after_epoch(logs.get("val_loss", logs["train_loss"]))

    def state_dict(self) -> dict:
        return {} if self._scheduler is None else self._scheduler.state_dict()

    def load_state_dict(self, state: dict) -> None:
        if self._scheduler is not None:
            self._scheduler.load_state_dict(state)
