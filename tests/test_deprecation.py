"""Renamed keywords: the old name still builds the same module, with a FutureWarning saying what to use; the old and
the new name together are a TypeError naming both."""

import inspect
import re
import warnings

import pytest
import torch

from tsrep._deprecation import rename_keywords, renamed_keywords
from tsrep.backbones import EATextEncoder, EAViT, PatchEmbedding, ViTLayer
from tsrep.nn import (
    AttentionAugmentedConv2d, CrossedCoAttention, DeaconHeadMixing, MultiHeadAttention, PCALayer, TransformerLayer,
    build_attention,
)
from tsrep.nn.deacon import pca_settings

VIT = dict(image_size=8, patch_size=2, n_classes=3, in_channels=1, n_heads=2)
TEXT = dict(vocab_size=30, n_layers=2, n_heads=2, dim_feedforward=8, max_len=16)

# (builder, positional arguments, the new keywords, the same values under their old names)
CASES = {
    "EAViT": (EAViT, (), dict(VIT, d_model=8, n_layers=2, dim_feedforward=12, attn_kernel_size=5),
              dict(VIT, dim=8, depth=2, mlp_dim=12, map_kernel_size=5)),
    "ViTLayer": (ViTLayer, (), dict(d_model=8, n_heads=2, dim_feedforward=12, alpha=0.1, beta=0.3, attn_kernel_size=5,
                                    dropout=0.0, attn_dropout=0.0),
                 dict(dim=8, n_heads=2, mlp_dim=12, alpha=0.1, beta=0.3, map_kernel_size=5, dropout=0.0,
                      attn_dropout=0.0)),
    "PatchEmbedding": (PatchEmbedding, (8, 2, 1), dict(d_model=8), dict(dim=8)),
    "EATextEncoder": (EATextEncoder, (), dict(TEXT, d_model=8, alpha=0.1, beta=0.1, attn_kernel_size=5),
                      dict(TEXT, dim=8, alpha=0.1, beta=0.1, map_kernel_size=5)),
    "TransformerLayer": (TransformerLayer, (), dict(d_model=8, n_heads=2, dim_feedforward=12, beta=0.5,
                                                    attn_kernel_size=5),
                         dict(dim=8, n_heads=2, dim_feedforward=12, beta=0.5, map_kernel_size=5)),
    "MultiHeadAttention": (MultiHeadAttention, (6,), dict(d_model=8, n_heads=2, beta=0.5, attn_kernel_size=5),
                           dict(dim=8, n_heads=2, beta=0.5, map_kernel_size=5)),
    "CrossedCoAttention": (CrossedCoAttention, (6,), dict(d_model=8, n_heads=2, beta=0.5, attn_kernel_size=5),
                           dict(dim=8, n_heads=2, beta=0.5, map_kernel_size=5)),
    "AttentionAugmentedConv2d": (AttentionAugmentedConv2d, (3, 8), dict(feature_size=4, attn_kernel_size=5),
                                 dict(feature_size=4, map_kernel_size=5)),
    "build_attention": (build_attention, ("evolving", 6),
                        dict(d_model=8, n_heads=2, alpha=0.5, beta=0.5, attn_kernel_size=5, dropout=0.0),
                        dict(dim=8, n_heads=2, alpha=0.5, beta=0.5, map_kernel_size=5, dropout=0.0)),
    "PCALayer": (PCALayer, (4, 2), dict(deacon_dp=0.1, deacon_xi=0.5, deacon_inner_steps=3),
                 dict(dP=0.1, xi=0.5, inner_steps=3)),
    "DeaconHeadMixing": (DeaconHeadMixing, ("deacon-direct", 4, 3), dict(deacon_dp=0.1, deacon_inner_steps=3),
                         dict(dP=0.1, inner_steps=3)),
}


def _build(builder, args, kwargs):
    torch.manual_seed(0)
    return builder(*args, **kwargs)


@pytest.mark.parametrize("name", CASES)
def test_old_keywords_warn_and_build_the_same_module(name):
    builder, args, new, old = CASES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)  # the new names are silent
        expected = _build(builder, args, new)
    with pytest.warns(FutureWarning) as record:
        module = _build(builder, args, old)
    renamed = {o: n for o, n in zip(old, new) if o != n}
    messages = {str(w.message) for w in record}
    assert messages == {
        f"`{o}` was renamed `{n}` in 0.1 and will be removed in 0.3; use `{n}`" for o, n in renamed.items()
    }
    assert all(w.filename == __file__ for w in record)  # attributed to the caller, not to tsrep
    state, expected_state = module.state_dict(), expected.state_dict()
    assert list(state) == list(expected_state)  # state_dict keys unchanged
    for key in state:
        torch.testing.assert_close(state[key], expected_state[key], rtol=0, atol=0)
    assert repr(module) == repr(expected)


@pytest.mark.parametrize("name", CASES)
def test_an_old_and_its_new_keyword_together_are_a_type_error_naming_both(name):
    builder, args, new, old = CASES[name]
    o, n = next((o, n) for o, n in zip(old, new) if o != n)
    with pytest.raises(TypeError, match=f"`{o}` and `{n}`"):
        builder(*args, **{**new, o: old[o]})


def test_renamed_signature_lists_the_new_names_only():
    parameters = inspect.signature(EAViT).parameters
    assert {"d_model", "n_layers", "dim_feedforward", "attn_kernel_size"} <= parameters.keys()
    assert not {"dim", "depth", "mlp_dim", "map_kernel_size"} & parameters.keys()
    assert "attn_kernel_size" in inspect.signature(EATextEncoder.from_pretrained).parameters


def test_text_encoder_dim_attribute_warns_and_reads_d_model():
    encoder = EATextEncoder(**TEXT, d_model=8)
    with pytest.warns(FutureWarning, match=re.escape("`dim` was renamed `d_model`")):
        assert encoder.dim == encoder.d_model == 8


def test_transformer_layer_refuses_old_names_in_attention_options():
    with pytest.raises(ValueError, match="map_kernel_size"):
        TransformerLayer(8, 2, 12, attention_options={"map_kernel_size": 5})


def test_deacon_settings_dicts_read_the_paper_symbols_without_a_warning():
    """DCTransformerConfig.deacon_settings and saved models hold {dP, xi, inner_steps}: a stored format."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        assert pca_settings({"dP": 0.1, "xi": 0.5, "inner_steps": 3, "gha_lr": 0.25}) == {
            "deacon_dp": 0.1, "deacon_xi": 0.5, "deacon_inner_steps": 3, "gha_lr": 0.25,
        }
        mha = MultiHeadAttention(8, 8, 2, head_mixing="deacon-direct", deacon_settings={"dP": 0.1, "inner_steps": 3})
    layer = mha.mixing.pca
    assert (layer.dP, layer.xi, layer.inner_steps) == (0.1, 0.8, 3)
    with pytest.raises(TypeError, match="'dP' and 'deacon_dp'"):
        pca_settings({"dP": 0.1, "deacon_dp": 0.2})
    with pytest.raises(ValueError, match="deacon_xi"):
        build_attention("evolving", 8, 8, 2, 0.0, 0.0, 3, 0.0, head_mixing="deacon-direct",
                        deacon_settings={"xi": 1.5})


def test_rename_keywords_helper():
    assert rename_keywords({"a": 1}, {"b": "c"}, "f") == {"a": 1}
    with pytest.warns(FutureWarning, match=r"`b` was renamed `c` in 0\.1 and will be removed in 0\.3; use `c`"):
        assert rename_keywords({"a": 1, "b": 2}, {"b": "c"}, "f") == {"a": 1, "c": 2}
    with pytest.raises(TypeError, match=r"f\(\) got both `b` and `c`"):
        rename_keywords({"b": 2, "c": 3}, {"b": "c"}, "f")

    @renamed_keywords({"old": "new"}, since="1.0", removal="2.0")
    def f(new=0):
        return new

    assert f.__name__ == "f" and f(new=3) == 3 and f(4) == 4
    with pytest.warns(FutureWarning, match="in 1.0 and will be removed in 2.0") as record:
        assert f(old=5) == 5
    assert record[0].filename == __file__
