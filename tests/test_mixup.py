"""Mixup of training batches: the Beta draw, the partners, the mixed batch and loss the loop trains on,
the estimators' `mixup` parameter and its bad input."""

import numpy as np
import pytest
import torch
from scipy import stats

from tsrep import EADCTransformerClassifier, EADCTransformerRegressor
from tsrep.training import SeriesBatchData, TrainConfig
from tsrep.training.distributed import shard_indices
from tsrep.training.loop import SupervisedTrainer
from tsrep.training.mixup import beta_symmetric, mix, mixup_partners

TINY = dict(d_model=8, n_blocks=1, n_heads=2, p=0.5, batch_size=8, max_epochs=2, min_steps=0, random_state=0)


@pytest.mark.parametrize("alpha", [0.2, 1.0, 4.0])
def test_the_weight_is_beta_alpha_alpha(alpha):
    g = torch.Generator().manual_seed(0)
    draws = np.array([beta_symmetric(alpha, g) for _ in range(4000)])
    assert stats.kstest(draws, stats.beta(alpha, alpha).cdf).pvalue > 1e-3
    again = torch.Generator().manual_seed(0)
    assert [beta_symmetric(alpha, again) for _ in range(5)] == list(draws[:5])  # the seed fixes the draws


def test_partners_are_a_shuffle_of_the_batch_and_shards_take_their_share():
    index = torch.tensor([7, 2, 9, 4, 0, 5, 3])
    lam, partners = mixup_partners(0.2, index, torch.Generator().manual_seed(3))
    assert 0.0 <= lam <= 1.0 and sorted(partners.tolist()) == sorted(index.tolist())
    # Each data-parallel process mixes its cases with the partners one process gives them.
    for world in (2, 3):
        shards = [(shard_indices(index, r, world), shard_indices(partners, r, world)) for r in range(world)]
        pairs = {int(c): int(p) for s, ps in shards for c, p in zip(s, ps)}
        assert pairs == dict(zip(index.tolist(), partners.tolist()))


def test_mix_is_the_convex_combination_over_the_union_of_valid_steps():
    values = torch.arange(12.0).reshape(2, 3, 2)
    partner = -torch.ones(2, 5, 2)
    partner_valid = torch.tensor([[True] * 5, [True, True, False, False, False]])
    partner = partner * partner_valid[..., None]  # padded steps are zero
    mixed, valid = mix(values, None, partner, partner_valid, 0.75)
    assert mixed.shape == (2, 5, 2)
    torch.testing.assert_close(mixed[:, :3], 0.75 * values + 0.25 * partner[:, :3])
    torch.testing.assert_close(mixed[0, 3:], 0.25 * partner[0, 3:])
    assert torch.equal(valid, torch.tensor([[True] * 5, [True, True, True, False, False]]))
    same, none = mix(values, None, values.flip(0), None, 0.5)
    assert none is None and torch.equal(same, 0.5 * values + 0.5 * values.flip(0))


class _Recorder(torch.nn.Module):
    """A linear model that keeps the last batch it saw."""

    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 3)

    def forward(self, values, mask=None):
        self.seen = values.detach().clone()
        return self.linear(values.mean(1))


def test_the_loop_trains_on_the_mixed_batch_and_the_mixed_loss():
    gen = torch.Generator().manual_seed(0)
    values = torch.randn(10, 6, 4, generator=gen)
    data = SeriesBatchData(values, torch.ones(10, 6, dtype=torch.bool), torch.arange(10) % 3, torch.rand(10) + 0.5)

    def loss_fn(outputs, targets, weights):
        per_case = torch.nn.functional.cross_entropy(outputs, targets, reduction="none")
        return (per_case * weights).mean()

    model = _Recorder()
    trainer = SupervisedTrainer(model, data, None, loss_fn, None, TrainConfig(batch_size=5, mixup=0.4), "cpu",
                                torch.Generator().manual_seed(1))
    index = torch.tensor([4, 1, 8, 0, 6])
    state = trainer.generator.get_state()
    loss, n_shard, n_batch = trainer.batch_loss(index)
    lam, partners = mixup_partners(0.4, index, torch.Generator().set_state(state))  # the draws the loop made
    expected_input = lam * values[index] + (1 - lam) * values[partners]
    torch.testing.assert_close(model.seen, expected_input)
    outputs = model.linear(expected_input.mean(1))
    expected = lam * loss_fn(outputs, data.targets[index], data.weights[index]) + (1 - lam) * loss_fn(
        outputs, data.targets[partners], data.weights[partners]
    )
    torch.testing.assert_close(loss, expected)
    assert (n_shard, n_batch) == (5, 5)
    # mixup=0 trains on the batch itself and draws nothing
    plain = SupervisedTrainer(model, data, None, loss_fn, None, TrainConfig(batch_size=5), "cpu",
                              torch.Generator().manual_seed(1))
    before = plain.generator.get_state()
    plain.batch_loss(index)
    assert torch.equal(model.seen, values[index]) and torch.equal(plain.generator.get_state(), before)


def _toy(n=20, t=24, seed=0):
    rng = np.random.default_rng(seed)
    y = np.array(["a", "b"] * (n // 2))
    X = rng.normal(size=(n, 1, t))
    X[y == "b", 0, : t // 2] += 2.0
    return X, y


def test_auto_mixup_resolves_per_task_and_an_explicit_alpha_changes_the_fit():
    X, y = _toy()
    auto = EADCTransformerClassifier(**TINY).fit(X, y)
    # The documented value (README, user guide), not the package's own constant: a changed constant must fail here.
    assert auto.mixup == "auto" and auto.mixup_ == 0.2
    explicit = EADCTransformerClassifier(**TINY, mixup=0.2).fit(X, y)
    np.testing.assert_array_equal(auto.predict_proba(X), explicit.predict_proba(X))
    other = EADCTransformerClassifier(**TINY, mixup=1.0).fit(X, y)
    assert not np.allclose(auto.predict_proba(X), other.predict_proba(X))
    regressor = EADCTransformerRegressor(**TINY).fit(X, X[:, 0, 0])
    assert regressor.mixup_ == 0.0
    mixed = EADCTransformerRegressor(**TINY, mixup=0.2).fit(X, X[:, 0, 0])
    assert mixed.mixup_ == 0.2 and np.isfinite(mixed.predict(X)).all()


def test_mixup_on_unequal_lengths_trains():
    rng = np.random.default_rng(0)
    X = [rng.normal(size=(2, n)) for n in (12, 20, 16, 9, 20, 14, 11, 18)]
    y = np.array(["a", "b"] * 4)
    clf = EADCTransformerClassifier(**{**TINY, "batch_size": 4}, mixup=0.5).fit(X, y)
    assert clf.predict_proba(X).shape == (8, 2) and np.isfinite(clf.predict_proba(X)).all()


@pytest.mark.parametrize("value", [-0.1, "lots", float("nan")])
def test_bad_mixup_is_named(value):
    X, y = _toy()
    with pytest.raises(ValueError, match="'mixup' parameter of EADCTransformerClassifier"):
        EADCTransformerClassifier(**TINY, mixup=value).fit(X, y)
