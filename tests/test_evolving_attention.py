"""The evolving-attention step and the attention module against slow references written from Eq. 1."""

import math

import pytest
import torch

from tsrep.nn import AttentionMapEvolution, MultiHeadAttention


def reference_evolution(logits, prev, weight, bias, alpha, beta):
    """Eq. 1 with explicit loops: A_in = a*prev + (1-a)*S; A_logit = b*ReLU(conv(A_in)) + (1-b)*A_in."""
    b_, k_, n, _ = logits.shape
    ks = weight.shape[-1]
    r = ks // 2
    a_in = logits if prev is None else alpha * prev + (1 - alpha) * logits
    out = torch.zeros_like(a_in)
    for b in range(b_):
        for ko in range(k_):
            for i in range(n):
                for j in range(n):
                    acc = bias[ko]
                    for ki in range(k_):
                        for di in range(ks):
                            for dj in range(ks):
                                ii, jj = i + di - r, j + dj - r
                                if 0 <= ii < n and 0 <= jj < n:  # zero padding of the k x k convolution
                                    acc = acc + weight[ko, ki, di, dj] * a_in[b, ki, ii, jj]
                    out[b, ko, i, j] = beta * torch.relu(acc) + (1 - beta) * a_in[b, ko, i, j]
    return out


@pytest.mark.parametrize("alpha,beta,ks,first", [(0.3, 0.7, 3, False), (0.9, 0.1, 1, False), (0.5, 0.5, 5, True)])
def test_evolution_matches_loop_reference_forward_and_backward(alpha, beta, ks, first):
    torch.manual_seed(0)
    evo = AttentionMapEvolution(n_heads=3, alpha=alpha, beta=beta, kernel_size=ks).double()
    s = torch.randn(2, 3, 6, 6, dtype=torch.double, requires_grad=True)
    prev = None if first else torch.randn(2, 3, 6, 6, dtype=torch.double, requires_grad=True)
    out = evo(s, prev)
    ref = reference_evolution(s, prev, evo.conv.weight, evo.conv.bias, alpha, beta)
    torch.testing.assert_close(out, ref)
    g = torch.randn_like(out)
    inputs = [s, evo.conv.weight, evo.conv.bias] + ([] if first else [prev])
    got = torch.autograd.grad((out * g).sum(), inputs)
    want = torch.autograd.grad((ref * g).sum(), inputs)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b)


def test_first_layer_has_no_predecessor_and_zero_weights_are_identity():
    s = torch.randn(1, 2, 5, 5)
    evo = AttentionMapEvolution(2, alpha=0.7, beta=0.0)
    assert evo.conv is None  # beta = 0 builds no convolution
    torch.testing.assert_close(evo(s, None), s)
    prev = torch.randn_like(s)
    torch.testing.assert_close(evo(s, prev), 0.7 * prev + 0.3 * s)


@pytest.mark.parametrize("name,value", [("alpha", -0.1), ("alpha", 1.5), ("beta", 2.0)])
def test_evolution_rejects_weights_outside_unit_interval(name, value):
    kwargs = {"alpha": 0.5, "beta": 0.5, name: value}
    with pytest.raises(ValueError, match=name):
        AttentionMapEvolution(2, **kwargs)


def test_padded_rows_and_columns_are_zero_and_finite():
    torch.manual_seed(0)
    evo = AttentionMapEvolution(2, alpha=0.5, beta=0.5)
    valid = torch.tensor([[True] * 4 + [False] * 2])
    out = evo(torch.randn(1, 2, 6, 6), torch.randn(1, 2, 6, 6), valid)
    assert torch.isfinite(out).all()
    assert (out[..., 4:, :] == 0).all() and (out[..., :, 4:] == 0).all()


def reference_attention(x, mha, valid, prev):
    """Loop over heads: softmax(evolve(Q K^T / sqrt(d_head)) masked over keys) V, then W^O."""
    q, k, v = mha.qkv(x).chunk(3, dim=-1)
    h, dh = mha.n_heads, mha.head_dim
    logits = torch.stack(
        [q[..., i * dh : (i + 1) * dh] @ k[..., i * dh : (i + 1) * dh].transpose(-2, -1) / math.sqrt(dh) for i in range(h)],
        dim=1,
    )
    if mha.evolution is not None:
        logits = mha.evolution(logits, prev, valid)
    heads = []
    for i in range(h):
        scores = logits[:, i]
        if valid is not None:
            scores = scores.masked_fill(~valid[:, None, :], float("-inf"))
        heads.append(torch.softmax(scores, -1) @ v[..., i * dh : (i + 1) * dh])
    return mha.out(torch.cat(heads, -1)), logits


def _attention_case(alpha, beta):
    """A 4-head attention (5 -> 8) in eval mode, two series of 7 and 5 steps, a previous map when alpha > 0."""
    torch.manual_seed(0)
    mha = MultiHeadAttention(5, 8, 4, alpha=alpha, beta=beta).double().eval()
    x = torch.randn(2, 7, 5, dtype=torch.double)
    valid = torch.ones(2, 7, dtype=torch.bool)
    valid[1, 5:] = False
    prev = torch.randn(2, 4, 7, 7, dtype=torch.double) if alpha > 0 else None
    return mha, x, valid, prev


@pytest.mark.parametrize("alpha,beta", [(0.0, 0.0), (0.5, 0.5)])
def test_attention_matches_per_head_reference(alpha, beta):
    mha, x, valid, prev = _attention_case(alpha, beta)
    out, logits = mha(x, valid, prev, need_logits=True)
    ref_out, ref_logits = reference_attention(x, mha, valid, prev)
    torch.testing.assert_close(out, ref_out)
    torch.testing.assert_close(logits, ref_logits)
    # The fused path used for plain attention agrees with the explicit one.
    if alpha == beta == 0:
        fused, none = mha(x, valid)
        assert none is None
        torch.testing.assert_close(fused, out)


@pytest.mark.parametrize("alpha,beta", [(0.0, 0.0), (0.5, 0.5)])
@pytest.mark.parametrize("kind", ["tensor", "callable"])
def test_attention_adds_a_logit_bias_to_s_before_evolution_and_softmax(alpha, beta, kind):
    """logit_bias is part of S in Eq. 1: softmax(evolve(Q K^T / sqrt(d_head) + bias)) V W^O; a callable gets
    the scaled queries (for query-dependent terms such as relative-position logits)."""
    mha, x, valid, prev = _attention_case(alpha, beta)
    q, k, v = mha.qkv(x).view(2, 7, 3, 4, 2).permute(2, 0, 3, 1, 4)  # (B, K, N, d_head) each
    table = torch.randn(7, 2, dtype=torch.double)
    if kind == "callable":
        logit_bias, bias = (lambda scaled: scaled @ table.T), q / math.sqrt(2) @ table.T  # noqa: E731
    else:
        logit_bias = bias = torch.randn(1, 4, 7, 7, dtype=torch.double)
    out, logits = mha(x, valid, prev, need_logits=True, logit_bias=logit_bias)
    want_logits = q @ k.transpose(-2, -1) / math.sqrt(2) + bias
    if mha.evolution is not None:
        want_logits = mha.evolution(want_logits, prev, valid)
    torch.testing.assert_close(logits, want_logits)
    heads = torch.softmax(want_logits.masked_fill(~valid[:, None, None, :], float("-inf")), -1) @ v
    torch.testing.assert_close(out, mha.out(heads.transpose(1, 2).reshape(2, 7, 8)))
    if alpha == beta == 0:  # the fused kernel takes the bias as a float mask
        torch.testing.assert_close(mha(x, valid, logit_bias=logit_bias)[0], out)


def test_attention_rejects_heads_not_dividing_width():
    with pytest.raises(ValueError, match="n_heads"):
        MultiHeadAttention(8, 12, 5)
