"""TransformerLayer: pre-norm and post-norm against a slow explicit reference, cross-attention, options."""

import math
from functools import partial

import pytest
import torch
from torch import nn

from tsrep.nn import SequenceNorm, TransformerLayer

DIM, HEADS, FFN = 8, 2, 12


def _layer(**options) -> TransformerLayer:
    torch.manual_seed(0)
    layer = TransformerLayer(DIM, HEADS, FFN, dropout=0.0, **options).double().eval()
    with torch.no_grad():
        for name, param in layer.named_parameters():
            if "norm" in name:  # LayerNorm starts at (1, 0): move it so a misplaced norm shows
                param.copy_(torch.randn_like(param) * 0.5 + (1.0 if name.endswith("weight") else 0.0))
    return layer


def _layer_norm(x, norm: nn.LayerNorm):
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + norm.eps) * norm.weight + norm.bias


def _attention(attn, queries, keys, key_valid=None, causal=False):
    """Explicit multi-head attention, one head and one query at a time.

    queries (B, M, dim), keys (B, N, dim) -> out (B, M, dim), pre-softmax logits (B, H, M, N)
    """
    w_q, w_k, w_v = attn.qkv.weight.split(DIM)
    b_q, b_k, b_v = attn.qkv.bias.split(DIM)
    d = DIM // HEADS
    b, m, n = queries.shape[0], queries.shape[1], keys.shape[1]
    out = torch.zeros(b, m, DIM, dtype=queries.dtype)
    logits = torch.zeros(b, HEADS, m, n, dtype=queries.dtype)
    for i in range(b):
        for h in range(HEADS):
            rows = slice(h * d, (h + 1) * d)
            q = queries[i] @ w_q[rows].T + b_q[rows]
            k = keys[i] @ w_k[rows].T + b_k[rows]
            v = keys[i] @ w_v[rows].T + b_v[rows]
            for t in range(m):
                s = torch.stack([q[t] @ k[j] / math.sqrt(d) for j in range(n)])
                logits[i, h, t] = s
                allowed = [(key_valid is None or bool(key_valid[i, j])) and (not causal or j <= t) for j in range(n)]
                s = s.masked_fill(~torch.tensor(allowed), float("-inf"))
                out[i, t, rows] = torch.softmax(s, 0) @ v
    return out @ attn.out.weight.T + attn.out.bias, logits


def _ffn(x, layer):
    first, act, _, second = layer.ffn
    return act(x @ first.weight.T + first.bias) @ second.weight.T + second.bias


def test_post_norm_is_norm_of_each_residual_sum():
    layer = _layer(pre_norm=False, act_layer=nn.ReLU)
    x = torch.randn(2, 5, DIM, dtype=torch.double)
    valid = torch.tensor([[True] * 5, [True, True, True, False, False]])
    out, logits = layer(x, valid, need_logits=True)

    h, expected_logits = _attention(layer.attention, x, x, valid)
    y = _layer_norm(x + h, layer.norm1)
    y = _layer_norm(y + _ffn(y, layer), layer.norm2)
    torch.testing.assert_close(out, y)
    torch.testing.assert_close(logits, expected_logits)


def test_pre_norm_normalises_the_input_of_each_branch():
    layer = _layer(pre_norm=True, norm_layer=partial(nn.LayerNorm, eps=1e-6))
    x = torch.randn(2, 4, DIM, dtype=torch.double)
    out, logits = layer(x)

    h, _ = _attention(layer.attention, _layer_norm(x, layer.norm1), _layer_norm(x, layer.norm1))
    y = x + h
    y = y + _ffn(_layer_norm(y, layer.norm2), layer)
    torch.testing.assert_close(out, y)
    assert logits is None  # plain attention carries no map unless asked


@pytest.mark.parametrize("pre_norm", [True, False])
def test_cross_attention_reads_the_memory_with_causal_self_attention(pre_norm):
    layer = _layer(pre_norm=pre_norm, causal=True, cross_attention=True)
    y = torch.randn(2, 4, DIM, dtype=torch.double)
    memory = torch.randn(2, 6, DIM, dtype=torch.double)
    memory_valid = torch.tensor([[True] * 6, [True] * 4 + [False] * 2])
    out, self_logits, cross_logits = layer(y, None, memory=memory, memory_valid=memory_valid, need_logits=True)

    def before(norm, t):
        return _layer_norm(t, norm) if pre_norm else t

    def after(norm, t):
        return t if pre_norm else _layer_norm(t, norm)

    q = before(layer.norm1, y)
    h, expected_self = _attention(layer.attention, q, q, causal=True)
    z = after(layer.norm1, y + h)
    h, expected_cross = _attention(layer.cross_attention, before(layer.cross_norm, z), memory, memory_valid)
    z = after(layer.cross_norm, z + h)
    z = after(layer.norm2, z + _ffn(before(layer.norm2, z), layer))
    torch.testing.assert_close(out, z)
    torch.testing.assert_close(self_logits, expected_self)
    torch.testing.assert_close(cross_logits, expected_cross)
    # Position t of the output depends on positions <= t of the decoder stream only.
    changed = y.clone()
    changed[:, -1] += 1.0
    torch.testing.assert_close(layer(changed, memory=memory, memory_valid=memory_valid)[0][:, :-1], out[:, :-1])


def test_a_norm_that_takes_the_padding_mask_is_given_it():
    layer = TransformerLayer(DIM, HEADS, FFN, norm_layer=partial(SequenceNorm, "batch"), dropout=0.0).double()
    x = torch.randn(2, 5, DIM, dtype=torch.double)
    valid = torch.tensor([[True] * 5, [True, True, False, False, False]])
    out, _ = layer(x, valid)
    garbage = x.clone()
    garbage[~valid] = 1e3  # padded steps must not reach the batch statistics of the valid ones
    torch.testing.assert_close(layer(garbage, valid)[0][valid], out[valid])


@pytest.mark.parametrize(
    "options, argument",
    [
        ({"pre_norm": "yes"}, "pre_norm"),
        ({"norm_layer": "layer"}, "norm_layer"),
        ({"norm_layer": lambda d_model: "LayerNorm"}, "norm_layer"),
        ({"act_layer": nn.GELU()}, "act_layer"),
        ({"dropout": 1.0}, "dropout"),
        ({"attn_dropout": -0.1}, "attn_dropout"),
        ({"ffn_dropout": 2}, "ffn_dropout"),
        ({"dim_feedforward": 0}, "dim_feedforward"),
        ({"n_heads": 3}, "n_heads"),
        ({"cross_attention": 1}, "cross_attention"),
        ({"attention_options": {"interacting": "pairs", "heads": 2}}, "attention_options"),
        ({"attention_options": {"causal": True}}, "attention_options"),
    ],
)
def test_a_bad_option_is_a_value_error_naming_it(options, argument):
    settings = {"d_model": DIM, "n_heads": HEADS, "dim_feedforward": FFN, **options}
    with pytest.raises(ValueError, match=argument):
        TransformerLayer(**settings)


def test_memory_must_match_whether_the_layer_has_cross_attention():
    x = torch.randn(1, 3, DIM)
    with pytest.raises(ValueError, match="memory"):
        TransformerLayer(DIM, HEADS, FFN)(x, memory=x)
    with pytest.raises(ValueError, match="memory"):
        TransformerLayer(DIM, HEADS, FFN, cross_attention=True)(x)


def test_attention_options_reach_the_attention_module():
    layer = TransformerLayer(DIM, HEADS, FFN, alpha=0.5, beta=0.5, attention_options={"interacting": "pairs"})
    assert layer.attention.interacting == "pairs" and layer.attention.n_maps == HEADS * HEADS
    out, logits = layer(torch.randn(2, 3, DIM))
    assert out.shape == (2, 3, DIM) and logits.shape == (2, HEADS * HEADS, 3, 3)
