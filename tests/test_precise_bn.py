"""PreciseBN: BatchNorm running statistics recomputed after training on the unaugmented training set."""

import numpy as np
import pytest
import torch
from torch import nn

from tsrep import EADCTransformerClassifier, EADCTransformerRegressor
from tsrep.estimators.baselines import BackboneClassifier
from tsrep.estimators.dc_transformer import freeze
from tsrep.nn.norm import MaskedBatchNorm1d
from tsrep.training.loop import SeriesBatchData
from tsrep.training.precise_bn import recompute_batchnorm_statistics


class TwoNorms(nn.Module):
    """Linear -> dropout -> padding-aware BatchNorm -> Linear -> stock BatchNorm on (B, T, C) with a mask."""

    def __init__(self, c=3, d=4):
        super().__init__()
        self.lin1, self.drop, self.bn1 = nn.Linear(c, d), nn.Dropout(0.5), MaskedBatchNorm1d(d)
        self.lin2, self.bn2 = nn.Linear(d, d), nn.BatchNorm1d(d)

    def forward(self, x, valid=None):
        h = self.bn1(self.drop(self.lin1(x)), valid)
        h = self.lin2(h)
        return self.bn2(h.reshape(-1, h.shape[-1])).view(h.shape)


def _data(n=11, t=9, c=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    values = torch.randn(n, t, c, generator=g) * 3 + 1
    lengths = torch.randint(4, t + 1, (n,), generator=g)
    lengths[0] = t
    valid = torch.arange(t)[None, :] < lengths[:, None]
    return SeriesBatchData(values * valid[..., None], valid)


def _reference(model, data, batch_size, seed):
    """Step by step: the batches of a generator of `seed`, each batch's mean and unbiased variance over its
    valid steps (bn1) or all its rows (bn2, after bn1 normalised with that batch's own statistics), averaged
    with the batch's number of cases as its weight."""
    order = torch.randperm(len(data), generator=torch.Generator().manual_seed(seed))
    stats, weights = {"bn1": [], "bn2": []}, []
    for start in range(0, len(data), batch_size):
        index = order[start:start + batch_size]
        if len(index) < 2:
            continue
        weights.append(float(len(index)))
        t = int(data.valid[index].sum(1).max())
        x, valid = data.values[index, :t], data.valid[index, :t]
        h = model.lin1(x)
        rows = h[valid]
        mean, var = rows.mean(0), rows.var(0, unbiased=False)
        stats["bn1"].append((mean, rows.var(0, unbiased=True)))
        normed = torch.zeros_like(h)
        normed[valid] = (rows - mean) / torch.sqrt(var + model.bn1.eps) * model.bn1.weight + model.bn1.bias
        h2 = model.lin2(normed).reshape(-1, h.shape[-1])
        stats["bn2"].append((h2.mean(0), h2.var(0, unbiased=True)))
    w = torch.tensor(weights)[:, None] / sum(weights)
    return {k: ((torch.stack([m for m, _ in v]) * w).sum(0), (torch.stack([s for _, s in v]) * w).sum(0))
            for k, v in stats.items()}


def test_statistics_are_the_case_weighted_mean_over_shuffled_unaugmented_batches_without_dropout_or_padding():
    torch.manual_seed(0)
    model = TwoNorms()
    with torch.no_grad():
        model.bn1.weight.uniform_(0.5, 2)
        model.bn1.bias.normal_()
    data = _data()
    for bn in (model.bn1, model.bn2):  # statistics of training that must go
        bn.running_mean.fill_(5.0)
        bn.running_var.fill_(9.0)
    with torch.no_grad():
        expected = _reference(model, data, batch_size=4, seed=3)
    n = recompute_batchnorm_statistics(model, data, 4, "cpu", torch.Generator().manual_seed(3))
    assert n == 2
    for name in ("bn1", "bn2"):
        bn = getattr(model, name)
        torch.testing.assert_close(bn.running_mean, expected[name][0])
        torch.testing.assert_close(bn.running_var, expected[name][1])
        assert bn.momentum == 0.1  # the training momentum is given back
    assert not model.training and not any(m.training for m in model.modules())


def test_a_frozen_module_keeps_its_statistics_and_a_network_without_batchnorm_is_left_alone():
    model = TwoNorms()
    model.bn1.running_mean.fill_(5.0)
    freeze(model.bn1)  # stays in eval mode when its parent trains: its statistics are fixed
    assert recompute_batchnorm_statistics(model, _data(), 4, "cpu", torch.Generator().manual_seed(0)) == 1
    assert torch.all(model.bn1.running_mean == 5.0)
    plain = nn.Sequential(nn.Linear(3, 2))
    before = [p.clone() for p in plain.parameters()]
    assert recompute_batchnorm_statistics(lambda_module(plain), _data(), 4, "cpu", torch.Generator()) == 0
    assert all(torch.equal(a, b) for a, b in zip(before, plain.parameters()))


def lambda_module(inner):
    class Wrapped(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = inner

        def forward(self, x, valid=None):
            return self.inner(x)

    return Wrapped()


def _series(n=24, t=40, seed=0):
    rng = np.random.default_rng(seed)
    y = np.array(["a", "b"] * (n // 2))
    X = rng.normal(size=(n, 1, t)) + (y == "b")[:, None, None] * np.sin(np.linspace(0, 6, t))
    return X, y


SMALL = dict(d_model=16, n_blocks=1, n_heads=2, max_epochs=6, min_steps=0, random_state=0)


def test_the_estimator_recomputes_after_training_and_the_statistics_are_those_of_the_unaugmented_set():
    """Mixup and augmentation (on by default for 24 cases) shift the training averages; after fit the first
    BatchNorm's running mean is the one recomputed from TRAIN as prediction sees it, and predictions differ."""
    X, y = _series()
    on = EADCTransformerClassifier(precise_bn=True, **SMALL).fit(X, y)
    off = EADCTransformerClassifier(precise_bn=False, **SMALL).fit(X, y)
    assert on.mixup_ > 0 and on.augmentation_
    # Same weights (the recompute comes after training), different statistics.
    weights = {k: v for k, v in on.module_.state_dict().items() if "running" not in k and "num_batches" not in k}
    for k, v in weights.items():
        torch.testing.assert_close(v, off.module_.state_dict()[k], msg=k)
    assert not np.allclose(on.predict_proba(X), off.predict_proba(X))
    recompute_batchnorm_statistics(
        off.module_, off._prepare_X(X, fit=False), off.batch_size, "cpu", torch.Generator().manual_seed(0)
    )
    np.testing.assert_array_equal(off.predict_proba(X), on.predict_proba(X))
    assert not on.module_.training


def test_refit_and_save_load_give_the_same_recomputed_model(tmp_path):
    X, y = _series(seed=1)
    a = EADCTransformerRegressor(precise_bn=True, **SMALL).fit(X, y == "b")
    b = EADCTransformerRegressor(precise_bn=True, **SMALL).fit(X, y == "b")
    off = EADCTransformerRegressor(precise_bn=False, **SMALL).fit(X, y == "b")
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
    assert not np.allclose(a.predict(X), off.predict(X))
    loaded = EADCTransformerRegressor.load(a.save(tmp_path / "m.safetensors"))
    assert loaded.precise_bn is True and loaded.precise_bn_ is True
    np.testing.assert_array_equal(loaded.predict(X), a.predict(X))


def test_auto_is_off_for_both_tasks_and_a_bad_value_is_named():
    X, y = _series()
    assert EADCTransformerClassifier().precise_bn == "auto" and EADCTransformerRegressor().precise_bn == "auto"
    assert EADCTransformerClassifier(**SMALL).fit(X, y).precise_bn_ is False  # off until three seeds say on
    assert EADCTransformerRegressor(**SMALL).fit(X, y == "b").precise_bn_ is False
    assert BackboneClassifier().precise_bn is False  # baselines train as their papers did
    with pytest.raises(ValueError, match="precise_bn"):
        EADCTransformerClassifier(precise_bn="yes", **SMALL).fit(X, y)


def test_empty_data_and_a_bad_batch_size_are_named():
    model = TwoNorms()
    empty = SeriesBatchData(torch.empty(0, 5, 3), torch.empty(0, 5, dtype=torch.bool))
    with pytest.raises(ValueError, match="at least one case"):
        recompute_batchnorm_statistics(model, empty, 4, "cpu", torch.Generator())
    for bad in (0, 1, 2.5, True):
        with pytest.raises(ValueError, match="batch_size"):
            recompute_batchnorm_statistics(model, _data(), bad, "cpu", torch.Generator())
