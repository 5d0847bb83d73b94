"""Masked-reconstruction pretraining (Wang et al., TPAMI 2023, Sec. 3.3.2; TST) on the training loop
(tsrep.training.loop.Trainer), with resumable checkpoints.

Every epoch shuffles the cases and draws a fresh mask for every batch (tsrep.training.masking); the
loss is the MSE over masked, non-padded entries (Eq. 8). With ``checkpoint`` set, the loop writes
its whole state (weights, optimizer, RNG, losses, epoch) after every epoch, atomically, and a later
call with the same path, data and settings resumes after the last finished epoch. The state records
a hash of the training data and every setting that changes the result, so a call on other data or
with other settings is refused instead of silently continuing someone else's training. The file
holds only tensors, numbers and strings and is read with ``torch.load(weights_only=True)``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import torch
from torch import nn

from tsrep._fingerprint import data_fingerprint, describe_settings, differing_settings
from tsrep.training.config import PretrainConfig
from tsrep.training.deacon import with_deacon
from tsrep.training.loop import ProgressBar, SeriesBatchData, Trainer
from tsrep.training.masking import apply_mask, make_mask, masked_mse
from tsrep.training.optim import build_optimizer
from tsrep.training.resume import load_safely, save_atomically

STATE_FORMAT = "tsrep-pretrain-state/2"


def _check_resumable(state, checkpoint, fingerprint: dict, epochs: int) -> None:
    """Raise ValueError unless `state` is a pretraining state of this data and these settings that
    `epochs` epochs can continue."""
    where = f"the checkpoint at {str(checkpoint)!r}"
    fmt = state.get("format") if isinstance(state, dict) else None
    if fmt != STATE_FORMAT:  # another file, or a state of another format: never read as this one
        held = "no format record" if fmt is None else f"format {fmt!r}"
        raise ValueError(
            f"{where} is not a tsrep pretraining state (format {STATE_FORMAT!r} expected, it holds {held}); "
            "delete it or use another checkpoint path"
        )
    try:
        stored = json.loads(state["fingerprint"])
        stored["data"], stored["settings"], int(state["epoch"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(
            f"{where} is incomplete or corrupt (no valid record of its data and settings: {exc!r})"
        ) from exc
    problems = []
    if stored["data"] != fingerprint["data"]:
        problems.append(
            f"the training data differ (stored {stored['data'][:19]}..., now {fingerprint['data'][:19]}...)"
        )
    differ = differing_settings(stored["settings"], fingerprint["settings"])
    if differ:
        problems.append("settings differ: " + "; ".join(differ))
    if problems:
        raise ValueError(
            f"{where} was written for other data/settings, so it cannot be resumed: {'; '.join(problems)}. "
            "It was left as it is; delete it or use another checkpoint path for this fit"
        )
    done = int(state["epoch"])
    if done > epochs:
        raise ValueError(
            f"{where} already holds {done} epochs of pretraining, more than the {epochs} asked for "
            f"(pretrain_epochs={epochs}); ask for {done} or more epochs to resume it, or delete it (or use "
            f"another checkpoint path) to pretrain {epochs} epochs from the start"
        )


class MaskedPretrainer(Trainer):
    """The loop of :func:`pretrain_masked`: a fresh mask for every batch, the masked MSE, a
    resumable state written after every epoch.

    Data-parallel like supervised training: the mask is drawn for the whole batch (the same draws
    on every rank and in one process) and each rank takes its rows; the loss of a rank's rows is
    weighted by its share of the batch's counted entries, so that the averaged gradient is the
    gradient of the batch's masked MSE.
    """

    loss_name = "pretraining loss"

    def __init__(self, model, data: SeriesBatchData, config: PretrainConfig, device, generator,
                 callbacks=None, checkpoint=None, settings: Mapping | None = None):
        optimizer = with_deacon(
            model, lambda params: build_optimizer(config.optimizer, params, config.lr, config.optimizer_kwargs)
        )
        super().__init__(model, optimizer, data.values, device, generator, config.batch_size, config.grad_clip,
                         config.lr, callbacks)
        self.data, self.config, self.checkpoint = data, config, checkpoint
        self.batches = data.to_device(device)  # on a GPU, the series copied there once
        self.history: list[float] = []
        self.fingerprint = None
        if checkpoint is not None:
            self.fingerprint = {
                "data": data_fingerprint(data.values, data.valid),
                "settings": describe_settings({**config.settings(), **(settings or {})}),
            }
        if config.verbose:
            self.loop_callbacks.append(ProgressBar("pretraining", {"loss": "train_loss"}))

    def batch_loss(self, index):
        values, valid, _ = self.batches.batch(index, self.device)
        # A fresh mask for every batch of every epoch, drawn on the CPU generator (reproducible), for
        # the whole batch before this rank takes its rows: every rank and one process draw the same.
        mask = make_mask(
            tuple(values.shape), self.config.mask_ratio, self.config.mask_mean_length, self.config.masking,
            self.generator,
        )
        # The entries counted, on the CPU from the CPU's valid steps: read from the device they would make the
        # host wait for it at every step.
        cpu_valid = None if valid is None else self.data.valid[index][:, : values.shape[1]]
        n_batch = _n_counted(mask, cpu_valid)
        rows = self.parallel.shard(torch.arange(len(index)))  # one process: every row
        n_shard = _n_counted(mask[rows], None if cpu_valid is None else cpu_valid[rows])
        values, mask = values[rows], mask[rows].to(self.device, non_blocking=True)
        valid = None if valid is None else valid[rows]
        prediction = self.parallel.model(apply_mask(values, mask), valid)
        return masked_mse(prediction, values, mask, valid), n_shard, n_batch

    def record(self, logs: dict) -> None:
        self.history.append(logs["train_loss"])

    def resume(self) -> tuple[int, bool]:
        if self.checkpoint is None or not Path(self.checkpoint).exists():
            return 0, False
        state = load_safely(self.checkpoint)
        _check_resumable(state, self.checkpoint, self.fingerprint, self.config.epochs)
        self.load_loop_state(state)
        if "torch_rng" in state:  # dropout draws: a resumed CPU run continues exactly as an uninterrupted one
            torch.set_rng_state(state["torch_rng"])
        self.history = [float(v) for v in state["losses"]]
        # A stopped pretraining is not marked finished: a later call continues it up to config.epochs.
        return int(state["epoch"]), False

    def save_checkpoint(self, epoch: int, finished: bool) -> None:
        if self.checkpoint is None:
            return
        save_atomically(
            {
                "format": STATE_FORMAT,
                "fingerprint": json.dumps(self.fingerprint, sort_keys=True),
                "epoch": epoch + 1,
                **self.loop_state(),
                "torch_rng": torch.get_rng_state(),
                "losses": torch.tensor(self.history, dtype=torch.float64),
            },
            self.checkpoint,
        )


def _n_counted(mask: torch.Tensor, valid: torch.Tensor | None) -> int:
    """Entries the masked MSE averages over: masked and not padding. mask: (B, T, C), valid: (B, T) or None."""
    return int((mask if valid is None else mask & valid[..., None]).sum())


def pretrain_masked(
    model: nn.Module,
    data: SeriesBatchData,
    config: PretrainConfig,
    device,
    generator: torch.Generator,
    checkpoint=None,
    settings: Mapping | None = None,
    callbacks=None,
    fit_info: dict | None = None,
) -> list[float]:
    """Train `model` (x, valid) -> (B, T, C) in place by masked reconstruction; returns per-epoch losses.

    checkpoint: path of the resumable training state (None: none written). It records a hash of
    `data` (padded values and masks) and the settings: `config` (but its epochs) and `settings`
    (the caller's parameters that change the result, e.g. the architecture and random seed). A
    checkpoint with another record, or with more epochs than ``config.epochs``, is a ValueError and
    is left untouched.

    callbacks: as in train_supervised (tsrep.training.callbacks); logs hold train_loss (the masked
    reconstruction loss), lr and seconds; on_fit_start gets `fit_info` plus "model", "epochs",
    "start_epoch". Returning True from on_epoch_end stops pretraining after that epoch.

    Data-parallel under an initialised process group of several ranks (tsrep.training.distributed),
    as train_supervised: each rank trains on its shard of every batch and the result equals one process's.
    """
    trainer = MaskedPretrainer(model, data, config, device, generator, callbacks, checkpoint, settings)
    return trainer.fit(config.epochs, fit_info)
