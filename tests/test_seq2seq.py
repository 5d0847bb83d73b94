"""Seq2seq convolution masks (paper 002, Sec. 3.1, Figure 3) and the encoder-decoder EA-Transformer."""

import pytest
import torch
import torch.nn.functional as F

from tsrep.backbones.seq2seq import EATransformerSeq2Seq
from tsrep.nn.attention import MultiHeadAttention
from tsrep.nn.evolving import AttentionMapEvolution


def _map_jacobian(evo: AttentionMapEvolution, n_rows: int, n_cols: int) -> torch.Tensor:
    """d out[k, i, j] / d in[k', r, c] of the map evolution, shape (K, M, N, K, M, N)."""
    a = torch.randn(1, evo.n_heads, n_rows, n_cols, dtype=torch.double)
    jac = torch.autograd.functional.jacobian(lambda t: evo(t), a)
    return jac[0, :, :, :, 0]


def test_causal_map_convolution_equals_the_papers_masked_kernel_and_shift():
    """Paper: (1) standard 3x3 convolution with the upper-right corner of the kernel masked,
    (2) shift the whole map one pixel down and one pixel right."""
    torch.manual_seed(0)
    evo = AttentionMapEvolution(3, alpha=0.0, beta=1.0, kernel_size=3, conv_mask="causal").double()
    a = torch.randn(2, 3, 7, 7, dtype=torch.double)
    ours = evo(a)
    masked = evo.conv.weight * torch.tensor([[1.0, 0, 0], [1, 1, 0], [1, 1, 1]], dtype=torch.double)
    standard = F.conv2d(a, masked, evo.conv.bias, padding=1)
    shifted = torch.relu(standard[..., :-1, :-1])  # value of (i - 1, j - 1) lands on (i, j)
    torch.testing.assert_close(ours[..., 1:, 1:], shifted)


def test_causal_map_convolution_reads_no_later_query_or_key():
    torch.manual_seed(1)
    evo = AttentionMapEvolution(2, alpha=0.0, beta=0.7, kernel_size=3, conv_mask="causal").double()
    n = 6
    jac = _map_jacobian(evo, n, n).abs().sum((0, 3))  # (i, j, r, c)
    i, j, r, c = torch.meshgrid(*(torch.arange(n),) * 4, indexing="ij")
    future = (r > i) | (c > j)
    assert jac[future].max() == 0
    # On or below the diagonal (j <= i) only cells on or below the diagonal are read: the cells
    # above it are masked keys, "not calculated" in the paper's words.
    assert jac[(j <= i) & (c > r)].max() == 0
    # And the receptive field is the paper's 6 pixels (3x3 minus the masked corner).
    interior = jac[4, 3] != 0
    assert int(interior.sum()) == 6


def test_cross_map_convolution_keeps_query_rows_apart():
    torch.manual_seed(2)
    evo = AttentionMapEvolution(2, alpha=0.0, beta=0.5, kernel_size=3, conv_mask="cross").double()
    jac = _map_jacobian(evo, 4, 7).abs().sum((0, 3))  # (i, j, r, c)
    i, j, r, c = torch.meshgrid(torch.arange(4), torch.arange(7), torch.arange(4), torch.arange(7), indexing="ij")
    assert jac[r != i].max() == 0
    assert jac[(r == i) & ((c - j).abs() == 1)].sum() > 0  # neighbouring keys of the same query are mixed
    assert jac[(c - j).abs() > 1].max() == 0


def test_unknown_conv_mask_is_named():
    with pytest.raises(ValueError, match="conv_mask"):
        AttentionMapEvolution(2, 0.5, 0.5, conv_mask="diagonal")


def _model(**kwargs):
    settings = {"d_model": 32, "n_heads": 4, "n_encoder_layers": 2, "n_decoder_layers": 2, "dropout": 0.0,
                "max_len": 16, "alpha": 0.5, "beta": 0.5, **kwargs}
    return EATransformerSeq2Seq(11, 13, **settings).double().eval()


@pytest.mark.parametrize("decoder_alpha", [0.0, 0.6])
def test_decoder_output_at_t_ignores_every_later_target_token(decoder_alpha):
    torch.manual_seed(3)
    model = _model(decoder_alpha=decoder_alpha)
    src = torch.randint(0, 11, (2, 9))
    tgt = torch.randint(0, 13, (2, 8))
    # Perturbation: change every token after t and compare outputs up to t.
    base = model(src, tgt)
    for t in range(7):
        changed = tgt.clone()
        changed[:, t + 1 :] = (changed[:, t + 1 :] + 1 + torch.randint(0, 11, changed[:, t + 1 :].shape)) % 13
        torch.testing.assert_close(model(src, changed)[:, : t + 1], base[:, : t + 1], rtol=0, atol=1e-12)
        assert not torch.allclose(model(src, changed)[:, t + 1 :], base[:, t + 1 :])
    # Gradients: output at t has no gradient path to the embedding input of later positions.
    emb = model.tgt_embedding(tgt).detach().requires_grad_(True)
    original = model.tgt_embedding.forward
    model.tgt_embedding.forward = lambda tokens: emb
    try:
        out = model(src, tgt)
    finally:
        model.tgt_embedding.forward = original
    for t in range(7):
        (grad,) = torch.autograd.grad(out[:, t].sum(), emb, retain_graph=True)
        assert grad[:, t + 1 :].abs().max() == 0
        assert grad[:, : t + 1].abs().sum() > 0


def test_padded_batch_matches_each_pair_alone():
    torch.manual_seed(4)
    model = _model(decoder_alpha=0.3)
    src = [torch.randint(0, 11, (n,)) for n in (9, 5)]
    tgt = [torch.randint(0, 13, (m,)) for m in (4, 7)]
    pad_src = torch.zeros(2, 9, dtype=torch.long)
    pad_tgt = torch.zeros(2, 7, dtype=torch.long)
    src_valid = torch.zeros(2, 9, dtype=torch.bool)
    tgt_valid = torch.zeros(2, 7, dtype=torch.bool)
    for b in range(2):
        pad_src[b, : len(src[b])] = src[b]
        pad_tgt[b, : len(tgt[b])] = tgt[b]
        src_valid[b, : len(src[b])] = True
        tgt_valid[b, : len(tgt[b])] = True
    batched = model(pad_src, pad_tgt, src_valid, tgt_valid)
    for b in range(2):
        alone = model(src[b][None], tgt[b][None])
        torch.testing.assert_close(batched[b, : len(tgt[b])], alone[0], rtol=0, atol=1e-10)


def test_plain_settings_build_no_map_convolution_and_ea_adds_only_convolutions():
    plain = _model(alpha=0.0, beta=0.0)
    ea = _model()
    assert not any(m.is_evolving for m in plain.modules() if isinstance(m, MultiHeadAttention))
    extra = sum(p.numel() for p in ea.parameters()) - sum(p.numel() for p in plain.parameters())
    k = 4
    # encoder and decoder self-attention: k x k x 3 x 3 (+ bias); encoder-decoder: k x k x 1 x 3 (+ bias)
    assert extra == 2 * (k * k * 9 + k) + 2 * (k * k * 9 + k) + 2 * (k * k * 3 + k)


def test_learns_to_reverse_sequences():
    """A real (if synthetic) seq2seq task: greedy decoding of reversed digit strings."""
    gen = torch.Generator().manual_seed(0)
    torch.manual_seed(0)
    bos, n = 10, 6
    model = EATransformerSeq2Seq(10, 11, d_model=32, n_heads=4, n_encoder_layers=2, n_decoder_layers=2,
                                 dropout=0.0, max_len=8)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(400):
        src = torch.randint(0, 10, (64, n), generator=gen)
        target = src.flip(1)
        tgt_in = torch.cat([torch.full((64, 1), bos), target[:, :-1]], dim=1)
        loss = F.cross_entropy(model(src, tgt_in).transpose(1, 2), target)
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    src = torch.randint(0, 10, (200, n), generator=gen)
    decoded = model.generate(src, bos, n)[:, 1:]
    token_accuracy = float((decoded == src.flip(1)).float().mean())
    assert token_accuracy > 0.9, token_accuracy


def test_bad_inputs_are_named():
    model = _model()
    src = torch.randint(0, 11, (1, 5))
    with pytest.raises(ValueError, match="tgt has 17 positions.*max_len=16"):
        model(src, torch.zeros(1, 17, dtype=torch.long))
    with pytest.raises(ValueError, match="src has 20 positions"):
        model(torch.zeros(1, 20, dtype=torch.long), torch.zeros(1, 3, dtype=torch.long))
    with pytest.raises(ValueError, match="token ids outside"):
        model(src, torch.full((1, 3), 13))
    with pytest.raises(ValueError, match=r"\(batch, length\)"):
        model(src, torch.zeros(3))
    with pytest.raises(ValueError, match="tgt_valid must be a bool tensor"):
        model(src, torch.zeros(1, 3, dtype=torch.long), tgt_valid=torch.ones(1, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match="src_valid must mark the first position"):
        model(src, torch.zeros(1, 3, dtype=torch.long), src_valid=torch.zeros(1, 5, dtype=torch.bool))
    with pytest.raises(ValueError, match="memory must be"):
        model.decode(torch.zeros(1, 3, dtype=torch.long), torch.zeros(1, 5, 7))
    with pytest.raises(ValueError, match="decoder_alpha"):
        _model(decoder_alpha=1.5)
    with pytest.raises(ValueError, match="n_heads"):
        _model(n_heads=5)
