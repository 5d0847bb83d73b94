"""DEACON (paper 001): the PCA layer over heads, its constrained update and the GHA inner loop."""

import math
from unittest import mock

import numpy as np
import pytest
import torch

from tsrep import EADCTransformerClassifier, EADCTransformerRegressor
from tsrep.backbones import DCTransformerEncoder, SeriesModel
from tsrep.nn import MultiHeadAttention
from tsrep.nn.deacon import DeaconHeadMixing, PCALayer, max_deacon_m, polynomial_features
from tsrep.training import SeriesBatchData, TrainConfig, train_supervised
from tsrep.training.deacon import (
    DeaconOptimizer,
    OptimizerWithDeacon,
    deacon_step,
    gha_steps,
    pca_layers,
    sanger_update,
    tangent,
    unit_rows,
    with_deacon,
)

TINY = EADCTransformerClassifier._get_test_params()


# ----------------------------------------------------------------------------- the constrained step
@pytest.mark.parametrize("dP,xi", [(0.2, 0.8), (0.05, 0.5), (1.3, 0.95)])
def test_one_step_has_norm_dP_and_decreases_the_loss_by_dQ(dP, xi):
    gen = torch.Generator().manual_seed(0)
    G = torch.randn(3, 5, dtype=torch.double, generator=gen)
    F = torch.randn(3, 5, dtype=torch.double, generator=gen)
    dW = deacon_step(G, F, dP, xi)
    dQ = -xi * dP * G.norm()
    torch.testing.assert_close(dW.norm(), torch.tensor(dP, dtype=torch.double), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close((G * dW).sum(), dQ, rtol=1e-12, atol=1e-12)
    assert dQ < 0
    # Among steps with those two properties dW is the one most aligned with F: its part orthogonal
    # to G points along F's part orthogonal to G.
    g = G / G.norm()
    perp_dw = dW - (dW * g).sum() * g
    perp_f = F - (F * g).sum() * g
    cos = (perp_dw * perp_f).sum() / (perp_dw.norm() * perp_f.norm())
    torch.testing.assert_close(cos, torch.tensor(1.0, dtype=torch.double))
    # ... and more aligned with F than any other feasible step (random ones on the same circle).
    radius = perp_dw.norm()
    for _ in range(20):
        r = torch.randn(3, 5, dtype=torch.double, generator=gen)
        r = r - (r * g).sum() * g
        other = (dW * g).sum() * g + radius * r / r.norm()
        assert (other * F).sum() <= (dW * F).sum() + 1e-12


def test_degenerate_cases_fall_back_cleanly():
    G = torch.randn(2, 4, dtype=torch.double)
    F = torch.randn(2, 4, dtype=torch.double)
    zero = torch.zeros(2, 4, dtype=torch.double)
    torch.testing.assert_close(deacon_step(G, zero, 0.2, 0.8), -0.2 * G / G.norm())  # F = 0
    torch.testing.assert_close(deacon_step(G, 3.0 * G, 0.2, 0.8), -0.2 * G / G.norm())  # F parallel to G
    torch.testing.assert_close(deacon_step(G, -2.0 * G, 0.2, 0.8), -0.2 * G / G.norm())
    torch.testing.assert_close(deacon_step(zero, F, 0.2, 0.8), 0.2 * F / F.norm())  # no gradient
    torch.testing.assert_close(deacon_step(zero, zero, 0.2, 0.8), zero)
    for dW in (deacon_step(G, G + 1e-9 * F, 0.2, 0.8), deacon_step(1e-30 * G, F, 0.2, 0.8)):
        assert torch.isfinite(dW).all()


def test_sanger_update_from_the_moment_equals_the_per_row_rule():
    torch.manual_seed(0)
    W = torch.randn(3, 5, dtype=torch.double)
    x = torch.randn(40, 5, dtype=torch.double)
    per_row = torch.stack([torch.outer(W @ r, r) - torch.tril(torch.outer(W @ r, W @ r)) @ W for r in x]).mean(0)
    torch.testing.assert_close(sanger_update(W, x.T @ x / len(x)), per_row)


def _tiny_model(head_mixing="deacon-direct", m=2, **kw):
    torch.manual_seed(0)
    enc = DCTransformerEncoder(
        3, 12, d_model=16, n_blocks=1, n_heads=4, p=0.5, alpha=0.5, beta=0.5,
        head_mixing=head_mixing, deacon_m=m, deacon_inner_steps=0, **kw,
    )
    return SeriesModel(enc, 1, "regression", "mean", 0.0).double()


def test_optimizer_step_on_a_model_meets_both_constraints_and_lowers_the_loss_by_dQ():
    model = _tiny_model(dropout=0.0)
    x = torch.randn(6, 12, 3, dtype=torch.double)
    y = torch.randn(6, 1, dtype=torch.double)
    model.train()  # deterministic without dropout; the BN sits before W, so W does not move it
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    layers = pca_layers(model)
    assert len(layers) == 2
    before = [l.weight.detach().clone() for l in layers]
    grads = [l.weight.grad.clone() for l in layers]
    dP = 1e-4
    opt = DeaconOptimizer(layers, dP=dP)
    opt.step()
    dQ = 0.0
    for l, w0, g, dW in zip(layers, before, grads, opt.last_steps):
        # The step: norm dP, <G, dW> = dQ = -xi dP ||G_t|| (G_t: G without the rows' radial parts), tangent.
        torch.testing.assert_close(dW.norm(), torch.tensor(dP, dtype=torch.double), rtol=1e-9, atol=0)
        torch.testing.assert_close((g * dW).sum(), -0.8 * dP * tangent(g, w0).norm(), rtol=1e-9, atol=0)
        torch.testing.assert_close((dW * w0).sum(1), torch.zeros(len(w0), dtype=torch.double), rtol=0, atol=1e-15)
        # What W did: that step and rows back at length 1, which moves W by O(dP^2) more (plus the rows'
        # float32 rounding of their initial length 1: the model was initialised in float32).
        torch.testing.assert_close(l.weight.detach(), w0 + dW, rtol=0, atol=dP**2 + 1e-7)
        torch.testing.assert_close(l.weight.detach().norm(dim=1), torch.ones(len(w0), dtype=torch.double))
        dQ += float((g * dW).sum())
    assert dQ < 0
    # First order: the loss falls by the sum of the layers' dQ.
    with torch.no_grad():
        new_loss = torch.nn.functional.mse_loss(model(x), y)
    assert abs(float(new_loss - loss.detach()) - dQ) < 1e-2 * abs(dQ)


def test_float32_layer_step_within_float_tolerance():
    model = _tiny_model().float()
    x, y = torch.randn(6, 12, 3), torch.randn(6, 1)
    model.train()
    torch.nn.functional.mse_loss(model(x), y).backward()
    layer = pca_layers(model)[0]
    w0, g = layer.weight.detach().clone(), layer.weight.grad.clone()
    opt = DeaconOptimizer([layer])
    opt.step()
    dW = opt.last_steps[0]
    assert abs(float(dW.norm()) - 0.2) < 1e-5
    g_t = tangent(g.double(), w0.double())
    assert abs(float((g.double() * dW).sum()) - (-0.8 * 0.2 * float(g_t.norm()))) < 1e-5 * float(g.norm())
    assert layer.weight.dtype == torch.float32
    torch.testing.assert_close(layer.weight.detach().norm(dim=1), torch.ones(layer.m))


# ----------------------------------------------------------------------------- GHA-only updates
def _known_covariance(n, eig, gen):
    u, _ = torch.linalg.qr(torch.randn(len(eig), len(eig), dtype=torch.double, generator=gen))
    z = torch.randn(n, len(eig), dtype=torch.double, generator=gen)
    return z * torch.tensor(eig, dtype=torch.double).sqrt() @ u.T, u


def _principal_angles(a, b):
    """Largest principal angle (rad) between the row spaces of a (m, n) and b (m, n)."""
    qa, _ = torch.linalg.qr(a.T)
    qb, _ = torch.linalg.qr(b.T)
    s = torch.linalg.svdvals(qa.T @ qb).clamp(max=1.0)
    return float(torch.arccos(s.min()))


def test_gha_inner_loop_recovers_leading_principal_directions():
    gen = torch.Generator().manual_seed(0)
    eig = [5.0, 3.0, 2.0, 0.5, 0.3, 0.2]
    x, u = _known_covariance(20000, eig, gen)
    layer = PCALayer(6, 3, deacon_inner_steps=1500, gha_lr=0.5).double()
    layer.train()
    layer(x[None])  # records the input moment; no loss, so no gradient: GHA-only updates
    DeaconOptimizer([layer]).step()
    w = layer.weight.detach()
    # The sample moment's own eigenvectors: GHA converges to them (ordered, up to sign).
    evals, evecs = torch.linalg.eigh(layer.input_moment)
    top = evecs[:, evals.argsort(descending=True)[:3]].T
    cos = (w * top).sum(1).abs() / w.norm(dim=1)
    assert cos.min() > 0.999, cos
    torch.testing.assert_close(w.norm(dim=1), torch.ones(3, dtype=torch.double), atol=1e-3, rtol=0)
    # The known covariance: the subspace angle to its leading 3 directions is small.
    assert _principal_angles(w, u[:, :3].T) < 0.05


def test_gha_tracks_principal_directions_over_many_small_batches():
    gen = torch.Generator().manual_seed(1)
    eig = [4.0, 2.0, 1.0, 0.25, 0.1]
    layer = PCALayer(5, 2, deacon_inner_steps=5, gha_lr=0.5).double()
    opt = DeaconOptimizer([layer])
    _, u = _known_covariance(1, eig, torch.Generator().manual_seed(2))
    scale = torch.tensor(eig, dtype=torch.double).sqrt()
    for _ in range(300):
        x = torch.randn(64, 5, dtype=torch.double, generator=gen) * scale @ u.T
        layer(x[None])
        opt.step()
    assert _principal_angles(layer.weight.detach(), u[:, :2].T) < 0.15


# ----------------------------------------------------------------------------- the head-mixing layer
@pytest.mark.parametrize(
    "kind,m,out",
    [("deacon-direct", 4, 4 * 3), ("deacon-direct", 2, 2 * 3), ("deacon-average", 3, 3), ("deacon-nonlinear", 14, 14 * 3)],
)
def test_head_mixing_shapes_and_output_projection_sized_by_m(kind, m, out):
    mix = DeaconHeadMixing(kind, 4, 3, m)
    assert mix.out_features == out
    assert mix(torch.randn(2, 4, 7, 3)).shape == (2, 7, out)
    mha = MultiHeadAttention(8, 12, 4, head_mixing=kind, deacon_m=m)
    assert mha.out.in_features == out
    assert mha(torch.randn(2, 7, 8))[0].shape == (2, 7, 12)


def test_direct_mixing_is_the_paper_reshape_bn_and_projection():
    torch.manual_seed(0)
    mix = DeaconHeadMixing("deacon-direct", 3, 2, 2).double().train()
    heads = torch.randn(2, 3, 5, 2, dtype=torch.double)  # (B, h, N, d_k)
    # M_r: rows (b, i, j) hold [Z_1[i, j], ..., Z_h[i, j]]
    rows = torch.stack([heads[b, :, i, j] for b in range(2) for i in range(5) for j in range(2)])
    z = (rows - rows.mean(0)) / torch.sqrt(rows.var(0, unbiased=False) + mix.bn.eps)
    y = z @ mix.pca.weight.T  # (B*N*d_k, m)
    want = y.view(2, 5, 2, 2).transpose(2, 3).reshape(2, 5, 4)  # M' reshaped back: head-major blocks
    torch.testing.assert_close(mix(heads), want)
    torch.testing.assert_close(mix.pca.input_moment, z.T @ z / len(z))


def test_polynomial_features_are_heads_squares_and_pairwise_products():
    z = torch.tensor([[2.0, 3.0, 5.0]])
    torch.testing.assert_close(polynomial_features(z), torch.tensor([[2, 3, 5, 4, 9, 25, 6, 10, 15.0]]))
    assert max_deacon_m("deacon-nonlinear", 8) == 44 and max_deacon_m("deacon-direct", 8) == 8


def test_m_below_h_has_fewer_parameters_and_padding_is_still_exact():
    count = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    full = _tiny_model(head_mixing=None, m=None)
    assert count(_tiny_model(m=2)) < count(_tiny_model(m=4)) and count(_tiny_model(m=2)) < count(full)
    assert count(_tiny_model("deacon-average", m=2)) < count(full)
    # A padded batch equals each series alone (eval: running statistics).
    model = _tiny_model("deacon-nonlinear", m=5)
    model.train()
    model(torch.randn(4, 12, 3, dtype=torch.double))
    model.eval()
    series = [torch.randn(n, 3, dtype=torch.double) for n in (12, 7)]
    batch = torch.zeros(2, 12, 3, dtype=torch.double)
    valid = torch.zeros(2, 12, dtype=torch.bool)
    for i, s in enumerate(series):
        batch[i, : len(s)], valid[i, : len(s)] = s, True
    out = model(batch, valid)
    for i, s in enumerate(series):
        torch.testing.assert_close(out[i], model(s[None])[0])


# ----------------------------------------------------------------------------- training
def _toy_data(n=48, t=12, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, t, 3, generator=gen)
    y = (x[:, : t // 2, 0].mean(1) - x[:, t // 2 :, 1].mean(1)).unsqueeze(1)
    return SeriesBatchData(x, torch.ones(n, t, dtype=torch.bool), y)


def _normalised_gram(w):
    w = w / w.norm(dim=1, keepdim=True)
    return w @ w.T


def test_pca_weights_decorrelate_during_deacon_training_figure_6():
    """DEACON training brings the PCA weights' correlation matrix close to identity (paper Fig. 6),
    although they start strongly correlated (cosines 0.73, row norms 1.9); the ordinary optimiser
    alone leaves them correlated. Every applied step has norm dP = 0.2 and spends most of it on the
    loss (xi = 0.8), so it takes some 100 batches, and the rows keep moving by dP per batch."""
    results = {}
    for use_deacon in (True, False):
        torch.manual_seed(0)
        enc = DCTransformerEncoder(
            3, 12, d_model=16, n_blocks=1, n_heads=4, p=0.5, head_mixing="deacon-direct",
            deacon_inner_steps=500,
        )
        model = SeriesModel(enc, 1, "regression", "mean", 0.0)
        with torch.no_grad():
            for layer in pca_layers(model):
                layer.weight.copy_(torch.eye(4) + 0.6)  # correlated rows: cosines about 0.6-0.9
        data = _toy_data()
        # RAdam at a constant lr without weight decay: the setting this comparison was measured in.
        config = TrainConfig(lr=3e-3, batch_size=16, max_epochs=40, patience=None, optimizer="radam", weight_decay=0.0,
                             lr_schedule="none")
        loss = lambda o, t: torch.nn.functional.mse_loss(o, t)  # noqa: E731
        # Without DEACON: the ordinary optimiser trains the PCA weights like any other weight.
        ordinary = (lambda model, make: make(list(model.parameters()))) if not use_deacon else with_deacon
        with mock.patch("tsrep.training.loop.with_deacon", ordinary):
            history = train_supervised(
                model, data, None, loss, lambda o, t: -float(loss(o, t)), config, "cpu", torch.Generator().manual_seed(0)
            )
        assert all(math.isfinite(v) for v in history.train_loss)
        grams = [_normalised_gram(layer.weight.detach()) for layer in pca_layers(model)]
        results[use_deacon] = max(float((g - torch.eye(4)).abs().max()) for g in grams)
        if use_deacon:
            for layer in pca_layers(model):
                torch.testing.assert_close(layer.weight.norm(dim=1), torch.ones(4), atol=0.25, rtol=0)
    print("max |off-diagonal| of the normalised Gram matrix (DEACON, ordinary):", results[True], results[False])
    assert results[True] < 0.3, results
    assert results[False] > 0.5, results


def test_training_loop_and_estimators_apply_deacon_automatically():
    X = np.random.default_rng(0).normal(size=(20, 2, 10))
    y = np.array([0, 1] * 10)
    calls = []
    original = DeaconOptimizer.step

    def counting_step(self, *a, **k):
        calls.append(1)
        return original(self, *a, **k)

    with mock.patch.object(DeaconOptimizer, "step", counting_step):
        EADCTransformerClassifier(**TINY).fit(X, y)
        assert not calls  # no PCA layer, no DEACON
        clf = EADCTransformerClassifier(**{**TINY, "head_mixing": "deacon-direct", "deacon_m": 1}).fit(X, y)
    assert calls
    assert np.isfinite(clf.predict_proba(X)).all()
    # Without PCA layers the optimiser is exactly the ordinary one; with them, it is split.
    plain = torch.nn.Linear(2, 2)
    assert isinstance(with_deacon(plain, lambda ps: torch.optim.SGD(ps, 0.1)), torch.optim.SGD)
    opt = with_deacon(clf.module_, lambda ps: torch.optim.SGD(ps, 0.1))
    assert isinstance(opt, OptimizerWithDeacon)
    pca_ids = {id(l.weight) for l in pca_layers(clf.module_)}
    assert not pca_ids & {id(p) for g in opt.base.param_groups for p in g["params"]}
    assert pca_ids == {id(p) for g in opt.deacon.param_groups for p in g["params"]}


@pytest.mark.parametrize(
    "kw,match",
    [
        (dict(head_mixing="deacon-direct", deacon_m=3), "deacon_m"),  # TINY has 2 heads
        (dict(head_mixing="deacon-nonlinear", deacon_m=6), "deacon_m"),  # h + h(h+1)/2 = 5
        (dict(head_mixing="deacon-direct", deacon_m=0), "deacon_m"),
        (dict(deacon_m=2), "deacon_m.*head_mixing"),
        (dict(head_mixing="pca"), "head_mixing"),
        (dict(head_mixing="deacon-direct", deacon_dp=0.0), "deacon_dp"),
        (dict(head_mixing="deacon-direct", deacon_xi=1.0), "deacon_xi"),
        (dict(head_mixing="deacon-direct", deacon_inner_steps=-1), "deacon_inner_steps"),
        (dict(head_mixing="deacon-direct", p=0.0), "head_mixing.*attention branch"),
    ],
)
def test_bad_deacon_parameters_raise_clear_errors(kw, match):
    X = np.random.default_rng(0).normal(size=(10, 2, 8))
    with pytest.raises(ValueError, match=match):
        EADCTransformerRegressor(**{**TINY, **kw}).fit(X, np.arange(10.0))


def test_nonlinear_m_may_exceed_h_and_interacting_pairs_allow_h_squared():
    # Nonlinear: h + h(h+1)/2 = 5 inputs for 2 heads, so m = 5 > h; interacting pairs mix h * h = 4 head outputs.
    nonlinear = DCTransformerEncoder(2, 8, d_model=8, n_blocks=1, n_heads=2, p=1.0, head_mixing="deacon-nonlinear",
                                     deacon_m=5)
    pairs = DCTransformerEncoder(2, 8, d_model=8, n_blocks=1, n_heads=2, p=1.0, attention="interacting",
                                 head_mixing="deacon-direct", deacon_m=4)
    for encoder, n_in, m in ((nonlinear, 5, 5), (pairs, 4, 4)):
        layers = pca_layers(encoder)
        assert len(layers) == 2 and all((layer.n_in, layer.m) == (n_in, m) for layer in layers)
        assert encoder(torch.randn(3, 8, 2)).shape == (3, 8, 8)
    with pytest.raises(ValueError, match="deacon_m"):
        DCTransformerEncoder(2, 8, d_model=8, n_blocks=1, n_heads=2, p=1.0, head_mixing="deacon-direct", deacon_m=4)


# ----------------------------------------------------------------------------- frozen layers
def test_frozen_encoder_keeps_its_pca_weights_through_fine_tuning():
    """freeze_encoder=True after pretraining: the PCA layers still hold the input moment of the last
    pretraining batch, but a frozen weight gets no DEACON update, not even the GHA-only ones."""
    X = np.random.default_rng(0).normal(size=(24, 2, 10))
    y = np.array([0, 1] * 12)
    pretrained = []
    pretrain = EADCTransformerClassifier._pretrain

    def recording_pretrain(est, model, *args, **kwargs):
        history = pretrain(est, model, *args, **kwargs)
        pretrained.extend(layer.weight.detach().clone() for layer in pca_layers(model))
        return history

    params = {**TINY, "head_mixing": "deacon-direct", "pretrain_epochs": 2, "freeze_encoder": True,
              "max_epochs": 4, "deacon_inner_steps": 50}
    with mock.patch.object(EADCTransformerClassifier, "_pretrain", recording_pretrain):
        clf = EADCTransformerClassifier(**params).fit(X, y)
    layers = pca_layers(clf.module_)
    assert len(layers) == len(pretrained) == 2
    assert all(layer.input_moment is not None for layer in layers)  # the stale record is there
    for layer, weight in zip(layers, pretrained):
        assert torch.equal(layer.weight.detach(), weight)


def test_optimizer_leaves_a_weight_without_requires_grad_alone():
    layer = PCALayer(4, 2).double().train()
    layer(torch.randn(1, 30, 4, dtype=torch.double))  # a recorded moment, no gradient
    layer.weight.requires_grad_(False)
    before = layer.weight.detach().clone()
    DeaconOptimizer([layer]).step()
    assert torch.equal(layer.weight.detach(), before)
    layer.weight.requires_grad_(True)  # unfrozen later: the same optimiser trains it again
    DeaconOptimizer([layer]).step()
    assert not torch.equal(layer.weight.detach(), before)


# ----------------------------------------------------------------------------- the inner loop
def test_applied_change_keeps_norm_dP_and_dQ_with_the_default_inner_loop():
    """With the paper's i = 500 GHA-only updates per batch, the change DEACON applies to W is still
    the constrained step, up to the rows' rescaling to length 1 (O(dP^2)): ||dW|| = dP and
    <G, dW> = dQ < 0 on every batch; its part orthogonal to G points where the inner loop's GHA
    updates (run on a copy of W) lead, among the changes that keep the rows' lengths."""
    torch.manual_seed(0)
    enc = DCTransformerEncoder(
        3, 12, d_model=16, n_blocks=1, n_heads=4, p=0.5, alpha=0.5, beta=0.5, dropout=0.0,
        head_mixing="deacon-direct",
    )
    model = SeriesModel(enc, 1, "regression", "mean", 0.0).double().train()
    layers = pca_layers(model)
    assert len(layers) == 2 and all(layer.inner_steps == 500 for layer in layers)
    opt = DeaconOptimizer(layers)
    gen = torch.Generator().manual_seed(0)
    for _ in range(12):
        x = torch.randn(6, 12, 3, dtype=torch.double, generator=gen)
        y = torch.randn(6, 1, dtype=torch.double, generator=gen)
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        before = [layer.weight.detach().clone() for layer in layers]
        grads = [layer.weight.grad.clone() for layer in layers]
        targets = [gha_steps(w, layer.input_moment, 500, layer.gha_lr) for w, layer in zip(before, layers)]
        opt.step()
        for layer, w0, g, target, dW in zip(layers, before, grads, targets, opt.last_steps):
            torch.testing.assert_close(dW.norm(), torch.tensor(0.2, dtype=torch.double), rtol=1e-9, atol=0)
            g_t = tangent(g, w0)
            torch.testing.assert_close((g * dW).sum(), -0.8 * 0.2 * g_t.norm(), rtol=1e-9, atol=0)
            assert (g * dW).sum() < 0
            torch.testing.assert_close(layer.weight.detach(), unit_rows(w0 + dW))
            torch.testing.assert_close(layer.weight.detach(), w0 + dW, rtol=0, atol=0.2**2)
            unit_g = g_t / g_t.norm()
            perp_dw = dW - (dW * unit_g).sum() * unit_g
            hebb = tangent(target - w0, w0)
            perp_hebb = hebb - (hebb * unit_g).sum() * unit_g
            cos = (perp_dw * perp_hebb).sum() / (perp_dw.norm() * perp_hebb.norm())
            torch.testing.assert_close(cos, torch.tensor(1.0, dtype=torch.double))


def test_one_inner_step_gives_the_step_of_no_inner_loop():
    """The constrained step depends on F only through its direction, and one GHA-only update moves W
    along Sanger's F itself: inner_steps = 1 and 0 make the same step."""
    changes = []
    for inner_steps in (0, 1):
        model = _tiny_model()
        model.train()
        torch.manual_seed(1)
        x, y = torch.randn(6, 12, 3, dtype=torch.double), torch.randn(6, 1, dtype=torch.double)
        torch.nn.functional.mse_loss(model(x), y).backward()
        layers = pca_layers(model)
        before = [layer.weight.detach().clone() for layer in layers]
        DeaconOptimizer(layers, inner_steps=inner_steps).step()
        changes.append([layer.weight.detach() - w0 for layer, w0 in zip(layers, before)])
    for a, b in zip(*changes):
        torch.testing.assert_close(a, b)


# ----------------------------------------------------------------------------- one set of defaults
def test_estimator_defaults_are_the_deacon_constants():
    # scikit-learn wants literal defaults in __init__; they must stay the paper's settings of tsrep.nn.deacon.
    import inspect

    from tsrep.nn.deacon import DEACON_DP, DEACON_INNER_STEPS, DEACON_XI, GHA_LR

    expected = {"deacon_dp": DEACON_DP, "deacon_xi": DEACON_XI, "deacon_inner_steps": DEACON_INNER_STEPS}
    for cls in (EADCTransformerClassifier, EADCTransformerRegressor):
        defaults = {k: p.default for k, p in inspect.signature(cls.__init__).parameters.items() if k in expected}
        assert defaults == expected, cls.__name__
    layer = PCALayer(4, 2)
    assert (layer.dP, layer.xi, layer.inner_steps, layer.gha_lr) == (DEACON_DP, DEACON_XI, DEACON_INNER_STEPS, GHA_LR)


# ----------------------------------------------------------------------------- stability over a whole fit
def test_gha_inner_loop_stays_finite_for_long_rows():
    """Rows of length 1.6 (2.6 I) made the inner loop of eta = gha_lr / trace(C) diverge; the step size
    shrinks with the longest row, so it converges to the principal directions instead."""
    moment = torch.diag(torch.tensor([1.4, 0.6], dtype=torch.double))
    for start in (2.0, 2.6, 10.0):
        w = gha_steps(start * torch.eye(2, dtype=torch.double), moment, 500, 0.5)
        torch.testing.assert_close(w, torch.eye(2, dtype=torch.double), atol=1e-6, rtol=0)


@pytest.mark.parametrize("head_mixing", ["deacon-direct", "deacon-average"])
def test_deacon_trains_a_hundred_steps_at_the_default_width_without_diverging(head_mixing):
    """At the estimator's default width (d_model 64, 4 heads) and DEACON settings, the loss used to turn
    NaN within 18-44 optimiser steps (rows of W grew to length ~3, where the inner loop diverged). Now
    every step is finite, the PCA rows keep length 1 and the model fits its training data."""
    rng = np.random.default_rng(3)
    y = np.array(["a"] * 30 + ["b"] * 12 + ["c"] * 6)
    X = rng.standard_normal((48, 1, 40))
    X[y == "b", 0] += np.linspace(0, 2, 40)
    X[y == "c", 0] -= 1
    clf = EADCTransformerClassifier(
        head_mixing=head_mixing, n_blocks=1, min_steps=100, max_epochs=1, random_state=0, device="cpu"
    ).fit(X, y)
    assert clf.n_epochs_ == 100 and all(math.isfinite(v) for v in clf.history_.train_loss)
    for layer in pca_layers(clf.module_):
        torch.testing.assert_close(layer.weight.detach().norm(dim=1), torch.ones(layer.m), atol=1e-5, rtol=0)
    assert clf.score(X, y) > 0.9
