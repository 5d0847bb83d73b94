"""The DC-Transformer backbone: padding equivalence, degenerate cases, padding-aware norms."""

from unittest import mock

import pytest
import torch

from tsrep.backbones import DCTransformerEncoder, split_width
from tsrep.backbones.dc_transformer import DCTransformerLayer
from tsrep.nn import AttentionMapEvolution, CausalDilatedConv1d, MaskedBatchNorm1d, MultiHeadAttention


def _encoder(**kw):
    torch.manual_seed(0)
    args = dict(in_channels=3, max_len=20, d_model=16, n_blocks=2, n_heads=2, p=0.5, alpha=0.5, beta=0.5)
    args.update(kw)
    return DCTransformerEncoder(**args).double().eval()


@pytest.mark.parametrize("norm", ["layer", "batch"])
@pytest.mark.parametrize("p", [0.25, 0.5, 1.0])
def test_padded_batch_matches_each_series_alone(norm, p):
    enc = _encoder(norm=norm, p=p, n_heads=2 if p < 1 else 4)
    if norm == "batch":  # give the running statistics non-trivial values
        enc.train()
        enc(torch.randn(4, 20, 3, dtype=torch.double))
        enc.eval()
    lengths = [20, 13, 7]
    series = [torch.randn(n, 3, dtype=torch.double) for n in lengths]
    batch = torch.zeros(3, 20, 3, dtype=torch.double)
    valid = torch.zeros(3, 20, dtype=torch.bool)
    for i, s in enumerate(series):
        batch[i, : len(s)] = s
        valid[i, : len(s)] = True
    out = enc(batch, valid)
    for i, s in enumerate(series):
        alone = enc(s[None], None)[0]
        torch.testing.assert_close(out[i, : len(s)], alone, atol=1e-10, rtol=1e-8)


def _count(module, kind):
    return sum(isinstance(m, kind) for m in module.modules())


def test_degenerate_models_build_only_what_runs():
    pure_conv = _encoder(p=0.0)
    assert _count(pure_conv, MultiHeadAttention) == 0 and _count(pure_conv, CausalDilatedConv1d) == 4
    pure_ea = _encoder(p=1.0, n_heads=4)
    assert _count(pure_ea, CausalDilatedConv1d) == 0 and _count(pure_ea, MultiHeadAttention) == 4
    plain = _encoder(alpha=0.0, beta=0.0)
    assert _count(plain, AttentionMapEvolution) == 0
    ea = _encoder()
    # EA-DC-T differs from DC-T by exactly one K x K x 3 x 3 map convolution per attention layer.
    extra = sum(p.numel() for p in ea.parameters()) - sum(p.numel() for p in plain.parameters())
    assert extra == 4 * (2 * 2 * 3 * 3 + 2)


def test_channel_split_follows_p():
    assert split_width(64, 0.25) == (16, 48)
    assert split_width(128, 0.875) == (112, 16)
    enc = _encoder(d_model=64, p=0.25, n_heads=8)
    layer = enc.blocks[0].layers[0]
    assert layer.attention.out.out_features == 16 and layer.conv.conv.out_channels == 48


def _attention_calls(enc, x):
    """Run enc(x) and return, per attention layer in call order, (module, input, prev_logits, output, logits)."""
    calls = []
    hooks = [
        layer.attention.register_forward_hook(
            lambda module, args, output: calls.append((module, args[0], args[2], *output))
        )
        for block in enc.blocks
        for layer in block.layers
    ]
    try:
        enc(x)
    finally:
        for hook in hooks:
            hook.remove()
    return calls


def _heads(mha, x):
    """(B, N, d) -> queries, keys, values (B, K, N, d_head) and S = Q K^T / sqrt(d_head) (B, K, N, N)."""
    b, n, _ = x.shape
    q, k, v = mha.qkv(x).view(b, n, 3, mha.n_heads, mha.head_dim).permute(2, 0, 3, 1, 4)
    return v, q @ k.transpose(-2, -1) / mha.head_dim**0.5


def _attend(mha, logits, v):
    """softmax over keys, @ V, heads concatenated, W^O: (B, K, N, N), (B, K, N, d_head) -> (B, N, dim)."""
    h = torch.softmax(logits, dim=-1) @ v
    return mha.out(h.transpose(1, 2).flatten(2))


def _check_evolving_chain(enc, x):
    """Eq. 1 layer by layer, from each layer's own input and the previous attention layer's logits:
    A_in = alpha * A_logit_prev + (1 - alpha) * S (S alone in the first layer),
    A_logit = beta * ReLU(Conv2d(A_in)) + (1 - beta) * A_in, output softmax(A_logit) V W^O."""
    calls = _attention_calls(enc, x)
    assert len(calls) == 4  # 2 blocks x 2 layers: the chain crosses the block boundary too
    carried = None
    for mha, inputs, _, output, logits in calls:
        evolution = mha.evolution
        v, s = _heads(mha, inputs)
        a_in = s if carried is None else evolution.alpha * carried + (1 - evolution.alpha) * s
        conv = torch.nn.functional.conv2d(a_in, evolution.conv.weight, evolution.conv.bias, padding=1)
        want = evolution.beta * conv.relu() + (1 - evolution.beta) * a_in
        torch.testing.assert_close(logits, want)
        torch.testing.assert_close(output, _attend(mha, want, v))
        carried = logits


def test_alpha_zero_beta_zero_is_plain_attention_and_logits_chain_through_layers():
    torch.manual_seed(0)
    x = torch.randn(2, 10, 3, dtype=torch.double)
    # alpha = beta = 0: every attention layer is softmax(Q K^T / sqrt(d_head)) V W^O, nothing is carried.
    for mha, inputs, prev_logits, output, logits in _attention_calls(_encoder(alpha=0.0, beta=0.0), x):
        assert mha.evolution is None and prev_logits is None and logits is None
        v, s = _heads(mha, inputs)
        torch.testing.assert_close(output, _attend(mha, s, v))
    # alpha, beta > 0: each layer's map evolves from the previous attention layer's logits (Eq. 1).
    enc = _encoder(alpha=0.7, beta=0.4)
    _check_evolving_chain(enc, x)
    # The check sees a cut chain: every layer given no previous map.
    forward = DCTransformerLayer.forward
    cut = lambda layer, h, valid, prev_logits: forward(layer, h, valid, None)  # noqa: E731
    with mock.patch.object(DCTransformerLayer, "forward", cut), pytest.raises(AssertionError):
        _check_evolving_chain(enc, x)


def test_causal_dilated_conv_sees_no_future():
    conv = CausalDilatedConv1d(2, 3, kernel_size=3, dilation=4).double()
    x = torch.randn(1, 2, 30, dtype=torch.double)
    y = conv(x)
    x2 = x.clone()
    x2[..., 20:] += 1.0
    torch.testing.assert_close(conv(x2)[..., :20], y[..., :20])
    assert not torch.allclose(conv(x2)[..., 20:], y[..., 20:])
    assert hasattr(conv.conv, "parametrizations")  # weight-normed


def test_masked_batchnorm_statistics_skip_padding():
    torch.manual_seed(0)
    bn = MaskedBatchNorm1d(4).double()
    ref = torch.nn.BatchNorm1d(4).double()
    x = torch.randn(3, 9, 4, dtype=torch.double)
    valid = torch.ones(3, 9, dtype=torch.bool)
    valid[1, 5:] = False
    valid[2, 2:] = False
    x = x.masked_fill(~valid[..., None], 1000.0)  # huge padding must not leak into the statistics
    out = bn(x, valid)
    torch.testing.assert_close(out[valid], ref(x[valid]))
    torch.testing.assert_close(bn.running_mean, ref.running_mean)
    torch.testing.assert_close(bn.running_var, ref.running_var)


@pytest.mark.parametrize(
    "kw,match",
    [
        (dict(p=1.5), "The 'p' parameter of DCTransformerConfig must be"),
        (dict(p=-0.1), "The 'p' parameter of DCTransformerConfig must be"),
        (dict(n_heads=3), "n_heads"),
        (dict(alpha=1.2), "alpha"),
        (dict(beta=-0.5), "beta"),
        (dict(attn_kernel_size=2), "attn_kernel_size"),
        (dict(p=0.01), "no attention channel"),
    ],
)
def test_bad_hyperparameters_name_the_problem(kw, match):
    with pytest.raises(ValueError, match=match):
        _encoder(**kw)


def test_a_keyword_the_config_does_not_hold_is_refused_not_dropped():
    with pytest.raises(TypeError, match=r"unexpected keyword argument\(s\) \['deacon_settings'\]"):
        DCTransformerEncoder(2, 8, d_model=8, n_heads=2, p=1.0, head_mixing="deacon-direct",
                             deacon_settings={"deacon_dp": 0.1})
