"""The baseline encoders of the tables of Wang et al., "Convolution-enhanced Evolving Attention
Networks" (IEEE TPAMI 2023, Sec. 4.1), by name, each built from one shared set of hyperparameters
(those of tsrep.estimators.BackboneClassifier).

Encoders are registered by name (as timm registers its models): ``register_baseline(name)``
decorates a builder

    build(in_channels, max_len, *, d_model, n_blocks, n_heads, kernel_size, dim_feedforward, dropout, norm)
        -> encoder with forward(x (B, T, C), valid (B, T)) -> (B, T, encoder.d_model)

which takes the hyperparameters it uses and ignores the others; ``baseline_names()`` lists the
registered names and ``baseline_builder(name)`` looks one up.
"""

from __future__ import annotations

from typing import Callable

from torch import nn

from tsrep.backbones.causal_cnn import CausalCNNEncoder
from tsrep.backbones.recurrent import RecurrentEncoder
from tsrep.backbones.resnet import ResNetEncoder
from tsrep.backbones.transformer import TSTEncoder

_REGISTRY: dict[str, Callable[..., nn.Module]] = {}


def register_baseline(name: str):
    """Decorator registering ``build`` (see the module docstring) as the baseline encoder `name`."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"a baseline encoder's name must be a non-empty string, got {name!r}")

    def register(build: Callable[..., nn.Module]) -> Callable[..., nn.Module]:
        if name in _REGISTRY:
            raise ValueError(f"baseline encoder {name!r} is already registered")
        _REGISTRY[name] = build
        return build

    return register


def baseline_names() -> tuple[str, ...]:
    """The registered baseline encoders, in the order of registration."""
    return tuple(_REGISTRY)


def baseline_builder(name: str) -> Callable[..., nn.Module]:
    """The builder registered as `name`; ValueError listing the registered names for any other value."""
    if not isinstance(name, str) or name not in _REGISTRY:
        raise ValueError(f"backbone must be one of {baseline_names()}, got {name!r}")
    return _REGISTRY[name]


@register_baseline("lstm")
def _lstm(in_channels, max_len, *, d_model, n_blocks, dropout, **unused):
    """n_blocks stacked torch LSTM layers of width d_model."""
    return RecurrentEncoder(in_channels, max_len, "lstm", d_model, n_blocks, dropout)


@register_baseline("gru")
def _gru(in_channels, max_len, *, d_model, n_blocks, dropout, **unused):
    """n_blocks stacked torch GRU layers of width d_model."""
    return RecurrentEncoder(in_channels, max_len, "gru", d_model, n_blocks, dropout)


@register_baseline("resnet")
def _resnet(in_channels, max_len, *, d_model, n_blocks, norm, dropout, **unused):
    """ResNet of Wang et al. 2017: n_blocks residual blocks of kernels 8/5/3, widths d, 2d, 2d, ..."""
    return ResNetEncoder(in_channels, max_len, d_model, n_blocks, norm, dropout)


@register_baseline("dilated-conv")
def _dilated_conv(in_channels, max_len, *, d_model, n_blocks, kernel_size, dropout, **unused):
    """The T-Loss causal CNN (Franceschi et al. 2019): blocks of two causal convolutions, dilation 2^i."""
    return CausalCNNEncoder(in_channels, max_len, d_model, n_blocks, kernel_size, dropout)


@register_baseline("transformer")
def _transformer(in_channels, max_len, *, d_model, n_blocks, n_heads, dim_feedforward, dropout, norm, **unused):
    """TST (Zerveas et al. 2021)."""
    # 2 * n_blocks encoder layers: a "block" means two layers, as in an EA-DC-Transformer block.
    return TSTEncoder(in_channels, max_len, d_model, 2 * n_blocks, n_heads, dim_feedforward, dropout, norm)
