"""Pretraining stage of the EA-DC-Transformer estimators: parameters, checkpoint start, masked pretraining.

Kept apart from _base.py so the estimators' shared code only calls in here.
"""

from __future__ import annotations

import inspect
import types

from torch import nn

from tsrep.backbones.config import DCTransformerConfig
from tsrep.representation import build_encoder, load_encoder  # noqa: F401  (build_encoder used by _base)
from tsrep.training.masking import ReconstructionModel
from tsrep.training.pretrain import PretrainConfig, pretrain_masked


def check_pretraining_combinations(est) -> None:
    """Raise ValueError when freeze_encoder would leave a random encoder frozen."""
    if est.freeze_encoder and est.pretrained_encoder is None and est.pretrain_epochs == 0:
        raise ValueError(
            "freeze_encoder=True would train only the head on a random encoder; give pretrain_epochs > 0 "
            "or pretrained_encoder"
        )


#: Estimator parameters that a pretrained encoder's checkpoint fixes (its configuration holds them).
CHECKPOINT_FIXED = (*DCTransformerConfig.names(), "scaling")


def check_architecture_agrees(est, config: dict) -> None:
    """ValueError naming a parameter set explicitly (away from its default) that the checkpoint contradicts.

    With pretrained_encoder the checkpoint fixes the encoder; a parameter left at its default takes
    the checkpoint's value silently, but one the user chose would otherwise be ignored while
    get_params still reports it.
    """
    defaults = {
        name: param.default for name, param in inspect.signature(type(est).__init__).parameters.items()
    }
    for name in CHECKPOINT_FIXED:
        if name not in defaults:
            continue
        value, default, stored = getattr(est, name), defaults[name], config.get(name, defaults[name])
        if value != default and value != stored:
            raise ValueError(
                f"{name}={value!r} contradicts pretrained_encoder {str(est.pretrained_encoder)!r}, whose encoder "
                f"has {name}={stored!r}: the checkpoint fixes the encoder's architecture. Leave {name} at its "
                f"default ({default!r}) or set it to {stored!r}"
            )


def start_from_checkpoint(est, n_channels: int) -> None:
    """Set standardizer_, max_len_, n_channels_, encoder_config_ from est.pretrained_encoder (weights kept aside)."""
    config, encoder, standardizer = load_encoder(est.pretrained_encoder, n_channels)
    check_architecture_agrees(est, config)
    est.encoder_config_ = config
    est.conv_stem_ = None  # the checkpoint's encoder takes the steps themselves
    est.standardizer_ = standardizer
    est.max_len_ = int(config["max_len"])
    est.n_channels_ = int(config["in_channels"])
    est._checkpoint_weights = encoder.state_dict()


def pretrain_stage(est, model, data, device, generator, checkpoint=None, settings=None) -> list[float]:
    """Load checkpoint weights into model.encoder, pretrain it for est.pretrain_epochs, freeze it if asked.

    checkpoint, settings: a resumable pretraining state (tsrep.training.pretrain.pretrain_masked)."""
    weights = est.__dict__.pop("_checkpoint_weights", None)
    if weights is not None:
        model.encoder.load_state_dict(weights)
    losses: list[float] = []
    if est.pretrain_epochs > 0:
        recon = ReconstructionModel(model.encoder, est.n_channels_).to(device)
        losses = pretrain_masked(
            recon, data, PretrainConfig.from_estimator(est), device, generator, checkpoint=checkpoint, settings=settings
        )
    if est.freeze_encoder:
        freeze(model.encoder)
    return losses


def freeze(module: nn.Module) -> None:
    """No gradient to `module`, and it stays in eval mode (no dropout) when its parent trains: a fixed feature map."""
    for param in module.parameters():
        param.requires_grad_(False)
    module.train = types.MethodType(lambda self, mode=True: nn.Module.train(self, False), module)
    module.eval()
