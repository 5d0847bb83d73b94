"""Inputs and settings that used to train silently on garbage or fail with someone else's message.

Each test names what a user gave and what they must get: a fit on what they meant, or one clear error.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

from tsrep import EADCTransformerClassifier, EADCTransformerRegressor
from tsrep.nn import MultiHeadAttention, stock_ops
from tsrep.training.callbacks import Callback

TINY = dict(d_model=8, n_blocks=1, n_heads=2, max_epochs=1, min_steps=0, device="cpu", random_state=0)
X = np.random.default_rng(0).standard_normal((16, 2, 12))
Y = np.arange(16) % 2


# ----------------------------------------------------------------------------- values that erase information
def test_one_huge_value_among_ordinary_ones_is_refused_naming_where_it_is():
    """One 1e300 sets its channel's std: standardised, every other value of the channel rounds to zero."""
    bad = X.copy()
    bad[3, 1, 5] = 1e300
    with pytest.raises(ValueError, match=r"X channel 1 holds extreme values \(the largest, 1e\+300, at case 3, step 5\)"):
        EADCTransformerClassifier(**TINY).fit(bad, Y)
    # symlog scaling tames it: the same data trains
    EADCTransformerClassifier(**TINY, scaling="symlog").fit(bad, Y)


@pytest.mark.filterwarnings("ignore:Data seen by instance")  # aeon's note on series of std <= 1e-7
def test_tiny_scale_inputs_are_standardised_not_zeroed():
    """Values near 1e-12 vary: they are standardised like any others (the constant-channel test is relative)."""
    small = EADCTransformerClassifier(**TINY).fit(X * 1e-12, Y)
    plain = EADCTransformerClassifier(**TINY).fit(X, Y)
    np.testing.assert_allclose(small.standardizer_.std_ * 1e12, plain.standardizer_.std_, rtol=1e-9)
    np.testing.assert_allclose(small.predict_proba(X * 1e-12), plain.predict_proba(X), atol=1e-5)


def test_a_masked_arrays_mask_marks_missing_values():
    mask = np.zeros_like(X, dtype=bool)
    mask[:, 0, 3:6] = True
    masked = np.ma.masked_array(np.where(mask, 1e6, X), mask=mask)
    missing = np.where(mask, np.nan, X)
    a = EADCTransformerClassifier(**TINY).fit(masked, Y)
    b = EADCTransformerClassifier(**TINY).fit(missing, Y)
    np.testing.assert_array_equal(a.predict_proba(masked), b.predict_proba(missing))
    np.testing.assert_array_equal(a.predict_proba([m for m in masked]), b.predict_proba(missing))


def test_targets_near_floats_limit_train_and_predict_finite_values():
    y = np.where(Y == 1, 1e308, -1e308)
    reg = EADCTransformerRegressor(**TINY).fit(X, y)
    assert (reg.y_mean_, reg.y_std_) == (0.0, 1e308)
    assert np.isfinite(reg.predict(X)).all()


# ----------------------------------------------------------------------------- settings that said one thing and did another
def test_a_validation_fraction_that_leaves_nothing_to_train_on_is_refused():
    with pytest.raises(ValueError, match=r"validation_fraction=0\.99 would hold out 16 of the 16 training cases"):
        EADCTransformerClassifier(**TINY, validation_fraction=0.99).fit(X, Y)
    assert EADCTransformerClassifier(**TINY, validation_fraction=0.5).fit(X, Y).validation_fraction_ == 0.5


@pytest.mark.parametrize(
    "n_estimators, max_tokens, match",
    [
        (2, (64, 32, 16, 8), r"2 budget\(s\) would train no member"),
        (3, (64, 32), "unequal numbers of members"),
    ],
)
def test_token_budgets_must_go_evenly_to_the_members(n_estimators, max_tokens, match):
    with pytest.raises(ValueError, match=match):
        EADCTransformerClassifier(**TINY, n_estimators=n_estimators, max_tokens=max_tokens).fit(X, Y)


def test_the_meta_device_is_refused_by_name():
    with pytest.raises(ValueError, match=r"device='meta' is a 'meta' device; tsrep trains and predicts on 'cpu'"):
        EADCTransformerClassifier(**{**TINY, "device": "meta"}).fit(X, Y)


def test_score_on_a_test_set_of_one_class_is_its_accuracy():
    clf = EADCTransformerClassifier(**TINY).fit(X, Y)
    ones = Y == 1
    assert clf.score(X[ones], Y[ones]) == pytest.approx(np.mean(clf.predict(X[ones]) == 1))


class _LockedCounter(Callback):
    def __init__(self):
        self.lock = threading.Lock()  # cannot be pickled or deep-copied
        self.epochs = 0

    def on_epoch_end(self, epoch, logs):
        with self.lock:
            self.epochs += 1


def test_ensemble_members_report_to_the_users_callbacks_and_unpicklable_ones_are_named_for_n_jobs():
    counter = _LockedCounter()
    EADCTransformerClassifier(**TINY, n_estimators=2, callbacks=[counter]).fit(X, Y)
    assert counter.epochs == 2  # both members' epochs reached the object the user holds
    with pytest.raises(ValueError, match=r"callbacks=.* cannot be sent to the worker processes .* n_jobs=2"):
        EADCTransformerClassifier(**TINY, n_estimators=2, n_jobs=2, callbacks=[_LockedCounter()]).fit(X, Y)


# ----------------------------------------------------------------------------- second derivatives
def test_second_derivatives_through_evolving_attention_need_stock_ops_and_are_right_there():
    torch.manual_seed(0)
    mha = MultiHeadAttention(4, 4, 2, alpha=0.5, beta=0.5, dropout=0.0).double()
    x = torch.randn(2, 5, 4, dtype=torch.double, requires_grad=True)
    prev = torch.randn(2, 2, 5, 5, dtype=torch.double, requires_grad=True)
    valid = torch.tensor([[1, 1, 1, 1, 0], [1, 1, 1, 1, 1]], dtype=torch.bool)

    def attend(a, b):
        return mha(a, valid, b)[0]

    with pytest.raises(RuntimeError, match=r"second derivatives .* `with tsrep\.nn\.stock_ops\(\):`"):
        torch.autograd.gradgradcheck(attend, (x, prev))
    with stock_ops():
        assert torch.autograd.gradgradcheck(attend, (x, prev))
        stock = attend(x, prev)
    torch.testing.assert_close(stock, attend(x, prev))  # the same function either way
