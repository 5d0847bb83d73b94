"""Attention kinds and baseline encoders are chosen by name from registries (as timm's)."""

import pytest
import torch

import tsrep.backbones.baselines as baselines
import tsrep.nn.attention_kinds as attention_kinds
from tsrep.backbones import CausalCNNEncoder, RecurrentEncoder, ResNetEncoder, TSTEncoder
from tsrep.backbones.baselines import register_baseline
from tsrep.estimators.baselines import BACKBONES, baseline_encoder
from tsrep.nn import (
    ATTENTION_KINDS, CrossedCoAttention, MultiHeadAttention, TransformerLayer, build_attention, register_attention,
)
from tsrep.nn.attention_kinds import attention_kind_names, validate_attention_options


# ----------------------------------------------------------------------------- attention kinds
@pytest.mark.parametrize(
    "kind, cls, interacting, evolving",
    [
        ("evolving", MultiHeadAttention, None, True),
        ("vanilla", MultiHeadAttention, None, False),
        ("interacting", MultiHeadAttention, "pairs", True),
        ("interacting-summed", MultiHeadAttention, "summed", True),
        ("crossed", CrossedCoAttention, None, None),
    ],
)
def test_registered_attention_kind_builds_its_module(kind, cls, interacting, evolving):
    module = build_attention(kind, 6, 8, 2, 0.5, 0.5, 3, 0.0)
    assert type(module) is cls
    if cls is MultiHeadAttention:
        assert module.interacting == interacting and module.is_evolving == evolving


def test_builtin_attention_kinds_in_order():
    assert ATTENTION_KINDS == ("evolving", "vanilla", "interacting", "interacting-summed", "crossed")
    assert attention_kind_names() == ATTENTION_KINDS


@pytest.mark.parametrize("name", ["sparse", None, "Evolving"])
def test_unknown_attention_kind_lists_the_registered_ones(name):
    with pytest.raises(ValueError, match="attention must be one of") as info:
        build_attention(name, 6, 8, 2, 0.5, 0.5, 3, 0.0)
    assert all(repr(kind) in str(info.value) for kind in attention_kind_names())
    with pytest.raises(ValueError, match="attention must be one of"):
        validate_attention_options(name, None, None, 2, 8)


def test_a_registered_attention_kind_is_built_and_checked_by_name(monkeypatch):
    monkeypatch.setattr(attention_kinds, "_REGISTRY", dict(attention_kinds._REGISTRY))

    @register_attention("plain-pairs", interacting="pairs")
    def plain_pairs(dim_in, d_model, n_heads, alpha, beta, attn_kernel_size, dropout, **mixing):
        return MultiHeadAttention(dim_in, d_model, n_heads, 0.0, 0.0, attn_kernel_size, dropout, interacting="pairs",
                                  **mixing)

    assert "plain-pairs" in attention_kind_names()
    module = build_attention("plain-pairs", 6, 8, 2, 0.5, 0.5, 3, 0.0, head_mixing="deacon-direct", deacon_m=4)
    out, _ = module.eval()(torch.randn(2, 5, 6))
    assert out.shape == (2, 5, 8) and module.mixing.m == 4  # DEACON mixes its h*h = 4 pair outputs
    with pytest.raises(ValueError, match="needs an attention branch"):
        validate_attention_options("plain-pairs", None, None, 2, 0)
    with pytest.raises(ValueError, match="already registered"):
        register_attention("plain-pairs")(plain_pairs)
    with pytest.raises(ValueError, match="interacting must be None or one of"):
        register_attention("talking-heads", interacting="talking")


@pytest.mark.parametrize(
    "kind, maps, interact",
    [("evolving", 3, False), ("vanilla", 3, False), ("interacting", 9, True), ("interacting-summed", 3, True),
     ("crossed", 6, False)],
)
def test_a_kind_declares_its_maps_and_whether_its_heads_interact(kind, maps, interact):
    """What callers need without building a module: the maps a layer holds, and whether Eq. 13 applies."""
    assert attention_kinds.attention_kind(kind).n_maps(3) == maps
    assert attention_kinds.attention_kind(kind).heads_interact is interact
    module = build_attention(kind, 6, 6, 3, 0.5, 0.5, 3, 0.0).eval()
    _, logits = module(torch.randn(2, 5, 6), None, None, True)
    assert logits.shape == (2, maps, 5, 5)


def test_transformer_layer_builds_its_self_attention_by_the_registry(monkeypatch):
    monkeypatch.setattr(attention_kinds, "_REGISTRY", dict(attention_kinds._REGISTRY))
    built = []

    @register_attention("recorded")
    def recorded(*args, **options):
        built.append(options)
        return MultiHeadAttention(*args, **options)

    layer = TransformerLayer(8, 2, 12, causal=True, attention="recorded", attention_options={"map_grid": None})
    assert built == [{"causal": True, "map_grid": None}] and layer.attention.causal
    assert type(TransformerLayer(8, 2, 12, attention="crossed").attention) is CrossedCoAttention
    with pytest.raises(ValueError, match="attention must be one of"):
        TransformerLayer(8, 2, 12, attention="sparse")
    with pytest.raises(ValueError, match="attention='interacting' sets it"):
        TransformerLayer(8, 2, 12, attention="interacting", attention_options={"interacting": "summed"})
    with pytest.raises(ValueError, match="branches must be a positive integer"):
        register_attention("three-branches", branches=0)


# ----------------------------------------------------------------------------- baseline encoders
SIZES = dict(d_model=8, n_blocks=2, n_heads=2, kernel_size=3, dim_feedforward=None, dropout=0.0, norm="batch")


@pytest.mark.parametrize(
    "name, cls", [("lstm", RecurrentEncoder), ("gru", RecurrentEncoder), ("resnet", ResNetEncoder),
                  ("dilated-conv", CausalCNNEncoder), ("transformer", TSTEncoder)],
)
def test_registered_baseline_builds_its_encoder(name, cls):
    encoder = baseline_encoder(name, 3, 16, **SIZES)
    assert type(encoder) is cls
    out = encoder.eval()(torch.randn(2, 16, 3), torch.ones(2, 16, dtype=torch.bool))
    assert out.shape[:2] == (2, 16) and out.shape[2] == encoder.d_model
    if cls is RecurrentEncoder:
        assert encoder.kind == name
    if cls is TSTEncoder:
        assert len(encoder.layers) == 2 * SIZES["n_blocks"]  # a block is two layers


def test_backbones_are_the_registered_baselines():
    assert BACKBONES == baselines.baseline_names() == ("lstm", "gru", "resnet", "dilated-conv", "transformer")


@pytest.mark.parametrize("name", ["tcn", None, "LSTM"])
def test_unknown_baseline_lists_the_registered_ones(name):
    with pytest.raises(ValueError, match="backbone must be one of") as info:
        baseline_encoder(name, 3, 16, **SIZES)
    assert all(repr(n) in str(info.value) for n in baselines.baseline_names())


def test_a_registered_baseline_is_built_by_name(monkeypatch):
    monkeypatch.setattr(baselines, "_REGISTRY", dict(baselines._REGISTRY))

    @baselines.register_baseline("wide-gru")
    def wide_gru(in_channels, max_len, *, d_model, n_blocks, dropout, **unused):
        return RecurrentEncoder(in_channels, max_len, "gru", 2 * d_model, n_blocks, dropout)

    encoder = baseline_encoder("wide-gru", 3, 16, **SIZES)
    assert type(encoder) is RecurrentEncoder and encoder.d_model == 16
    with pytest.raises(ValueError, match="already registered"):
        baselines.register_baseline("gru")(wide_gru)


@pytest.mark.parametrize("name", ["", 3, None])
def test_registering_needs_a_non_empty_string_name(name):
    with pytest.raises(ValueError, match="name must be a non-empty string"):
        register_attention(name)
    with pytest.raises(ValueError, match="name must be a non-empty string"):
        register_baseline(name)
