"""The "inception" stem (tsrep.nn.conv_stem.InceptionStem) and the head's stem skip (SeriesModel stem_skip):
the stem against a slow reference written from InceptionTime's description, its max-pool reading valid
steps only, padded == alone through the whole model, and the estimators' options."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from tsrep.backbones import DCTransformerEncoder, SeriesModel
from tsrep.nn.conv_stem import INCEPTION_KERNELS, ConvStem, InceptionStem, make_stem


def padded_batch(seed=1, n_steps=48, lengths=(48, 30, 48, 13), channels=2):
    torch.manual_seed(seed)
    x = torch.randn(len(lengths), n_steps, channels)
    valid = torch.arange(n_steps)[None, :] < torch.tensor(lengths)[:, None]
    return x * valid[..., None], valid


def randomise_norms(module):
    """Non-trivial running statistics and affine weights, so that eval-mode BatchNorm is not the identity."""
    generator = torch.Generator().manual_seed(3)
    for m in module.modules():
        if isinstance(m, torch.nn.BatchNorm1d):
            m.running_mean.copy_(torch.randn(m.num_features, generator=generator))
            m.running_var.copy_(torch.rand(m.num_features, generator=generator) + 0.5)
            m.weight.data.copy_(torch.rand(m.num_features, generator=generator) + 0.5)
            m.bias.data.copy_(torch.randn(m.num_features, generator=generator))


def reference_inception(stem: InceptionStem, series: torch.Tensor) -> torch.Tensor:
    """One series alone, (T, C) -> (T, channels), step by step from the description: zero padding of
    (k - 1) // 2 steps on the left and k // 2 on the right for a kernel of k, a max over the steps t-1..t+1
    that exist, eval-mode BatchNorm, ReLU, the 1 x 1 mix, BatchNorm, ReLU."""
    x = series.T[None]  # (1, C, T)
    outs = []
    for conv, k in zip(stem.branches, INCEPTION_KERNELS):
        outs.append(F.conv1d(F.pad(x, ((k - 1) // 2, k // 2)), conv.weight))
    n_steps = x.shape[-1]
    pooled = torch.stack([x[..., max(0, t - 1): t + 2].amax(-1) for t in range(n_steps)], dim=-1)
    outs.append(F.conv1d(pooled, stem.pool_conv.weight))
    h = torch.cat(outs, dim=1)

    def batch_norm(h, norm):
        bn = norm.norm
        scale = bn.weight / torch.sqrt(bn.running_var + bn.eps)
        return (h - bn.running_mean[:, None]) * scale[:, None] + bn.bias[:, None]

    h = torch.relu(batch_norm(h, stem.norm))
    h = torch.relu(batch_norm(F.conv1d(h, stem.mix.weight, stem.mix.bias), stem.mix_norm))
    return h[0].T


def test_inception_stem_matches_a_step_by_step_reference():
    torch.manual_seed(0)
    stem = InceptionStem(2, 16).eval()
    randomise_norms(stem)
    x, valid = padded_batch()
    with torch.no_grad():
        batch = stem(x, valid)
        assert batch.shape == (4, 48, 16)
        assert bool((batch[~valid] == 0).all())  # padded steps stay zero
        for i in range(len(x)):
            length = int(valid[i].sum())
            expected = reference_inception(stem, x[i, :length])
            torch.testing.assert_close(batch[i, :length], expected, rtol=1e-5, atol=1e-5)
            torch.testing.assert_close(stem(x[i: i + 1, :length], None)[0], expected, rtol=1e-5, atol=1e-5)


def test_the_max_pool_reads_valid_steps_only():
    """A series that ends below zero: a pool reading the zero of the padding would raise its last step."""
    stem = InceptionStem(1, 4)
    h = torch.tensor([[[-3.0, -2.0, -5.0, 0.0, 0.0]]])  # (B, C, T): three valid steps, two padded
    valid = torch.tensor([[True, True, True, False, False]])
    pooled = stem._pool_valid(h, valid)
    assert pooled[0, 0].tolist() == [-2.0, -2.0, -2.0, 0.0, 0.0]
    assert stem.pool(h[..., :3])[0, 0].tolist() == [-2.0, -2.0, -2.0]  # the series alone


@pytest.mark.parametrize("front_end", [{"patch_len": 6, "patch_stride": 4}, {}])
@pytest.mark.parametrize("stem_kind", ["inception", "conv"])
@pytest.mark.parametrize("stem_skip", [True, False])
def test_padded_series_give_the_same_output_as_each_series_alone(front_end, stem_kind, stem_skip):
    torch.manual_seed(0)
    encoder = DCTransformerEncoder(2, 48, d_model=32, n_blocks=2, n_heads=8, p=0.5, conv_stem=8, stem_kind=stem_kind,
                                   **front_end)
    model = SeriesModel(encoder, 3, "classification", "mean", 0.1, stem_skip=stem_skip).eval()
    randomise_norms(model)
    assert model.head[0].in_features == 32 + (8 if stem_skip else 0)
    x, valid = padded_batch()
    x[1, 27:30] = -4.0  # a series ending below zero: the max-pool must not read its padding
    x = x * valid[..., None]
    with torch.no_grad():
        batch = model(x, valid)
        for i in range(len(x)):
            length = int(valid[i].sum())
            torch.testing.assert_close(model(x[i: i + 1, :length], None)[0], batch[i], rtol=1e-5, atol=1e-5)


def test_the_stem_skip_reads_the_mean_of_the_stem_features_over_valid_steps():
    torch.manual_seed(0)
    encoder = DCTransformerEncoder(2, 48, d_model=32, n_blocks=1, n_heads=8, p=0.5, patch_len=6, conv_stem=8,
                                   stem_kind="inception").eval()
    x, valid = padded_batch()
    with torch.no_grad():
        z, stem_mean = encoder(x, valid, stem_mean=True)
        features = encoder.stem(x, valid)
        torch.testing.assert_close(z, encoder(x, valid))
        for i in range(len(x)):
            torch.testing.assert_close(stem_mean[i], features[i, valid[i]].mean(0))
    plain = DCTransformerEncoder(2, 48, d_model=32, n_blocks=1, n_heads=8, p=0.5)
    with pytest.raises(ValueError, match="stem_mean=True needs an encoder with a convolutional stem"):
        plain(x, valid, stem_mean=True)
    # Without a stem there is nothing to skip: the head is the plain one.
    assert SeriesModel(plain, 3, "classification", "mean", 0.1, stem_skip=True).head[0].in_features == 32


def test_inception_stem_gets_gradients_and_a_loss_that_falls():
    torch.manual_seed(0)
    encoder = DCTransformerEncoder(2, 48, d_model=16, n_blocks=1, n_heads=4, p=0.5, patch_len=6, conv_stem=8,
                                   stem_kind="inception")
    model = SeriesModel(encoder, 2, "classification", "mean", 0.0, stem_skip=True)
    x, valid = padded_batch()
    y = torch.tensor([0, 1, 0, 1])
    x[y == 1] += torch.linspace(-2, 2, 48)[None, :, None]  # a learnable difference between the classes
    x = x * valid[..., None]
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(30):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x, valid), y)
        loss.backward()
        losses.append(loss.item())
        optimizer.step()
    assert all(p.grad is not None for p in model.encoder.stem.parameters())
    assert losses[-1] < 0.5 * losses[0]


def test_make_stem_names_its_kinds():
    assert isinstance(make_stem("conv", 2, 8), ConvStem) and isinstance(make_stem("inception", 2, 8), InceptionStem)
    with pytest.raises(ValueError, match=r"stem_kind must be one of \['conv', 'inception'\], got 'resnet'"):
        make_stem("resnet", 2, 8)
    with pytest.raises(ValueError, match="stem_kind must be one of"):
        DCTransformerEncoder(2, 48, d_model=32, n_heads=8, p=0.5, conv_stem=8, stem_kind="Inception")


QUICK = dict(d_model=8, n_blocks=1, n_heads=2, p=0.5, max_epochs=2, min_steps=0, batch_size=8, random_state=0)


def test_estimator_with_the_inception_stem_and_skip_fits_predicts_and_round_trips(tmp_path):
    from tsrep import EADCTransformerClassifier

    rng = np.random.default_rng(0)
    y = np.array([0, 1] * 16)
    X = rng.normal(size=(32, 2, 64)) + y[:, None, None] * np.linspace(-1, 1, 64)
    clf = EADCTransformerClassifier(**QUICK, stem_kind="inception", stem_skip=True).fit(X, y)
    assert clf.conv_stem_ == 64 and isinstance(clf.module_.encoder.stem, InceptionStem)
    assert clf.module_.head[0].in_features == 8 + 64  # the pooled tokens and the stem's mean
    proba = clf.predict_proba(X)
    assert proba.shape == (32, 2) and np.allclose(proba.sum(1), 1)
    path = tmp_path / "model"
    clf.save(path)
    loaded = EADCTransformerClassifier.load(path)
    assert loaded.get_params()["stem_kind"] == "inception" and loaded.get_params()["stem_skip"] is True
    np.testing.assert_allclose(loaded.predict_proba(X), proba, rtol=1e-6, atol=1e-6)
    # Unequal lengths: a list of 2-D arrays.
    cases = [X[i, :, : 40 + i] for i in range(32)]
    unequal = EADCTransformerClassifier(**QUICK, stem_kind="inception", stem_skip=True).fit(cases, y)
    assert unequal.predict(cases).shape == (32,)


@pytest.mark.parametrize("param, value", [("stem_kind", "resnet"), ("stem_kind", None), ("stem_skip", "yes")])
def test_a_bad_stem_option_is_named(param, value):
    from tsrep import EADCTransformerClassifier

    X, y = np.random.default_rng(0).normal(size=(32, 1, 64)), np.array([0, 1] * 16)
    with pytest.raises(ValueError, match=param):
        EADCTransformerClassifier(**QUICK, **{param: value}).fit(X, y)


def test_the_memory_estimate_counts_the_inception_stems_wider_maps():
    from tsrep.estimators._memory import training_memory

    shape = dict(n_tokens_max=32, batch_size=64, in_features=64, d_model=64, n_blocks=3, n_heads=4, p=0.25,
                 kernel_size=3, dim_feedforward=None, attention="evolving", checkpointing=False,
                 stem_channels=64, n_steps_max=1024)
    conv, inception = training_memory(**shape), training_memory(**shape, stem_kind="inception")
    assert inception["stem"] == 2 * conv["stem"] > 0
