"""Pretraining stage of the EA-DC-Transformer estimators: parameters, checkpoint start, masked pretraining.

Kept apart from _base.py so the estimators' shared code only calls in here.
"""

from __future__ import annotations

import numbers
import types

from torch import nn

from tsrep.representation import build_encoder, load_encoder  # noqa: F401  (build_encoder used by _base)
from tsrep.training.masking import ReconstructionModel, validate_masking
from tsrep.training.pretrain import PretrainConfig, pretrain_masked


def validate_pretraining(est) -> None:
    p = est.pretrain_epochs
    if isinstance(p, bool) or not isinstance(p, numbers.Integral) or p < 0:
        raise ValueError(f"pretrain_epochs must be an integer >= 0 (0: no pretraining), got {p!r}")
    validate_masking(est.mask_ratio, est.mask_mean_length, est.masking)
    if est.freeze_encoder not in (True, False):
        raise ValueError(f"freeze_encoder must be a bool, got {est.freeze_encoder!r}")
    if est.freeze_encoder and est.pretrained_encoder is None and p == 0:
        raise ValueError(
            "freeze_encoder=True would train only the head on a random encoder; give pretrain_epochs > 0 "
            "or pretrained_encoder"
        )


def start_from_checkpoint(est, n_channels: int) -> None:
    """Set standardizer_, max_len_, n_channels_, encoder_config_ from est.pretrained_encoder (weights kept aside)."""
    config, encoder, standardizer = load_encoder(est.pretrained_encoder, n_channels)
    est.encoder_config_ = config
    est.standardizer_ = standardizer
    est.max_len_ = int(config["max_len"])
    est.n_channels_ = int(config["in_channels"])
    est._checkpoint_weights = encoder.state_dict()


def pretrain_stage(est, model, data, device, generator) -> list[float]:
    """Load checkpoint weights into model.encoder, pretrain it for est.pretrain_epochs, freeze it if asked."""
    weights = est.__dict__.pop("_checkpoint_weights", None)
    if weights is not None:
        model.encoder.load_state_dict(weights)
    losses: list[float] = []
    if est.pretrain_epochs > 0:
        config = PretrainConfig(
            epochs=int(est.pretrain_epochs), lr=est.lr, batch_size=int(est.batch_size), optimizer=est.optimizer,
            optimizer_kwargs=est.optimizer_kwargs, grad_clip=est.grad_clip, mask_ratio=float(est.mask_ratio),
            mask_mean_length=float(est.mask_mean_length), masking=est.masking, verbose=est.verbose,
        )
        recon = ReconstructionModel(model.encoder, est.n_channels_).to(device)
        losses = pretrain_masked(recon, data, config, device, generator)
    if est.freeze_encoder:
        freeze(model.encoder)
    return losses


def freeze(module: nn.Module) -> None:
    """No gradient to `module`, and it stays in eval mode (no dropout) when its parent trains: a fixed feature map."""
    for param in module.parameters():
        param.requires_grad_(False)
    module.train = types.MethodType(lambda self, mode=True: nn.Module.train(self, False), module)
    module.eval()
