"""Ensemble members trained together (tsrep.training.members): stacked weights under vmap against separate fits."""

import copy
import warnings

import numpy as np
import pytest
import torch
from helpers import two_class_series

from tsrep import EADCTransformerClassifier, EADCTransformerRegressor
from tsrep.training import build_optimizer
from tsrep.training.members import StackedMembers, clip_each_member

TINY = EADCTransformerClassifier._get_test_params()
# Nothing drawn at random inside a step: members trained together must then equal separate fits. SGD, since
# Adam would blow the rounding noise of a gradient that should be zero (a bias before a BatchNorm) up to a step
# of the learning rate's size.
DETERMINISTIC_STEP = {**TINY, "dropout": 0.0, "mixup": 0.0, "augmentation": None, "blend_minirocket": False,
                      "max_epochs": 3, "optimizer": "sgd", "lr": 0.05}


_data = two_class_series


def _unequal(n=24, seed=1):
    rng = np.random.default_rng(seed)
    y = np.array(["a", "b"] * (n // 2))
    X = [rng.normal(size=(2, int(rng.integers(10, 20)))) + (1.5 if label == "b" else 0.0) for label in y]
    return X, y


def _fit(X, y, together, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # no fallback warning: the members did train together
        return EADCTransformerClassifier(**{**DETERMINISTIC_STEP, **params}, n_estimators=2,
                                         train_members_together=together).fit(X, y)


def _network(est) -> torch.nn.Module:
    return est._build_model(2)


@pytest.mark.parametrize("data", [_data, _unequal], ids=["equal-length", "unequal-length"])
def test_members_trained_together_equal_separate_fits_when_the_step_draws_nothing(data):
    X, y = data()
    together, separate = _fit(X, y, True), _fit(X, y, False)
    for a, b in zip(together.estimators_, separate.estimators_):
        assert a.n_epochs_ == b.n_epochs_ == 3
        np.testing.assert_allclose(a.history_.train_loss, b.history_.train_loss, rtol=1e-4, atol=1e-5)
        for (name, wa), wb in zip(a.module_.state_dict().items(), b.module_.state_dict().values()):
            torch.testing.assert_close(wa.float(), wb.float(), rtol=1e-4, atol=1e-5, msg=lambda m: name + m)
    np.testing.assert_allclose(together.predict_proba(X), separate.predict_proba(X), rtol=1e-4, atol=1e-5)
    # Each member learnt its own network (its own seed), not a copy of the first.
    first, second = (m.module_.state_dict() for m in together.estimators_)
    assert not all(torch.equal(first[k], second[k]) for k in first)


def test_members_trained_together_with_dropout_and_mixup_learn():
    X, y = _data(n=32)
    est = EADCTransformerClassifier(**{**TINY, "max_epochs": 60, "blend_minirocket": False}, n_estimators=3,
                                    train_members_together=True).fit(X, y)
    for member in est.estimators_:  # 0.49 to 0.60 measured, and so for separate fits (mixup keeps the loss high)
        losses = member.history_.train_loss
        assert np.mean(losses[-5:]) < 0.75 * np.mean(losses[:5])
        assert member.best_epoch_ == len(losses) - 1
    assert est.score(X, y) >= 0.9


def test_members_trained_together_are_reproducible_and_leave_the_global_generator_alone():
    X, y = _data()
    params = {**TINY, "blend_minirocket": False, "n_estimators": 2, "train_members_together": True}
    torch.manual_seed(1)
    first = EADCTransformerClassifier(**params).fit(X, y).predict_proba(X)
    state = torch.get_rng_state()
    torch.manual_seed(2)  # another global state: the fit must not depend on it
    second = EADCTransformerClassifier(**params).fit(X, y).predict_proba(X)
    np.testing.assert_array_equal(first, second)
    torch.manual_seed(1)
    EADCTransformerClassifier(**params).fit(X, y)
    assert torch.equal(torch.get_rng_state(), state)


def test_stacked_members_forward_is_each_networks_forward_masks_included():
    est = EADCTransformerClassifier(**TINY).fit(*_data())
    models = [copy.deepcopy(est.module_) for _ in range(3)]
    for i, model in enumerate(models[1:], 1):  # three different networks
        with torch.no_grad():
            for p in model.parameters():
                p.add_(0.1 * i * torch.randn_like(p))
    stack = StackedMembers(models).eval()
    x = torch.randn(3, 5, 16, 2)
    valid = torch.arange(16).expand(3, 5, 16) < torch.tensor([16, 9, 12, 16, 5]).view(1, 5, 1)
    x = x * valid.unsqueeze(-1)
    out = stack(x, valid)
    for m, model in enumerate(models):
        torch.testing.assert_close(out[m], model.eval()(x[m], valid[m]), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(stack(x, None)[2], models[2](x[2], None), rtol=1e-5, atol=1e-5)


def test_each_member_is_clipped_by_its_own_gradient_norm():
    grads = [torch.randn(3, 4, 5) * torch.tensor([0.01, 1.0, 10.0]).view(3, 1, 1), torch.randn(3, 7)]
    weights = [torch.nn.Parameter(torch.zeros_like(g)) for g in grads]
    for w, g in zip(weights, grads):
        w.grad = g.clone()
    clip_each_member(weights, 1.0)
    for m in range(3):
        alone = [torch.nn.Parameter(torch.zeros_like(g[m])) for g in grads]
        for w, g in zip(alone, grads):
            w.grad = g[m].clone()
        torch.nn.utils.clip_grad_norm_(alone, 1.0)
        for w, a in zip(weights, alone):
            torch.testing.assert_close(w.grad[m], a.grad)


def test_weight_decay_of_stacked_weights_counts_the_shape_after_the_member_axis():
    bias, matrix = torch.nn.Parameter(torch.zeros(3, 4)), torch.nn.Parameter(torch.zeros(3, 4, 4))
    optimizer = build_optimizer("adamw", [bias, matrix], 1e-3, weight_decay=0.1, member_axis=True)
    decay = {id(p): group["weight_decay"] for group in optimizer.param_groups for p in group["params"]}
    assert decay == {id(matrix): 0.1, id(bias): 0.0}


def test_members_that_cannot_train_together_are_fitted_separately_with_a_warning():
    X, y = _data()
    with pytest.warns(UserWarning, match="differ in their networks"):
        est = EADCTransformerClassifier(**{**TINY, "blend_minirocket": False}, n_estimators=2, max_tokens=(16, 8),
                                        train_members_together=True).fit(X, y)
    assert len(est.estimators_) == 2
    # A plateau schedule is seen only once the networks are built: trained one by one, as separate fits are,
    # to the same numbers.
    params = {**TINY, "blend_minirocket": False, "n_estimators": 2, "lr_schedule": "plateau"}
    with pytest.warns(UserWarning, match="plateau"):
        together = EADCTransformerClassifier(**params, train_members_together=True).fit(X, y)
    separate = EADCTransformerClassifier(**params, train_members_together=False).fit(X, y)
    np.testing.assert_array_equal(together.predict_proba(X), separate.predict_proba(X))


@pytest.mark.parametrize("option", [{"checkpointing": True}, {"mixed_precision": "bf16"}], ids=lambda o: next(iter(o)))
def test_options_vmap_cannot_trace_fit_the_members_separately(option):
    X, y = _data()
    params = {**TINY, "blend_minirocket": False, "n_estimators": 2, **option}
    with pytest.warns(UserWarning, match=next(iter(option))):
        together = EADCTransformerClassifier(**params, train_members_together=True).fit(X, y)
    separate = EADCTransformerClassifier(**params, train_members_together=False).fit(X, y)
    np.testing.assert_array_equal(together.predict_proba(X), separate.predict_proba(X))


def test_members_that_vmap_cannot_batch_are_trained_separately_to_the_same_numbers():
    # Crossed attention picks rows with a shape that depends on the data (nonzero), which vmap cannot batch:
    # the attempt fails at its first step and every member trains as a separate fit would, shuffles included.
    X, y = _data()
    params = {**TINY, "blend_minirocket": False, "n_estimators": 2, "attention": "crossed"}
    with pytest.warns(UserWarning, match="training them together failed"):
        together = EADCTransformerClassifier(**params, train_members_together=True).fit(X, y)
    separate = EADCTransformerClassifier(**params, train_members_together=False).fit(X, y)
    np.testing.assert_array_equal(together.predict_proba(X), separate.predict_proba(X))


def test_members_with_a_validation_split_stop_early_each_as_a_separate_fit_would():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 1, 12))
    y = X[:, 0, :4].sum(1) + 0.3 * rng.normal(size=60)
    params = {**EADCTransformerRegressor._get_test_params(), "validation_fraction": 0.25, "n_estimators": 3,
              "max_epochs": 40, "patience": 3, "dropout": 0.0, "augmentation": None, "optimizer": "sgd",
              "lr": 0.05}
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        together = EADCTransformerRegressor(**params, train_members_together=True).fit(X, y)
    separate = EADCTransformerRegressor(**params, train_members_together=False).fit(X, y)
    stopped = [m.n_epochs_ for m in separate.estimators_]
    assert min(stopped) < 40  # early stopping did stop some member
    assert [m.n_epochs_ for m in together.estimators_] == stopped
    assert [m.best_epoch_ for m in together.estimators_] == [m.best_epoch_ for m in separate.estimators_]
    for a, b in zip(together.estimators_, separate.estimators_):
        np.testing.assert_allclose(a.history_.val_loss, b.history_.val_loss, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(together.predict(X), separate.predict(X), rtol=1e-4, atol=1e-5)


def test_auto_trains_members_together_on_cuda_only(monkeypatch):
    from tsrep.estimators import _ensemble

    est = EADCTransformerClassifier(n_estimators=3)
    assert not _ensemble.members_train_together(est)  # "auto" on a CPU: separate fits
    monkeypatch.setattr(_ensemble, "resolve_device", lambda device: torch.device("cuda"))
    assert _ensemble.members_train_together(est)
    assert not _ensemble.members_train_together(est.set_params(callbacks=[]))


def test_members_trained_together_show_one_progress_bar_when_verbose(capsys):
    X, y = _data()
    EADCTransformerClassifier(**{**TINY, "blend_minirocket": False}, n_estimators=2, train_members_together=True,
                              verbose=True).fit(X, y)
    assert "2 members" in capsys.readouterr().err


def test_stacked_members_draw_their_own_cheaper_dropout_masks():
    from torch.func import vmap

    from tsrep.nn import Dropout
    from tsrep.nn._compile import stacked_members

    x = torch.ones(3, 200, 100)
    with stacked_members():
        out = vmap(Dropout(0.25).train(), randomness="different")(x)
    kept = out != 0
    assert abs(float(kept.float().mean()) - 0.75) < 0.01
    torch.testing.assert_close(out[kept], torch.full_like(out[kept], 1 / 0.75), rtol=1e-3, atol=0)
    # Independent per member: two masks agree on 0.75^2 + 0.25^2 = 0.625 of the entries, not on all.
    assert abs(float((kept[0] == kept[1]).float().mean()) - 0.625) < 0.01
