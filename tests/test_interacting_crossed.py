"""Interacting-head attention (paper 003) and crossed co-attention (paper 004) against slow references."""

import math
import warnings

import numpy as np
import pytest
import torch

from tsrep import EADCTransformerClassifier, EADCTransformerRegressor
from tsrep.backbones import DCTransformerEncoder
from tsrep.nn import MultiHeadAttention
from tsrep.nn.attention_kinds import ATTENTION_KINDS, build_attention
from tsrep.nn.crossed import CrossedCoAttention, corrupt_series
from tsrep.nn.interacting import check_interacting_heads, max_interacting_heads

TINY = EADCTransformerClassifier._get_test_params()


# ----------------------------------------------------------------------------- interacting heads
def reference_evolution(s, prev, valid, conv, alpha, beta):
    """Eq. 1 written out: A_in = alpha A_prev + (1 - alpha) S, then beta ReLU(Conv2d(A_in)) + (1 - beta) A_in,
    every padded row and column zero before the convolution and after; conv gives only its weights."""
    a_in = s if prev is None else alpha * prev + (1 - alpha) * s
    keep = torch.ones_like(a_in)
    if valid is not None:
        pair = valid[:, :, None] & valid[:, None, :]
        keep = pair[:, None].to(a_in.dtype).expand_as(a_in)
    a_in = a_in * keep
    k = conv.weight.shape[-1]
    out = torch.zeros_like(a_in)
    padded = torch.nn.functional.pad(a_in, (k // 2,) * 4)
    n = a_in.shape[-1]
    for o in range(a_in.shape[1]):  # each output head: bias + the k x k taps over every input head
        acc = conv.bias[o] + torch.zeros_like(a_in[:, 0])
        for i in range(a_in.shape[1]):
            for dy in range(k):
                for dx in range(k):
                    acc = acc + conv.weight[o, i, dy, dx] * padded[:, i, dy : dy + n, dx : dx + n]
        out[:, o] = acc
    return (beta * torch.relu(out) + (1 - beta) * a_in) * keep


def reference_interacting(x, mha, valid, prev, mode):
    """Eq. 11-12 (pairs) or Algorithm 1 (summed) with explicit loops over query and key heads."""
    q, k, v = mha.qkv(x).chunk(3, dim=-1)
    h, dh = mha.n_heads, mha.head_dim
    head = lambda t, i: t[..., i * dh : (i + 1) * dh]  # noqa: E731
    if mode == "pairs":
        logits = [head(q, i) @ head(k, j).transpose(-2, -1) / math.sqrt(dh) for i in range(h) for j in range(h)]
        values = [head(v, j) for i in range(h) for j in range(h)]  # map i*h + j attends to V_j
    else:
        logits = []
        for j in range(h):
            a_j = 0
            for i in range(h):
                a_j = a_j + head(q, i) @ head(k, j).transpose(-2, -1) / math.sqrt(dh)
            logits.append(a_j)
        values = [head(v, j) for j in range(h)]
    logits = torch.stack(logits, dim=1)
    if mha.evolution is not None:
        logits = reference_evolution(logits, prev, valid, mha.evolution.conv, mha.evolution.alpha, mha.evolution.beta)
    outs = []
    for c in range(logits.shape[1]):
        scores = logits[:, c]
        if valid is not None:
            scores = scores.masked_fill(~valid[:, None, :], float("-inf"))
        outs.append(torch.softmax(scores, -1) @ values[c])
    # pairs: O_i = concat_j O_ij, O = concat_i O_i (c = i*h + j); summed: concat_j O_j
    return mha.out(torch.cat(outs, -1)), logits


@pytest.mark.parametrize("mode", ["pairs", "summed"])
@pytest.mark.parametrize("alpha,beta", [(0.0, 0.0), (0.5, 0.5)])
def test_interacting_attention_matches_loop_reference_forward_and_backward(mode, alpha, beta):
    torch.manual_seed(0)
    mha = MultiHeadAttention(5, 6, 3, alpha=alpha, beta=beta, interacting=mode).double().eval()
    x = torch.randn(2, 7, 5, dtype=torch.double, requires_grad=True)
    valid = torch.ones(2, 7, dtype=torch.bool)
    valid[1, 4:] = False
    n_maps = 9 if mode == "pairs" else 3
    prev = torch.randn(2, n_maps, 7, 7, dtype=torch.double, requires_grad=True) if alpha > 0 else None
    out, logits = mha(x, valid, prev, need_logits=True)
    ref_out, ref_logits = reference_interacting(x, mha, valid, prev, mode)
    torch.testing.assert_close(out, ref_out)
    torch.testing.assert_close(logits, ref_logits)
    g = torch.randn_like(out)
    inputs = [x] + list(mha.parameters()) + ([prev] if prev is not None else [])
    got = torch.autograd.grad((out * g).sum(), inputs)
    want = torch.autograd.grad((ref_out * g).sum(), inputs)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b)
    if alpha == beta == 0:  # the fused path agrees with the explicit one
        fused, none = mha(x, valid)
        assert none is None
        torch.testing.assert_close(fused, out)


def test_interacting_pairs_widen_the_output_projection_and_evolve_over_h_squared_channels():
    mha = MultiHeadAttention(8, 8, 4, alpha=0.5, beta=0.5, interacting="pairs")
    assert mha.out.in_features == 4 * 4 * 2  # h*h*d_v -> d
    assert mha.evolution.conv.in_channels == mha.evolution.conv.out_channels == 16
    summed = MultiHeadAttention(8, 8, 4, alpha=0.5, beta=0.5, interacting="summed")
    assert summed.out.in_features == 8 and summed.evolution.conv.in_channels == 4


def test_head_count_rule_eq_13_says_so_rather_than_clamping():
    assert max_interacting_heads(64, 20) == 3
    assert max_interacting_heads(16, 15.2) == 1
    assert max_interacting_heads(16, 84) == 0  # d < n: the series is longer than the width
    with pytest.warns(UserWarning, match="h_max"):
        assert check_interacting_heads(4, 16, 15.2) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert check_interacting_heads(1, 16, 84) == 0  # one head is the least there is: no warning
        assert check_interacting_heads(3, 64, 20) == 3
    X = np.random.default_rng(0).normal(size=(12, 2, 10))
    with pytest.warns(UserWarning, match="h_max"):
        clf = EADCTransformerClassifier(**{**TINY, "attention": "interacting"}).fit(X, np.array([0, 1] * 6))
    assert clf.module_.encoder.blocks[0].layers[0].attention.n_heads == TINY["n_heads"]  # not clamped


@pytest.mark.parametrize("front_end", [dict(patch_len=16), dict(patch_len=32, patch_stride=16), dict(downsample=16)])
def test_head_count_rule_counts_tokens_with_a_patch_or_downsample_front_end(front_end):
    """With tokens of stride 16, series of 64 and 40 steps are 4 and 3 tokens: Eq. 13's n is 3.5, not 52."""
    rng = np.random.default_rng(0)
    X = [rng.normal(size=(2, 64 if i % 2 else 40)) for i in range(8)]
    params = {**TINY, "attention": "interacting", "d_model": 64, "p": 0.5, "patch_len": None, **front_end}
    with pytest.warns(UserWarning, match=r"h_max = d / n = 32 / 3\.5 = 9\.14 -> 9"):
        EADCTransformerClassifier(**{**params, "n_heads": 16}).fit(X, np.array([0, 1] * 4))
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # 8 heads <= h_max = 9: nothing to say
        EADCTransformerClassifier(**{**params, "n_heads": 8}).fit(X, np.array([0, 1] * 4))
    with pytest.warns(UserWarning, match=r"h_max = d / n = 32 / 52\.0"):  # one token per step
        EADCTransformerClassifier(**{**params, **dict.fromkeys(front_end), "n_heads": 8}).fit(X, np.array([0, 1] * 4))


# ----------------------------------------------------------------------------- crossed co-attention
def _crossed(**kw):
    torch.manual_seed(0)
    return CrossedCoAttention(5, 8, 2, **kw).double()


def test_crossed_branches_take_queries_from_the_other_branch():
    cca = _crossed().eval()
    xl, xr = torch.randn(2, 6, 5, dtype=torch.double), torch.randn(2, 6, 5, dtype=torch.double)
    left, right, _ = cca.forward_pair(xl, xr)

    def ref(branch, x_q, x_kv):
        q, _, _ = branch.qkv(x_q).chunk(3, -1)
        _, k, v = branch.qkv(x_kv).chunk(3, -1)
        heads = []
        for i in range(branch.n_heads):
            s = slice(i * branch.head_dim, (i + 1) * branch.head_dim)
            a = torch.softmax(q[..., s] @ k[..., s].transpose(-2, -1) / math.sqrt(branch.head_dim), -1)
            heads.append(a @ v[..., s])
        return branch.out(torch.cat(heads, -1))

    torch.testing.assert_close(left, ref(cca.left, xr, xl))  # left: Q from right, K, V from left
    torch.testing.assert_close(right, ref(cca.right, xl, xr))  # right: Q from left, K, V from right
    # One input (eval: no corruption): both branches read it, and their outputs are concatenated and projected.
    out, _ = cca(xl)
    torch.testing.assert_close(out, cca.proj(torch.cat([ref(cca.left, xl, xl), ref(cca.right, xl, xl)], -1)))


@pytest.mark.parametrize("alpha,beta", [(0.0, 0.0), (0.5, 0.5)])
def test_crossed_swapped_inputs_swap_outputs(alpha, beta):
    cca = _crossed(alpha=alpha, beta=beta).eval()
    cca.right.load_state_dict(cca.left.state_dict())  # the two branches are the same function
    xl, xr = torch.randn(2, 6, 5, dtype=torch.double), torch.randn(2, 6, 5, dtype=torch.double)
    valid = torch.ones(2, 6, dtype=torch.bool)
    valid[0, 4:] = False
    prev_l, prev_r = torch.randn(2, 2, 6, 6, dtype=torch.double), torch.randn(2, 2, 6, 6, dtype=torch.double)
    prev, swapped_prev = (torch.cat([prev_l, prev_r], 1), torch.cat([prev_r, prev_l], 1)) if alpha > 0 else (None, None)
    left, right, logits = cca.forward_pair(xl, xr, valid, prev, need_logits=True)
    left2, right2, logits2 = cca.forward_pair(xr, xl, valid, swapped_prev, need_logits=True)
    torch.testing.assert_close(left2, right)
    torch.testing.assert_close(right2, left)
    torch.testing.assert_close(logits2, torch.cat(logits.chunk(2, 1)[::-1], 1))


def test_crossed_corrupts_the_two_inputs_independently_in_training_only():
    torch.manual_seed(0)
    cca = CrossedCoAttention(3, 4, 2, input_dropout=0.0, corruption="swap", corruption_prob=1.0)
    x = torch.randn(8, 10, 3)
    valid = torch.ones(8, 10, dtype=torch.bool)
    valid[:, 7:] = False
    xl, xr = cca.train().branch_inputs(x, valid)
    assert not torch.equal(xl, xr) and not torch.equal(xl, x)
    for c in (xl, xr):  # each series: exactly two adjacent valid steps changed places
        torch.testing.assert_close(c[:, 7:], x[:, 7:])
        for b in range(8):
            moved = (c[b] != x[b]).any(1).nonzero().flatten().tolist()
            assert len(moved) == 2 and moved[1] == moved[0] + 1 and moved[1] < 7
            torch.testing.assert_close(c[b, moved[::-1]], x[b, moved])
    ev = cca.eval().branch_inputs(x, valid)
    assert ev[0] is x and ev[1] is x
    masked = corrupt_series(x, valid, "mask", prob=1.0, mask_fraction=0.3)
    zeroed = (masked == 0).all(2)
    assert (zeroed.sum(1) == 3).all() and not zeroed[:, 7:].any()


def test_crossed_doubles_the_attention_parameters_and_carries_both_branches_maps():
    count = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    single = MultiHeadAttention(5, 8, 2, alpha=0.5, beta=0.5)
    cca = CrossedCoAttention(5, 8, 2, alpha=0.5, beta=0.5)
    assert count(cca) == 2 * count(single) + (2 * 8 * 8 + 8)
    out, logits = cca.eval()(torch.randn(3, 6, 5))
    assert out.shape == (3, 6, 8) and logits.shape == (3, 4, 6, 6)


# ----------------------------------------------------------------------------- the backbone and estimators
@pytest.mark.parametrize("attention", ["interacting", "interacting-summed", "crossed"])
def test_padded_batch_matches_each_series_alone(attention):
    torch.manual_seed(0)
    enc = DCTransformerEncoder(3, 12, d_model=16, n_blocks=2, n_heads=2, p=0.5, attention=attention).double().eval()
    series = [torch.randn(n, 3, dtype=torch.double) for n in (12, 8, 5)]
    batch = torch.zeros(3, 12, 3, dtype=torch.double)
    valid = torch.zeros(3, 12, dtype=torch.bool)
    for i, s in enumerate(series):
        batch[i, : len(s)], valid[i, : len(s)] = s, True
    out = enc(batch, valid)
    for i, s in enumerate(series):
        torch.testing.assert_close(out[i, : len(s)], enc(s[None])[0], atol=1e-10, rtol=1e-8)


def test_vanilla_ignores_alpha_beta_and_builds_no_evolution():
    enc = DCTransformerEncoder(3, 12, d_model=16, n_blocks=1, n_heads=2, p=0.5, alpha=0.7, beta=0.7, attention="vanilla")
    plain = DCTransformerEncoder(3, 12, d_model=16, n_blocks=1, n_heads=2, p=0.5, alpha=0.0, beta=0.0)
    assert all(not layer.attention.is_evolving for block in enc.blocks for layer in block.layers)
    assert sum(p.numel() for p in enc.parameters()) == sum(p.numel() for p in plain.parameters())


@pytest.mark.parametrize(
    "kw",
    [
        dict(attention="interacting"),
        dict(attention="interacting-summed", alpha=0.0, beta=0.0),
        dict(attention="crossed"),
        dict(attention="vanilla"),
        dict(attention="interacting", head_mixing="deacon-average", deacon_m=3),
        dict(attention="crossed", head_mixing="deacon-direct", deacon_m=1),
    ],
)
def test_each_variant_fits_and_predicts_finite_values(kw):
    X = np.random.default_rng(0).normal(size=(16, 2, 10))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # Eq. 13's head-count warning
        reg = EADCTransformerRegressor(**{**TINY, **kw}).fit(X, X[:, 0].mean(1))
    assert np.isfinite(reg.predict(X)).all() and all(np.isfinite(reg.history_.train_loss))


@pytest.mark.parametrize(
    "kw,match",
    [
        (dict(attention="talking-heads"), "attention must be one of"),
        (dict(attention=None), "attention must be one of"),
        (dict(attention="interacting", n_heads=3), "n_heads"),  # does not divide the width 4
        (dict(attention="crossed", n_heads=3), "n_heads"),
        (dict(attention="interacting", p=0.0), "attention='interacting' needs an attention branch"),
        (dict(attention="crossed", p=0.0), "attention='crossed' needs an attention branch"),
    ],
)
def test_bad_attention_parameters_raise_clear_errors(kw, match):
    X = np.random.default_rng(0).normal(size=(10, 2, 8))
    with pytest.raises(ValueError, match=match):
        EADCTransformerClassifier(**{**TINY, **kw}).fit(X, np.array([0, 1] * 5))
    with pytest.raises(ValueError, match=match):
        DCTransformerEncoder(2, 8, **{k: v for k, v in {**TINY, **kw}.items() if k in ("d_model", "n_blocks", "n_heads", "p", "attention")})


def test_every_kind_is_built_by_name():
    for kind in ATTENTION_KINDS:
        module = build_attention(kind, 6, 8, 2, 0.5, 0.5, 3, 0.0)
        out, _ = module.eval()(torch.randn(2, 5, 6))
        assert out.shape == (2, 5, 8)
