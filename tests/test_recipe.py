"""The training recipe: step budget, learning-rate schedules, the "auto" validation rule, class and
sample weights, label smoothing, seed ensembles, the automatic token rule, and their bad input."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from tsrep import EADCTransformerClassifier, EADCTransformerRegressor
from tsrep.estimators._tasks import (
    AUTO_MAX_EPOCHS,
    AUTO_MIN_STEPS,
    AUTO_MIN_VALIDATION_CASES,
    AUTO_PATIENCE,
    AUTO_STEPS_PER_CLASS,
    BLENDED_BUDGET_SHARE,
    resolve_max_epochs,
    resolve_min_steps,
    resolve_patience,
    resolve_validation_fraction,
)
from tsrep.training.losses import case_weights, class_weights, classification_loss
from tsrep.models import get_model
from tsrep.nn.patching import auto_patch, resolve_max_tokens
from tsrep.training.callbacks import Callback
from tsrep.training.schedules import LRSchedule

TINY = dict(d_model=8, n_blocks=1, n_heads=2, p=0.5, batch_size=8, max_epochs=2, min_steps=0, random_state=0)


def _toy(n=20, t=24, seed=0):
    rng = np.random.default_rng(seed)
    y = np.array(["a", "b"] * (n // 2))
    X = rng.normal(size=(n, 1, t))
    X[y == "b", 0, : t // 2] += 2.0  # learnable: class b is shifted in its first half
    return X, y


def test_auto_validation_takes_no_split_on_a_small_training_set():
    assert resolve_validation_fraction("auto", 20) == 0.0
    assert resolve_validation_fraction("auto", 5 * AUTO_MIN_VALIDATION_CASES["classification"] - 5) == 0.0
    assert resolve_validation_fraction("auto", 5 * AUTO_MIN_VALIDATION_CASES["classification"]) == pytest.approx(0.2)
    assert resolve_validation_fraction(0.3, 20) == pytest.approx(0.3)
    # A regressor's score is continuous: it holds out a fifth from 10 validation cases (TRAIN >= 46) on.
    assert resolve_validation_fraction("auto", 20, "regression") == 0.0
    assert resolve_validation_fraction("auto", 45, "regression") == 0.0
    assert resolve_validation_fraction("auto", 46, "regression") == pytest.approx(0.2)
    assert resolve_validation_fraction(0.0, 500, "regression") == 0.0
    X, y = _toy(20)
    clf = EADCTransformerClassifier(**TINY).fit(X, y)
    assert clf.validation_fraction_ == 0.0
    assert clf.history_.val_score == [] and clf.best_epoch_ == clf.n_epochs_ - 1


def test_min_steps_raises_the_number_of_epochs():
    X, y = _toy(20)
    # 20 cases in batches of 8: 3 steps per epoch (the trailing 4 cases form a batch), 30 steps -> 10 epochs.
    clf = EADCTransformerClassifier(**{**TINY, "min_steps": 30, "max_epochs": 1}).fit(X, y)
    assert clf.n_epochs_ == math.ceil(30 / 3)
    clf = EADCTransformerClassifier(**{**TINY, "min_steps": 0, "max_epochs": 4}).fit(X, y)
    assert clf.n_epochs_ == 4


def test_auto_min_steps_grows_with_the_number_of_classes():
    assert resolve_min_steps("auto", 2) == AUTO_MIN_STEPS == 800
    assert resolve_min_steps("auto", 37) == 37 * AUTO_STEPS_PER_CLASS == 2220  # Adiac's 37 classes
    assert resolve_min_steps("auto", None) == AUTO_MIN_STEPS  # a regressor
    assert resolve_min_steps(0, 37) == 0 and resolve_min_steps(50, 2) == 50  # an integer is taken as given
    # An explicit epoch count is the one trained: the "auto" floor applies only with max_epochs="auto".
    assert resolve_min_steps("auto", 2, max_epochs=1) == 0 and resolve_min_steps(50, 2, max_epochs=1) == 50


def test_a_blended_network_trains_an_eighth_of_the_auto_epochs_and_step_floor_but_every_step_a_class():
    # With a MiniRocket averaged into the answer, the epochs and the 800-step floor are cut to an eighth, not the 60
    # steps a class (problems of many classes lost with 30); a given number is kept.
    assert resolve_max_epochs("auto") == AUTO_MAX_EPOCHS == 100 and resolve_max_epochs("auto", blended=True) == 12
    assert resolve_min_steps(0, None, blended=True) == 0 and round(AUTO_MIN_STEPS * BLENDED_BUDGET_SHARE) == 100
    # The 100-step floor is below 60 a class from two classes on: 120 for two, 180 for three.
    assert resolve_min_steps("auto", 2, blended=True) == 120 and resolve_min_steps("auto", 3, blended=True) == 180
    assert resolve_min_steps("auto", 4, blended=True) == 240  # FaceFour's and Car's 4 classes: 60 a class
    assert resolve_min_steps("auto", 10, blended=True) == 600  # the AllGestureWiimote problems' 10 classes
    assert resolve_min_steps("auto", 37, blended=True) == 2220 == resolve_min_steps("auto", 37)  # Adiac
    assert resolve_max_epochs(7, blended=True) == 7 and resolve_min_steps(30, 37, blended=True) == 30


class StopAfterFirstEpoch(Callback):
    planned: list = []  # class-level: the estimator may copy its callbacks

    def on_fit_start(self, info):
        StopAfterFirstEpoch.planned.append(info["epochs"])

    def on_epoch_end(self, epoch, logs):
        return True


def test_auto_min_steps_is_what_the_fit_trains():
    X, _ = _toy(20)
    y = np.arange(20)  # 20 classes of one case each: 20 * 60 = 1200 steps ...
    clf = EADCTransformerClassifier(
        **{**TINY, "min_steps": "auto", "max_epochs": "auto", "batch_size": 16, "blend_minirocket": False}
    )
    # ... in 2 steps per epoch: 600 epochs planned (the callback stops the fit after the first).
    clf.set_params(callbacks=StopAfterFirstEpoch()).fit(X, y)
    assert clf.min_steps_ == 1200
    assert StopAfterFirstEpoch.planned[-1] == 600 and clf.n_epochs_ == 1


def test_an_explicit_max_epochs_is_the_number_trained():
    # min_steps="auto" would raise 1 epoch of 2 steps to 600 epochs on this set; with max_epochs given it is 0.
    X, y = _toy(20)
    clf = EADCTransformerClassifier(**{**TINY, "min_steps": "auto", "max_epochs": 1, "batch_size": 16}).fit(X, y)
    assert clf.min_steps_ == 0 and clf.n_epochs_ == 1
    both = EADCTransformerClassifier(**{**TINY, "min_steps": 6, "max_epochs": 1, "batch_size": 16}).fit(X, y)
    assert both.n_epochs_ == 3  # given both, the floor raises the epochs: 6 steps at 2 an epoch


@pytest.mark.parametrize("blend, max_epochs, min_steps, epochs", [(False, 100, 800, 400), ("auto", 12, 120, 60)])
def test_the_auto_budget_a_fit_plans_is_cut_by_the_minirocket_blend(blend, max_epochs, min_steps, epochs):
    X, y = _toy(20)  # two classes: 800 steps (120 blended: 60 a class) in 2 steps per epoch
    clf = EADCTransformerClassifier(
        **{**TINY, "min_steps": "auto", "max_epochs": "auto", "batch_size": 16, "blend_minirocket": blend},
        callbacks=StopAfterFirstEpoch(),
    ).fit(X, y)
    assert (clf.blend_minirocket_, clf.max_epochs_, clf.min_steps_) == (blend == "auto", max_epochs, min_steps)
    assert StopAfterFirstEpoch.planned[-1] == epochs and clf.n_epochs_ == 1


def test_an_ensembles_members_and_a_regressor_train_the_budget_of_their_blend():
    X, y = _toy(20)
    params = {**TINY, "min_steps": "auto", "max_epochs": "auto", "batch_size": 16, "callbacks": StopAfterFirstEpoch()}
    ens = EADCTransformerClassifier(**params, n_estimators=2).fit(X, y)
    assert ens.blend_minirocket_ and ens.minirocket_ is not None  # the ensemble blends its members' mean ...
    # ... whose networks blend nothing themselves but train what a blended estimator's network would.
    assert [m.blend_minirocket_ for m in ens.estimators_] == [False, False]
    assert [(m.max_epochs_, m.min_steps_) for m in ens.estimators_] == [(12, 120)] * 2
    assert StopAfterFirstEpoch.planned[-2:] == [60, 60]
    # An ensemble without the blend: its members train the network alone's budget, and a given budget is kept.
    alone = EADCTransformerClassifier(**params, n_estimators=2, blend_minirocket=False).fit(X, y)
    assert [(m.max_epochs_, m.min_steps_) for m in alone.estimators_] == [(100, 800)] * 2
    given = EADCTransformerClassifier(**{**params, "max_epochs": 3, "min_steps": 10}, n_estimators=2).fit(X, y)
    assert [(m.max_epochs_, m.min_steps_) for m in given.estimators_] == [(3, 10)] * 2
    # A regressor blends too (weighed by held-out errors), and its network trains the same smaller budget.
    reg = EADCTransformerRegressor(**params).fit(X, (y == "b").astype(float))
    assert reg.blend_minirocket_ and (reg.max_epochs_, reg.min_steps_) == (12, 100)
    reg_alone = EADCTransformerRegressor(**params, blend_minirocket=False).fit(X, (y == "b").astype(float))
    assert (reg_alone.max_epochs_, reg_alone.min_steps_) == (AUTO_MAX_EPOCHS, AUTO_MIN_STEPS)


def test_auto_patience_stops_a_classifier_early_only_under_a_schedule_that_does_not_anneal():
    assert resolve_patience("auto", "onecycle") is None and resolve_patience("auto", "cosine") is None
    assert resolve_patience("auto", "plateau") == resolve_patience("auto", "none") == AUTO_PATIENCE == 20
    assert resolve_patience("auto", lambda optimizer, total_steps: None) == AUTO_PATIENCE  # a user's schedule
    assert resolve_patience(3, "onecycle") == 3 and resolve_patience(None, "plateau") is None  # as given
    assert resolve_patience("auto", "onecycle", "regression") == AUTO_PATIENCE  # a continuous validation error


def test_a_validation_split_under_onecycle_trains_the_whole_budget_and_keeps_the_best_epoch():
    # Labels without signal: the validation score cannot improve for long, which with patience 2 stops the fit
    # early; "auto" under the default one-cycle schedule trains every epoch and keeps the best one.
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(40, 1, 16)), np.array(["a", "b"] * 20)
    params = {**TINY, "max_epochs": 12, "validation_fraction": 0.25}
    auto = EADCTransformerClassifier(**params).fit(X, y)
    assert auto.patience_ is None and auto.n_epochs_ == 12 and len(auto.history_.val_score) == 12
    assert auto.best_epoch_ == int(np.argmax(auto.history_.val_score))  # first of the best (ties: lower val loss)
    early = EADCTransformerClassifier(**params, patience=2).fit(X, y)
    assert early.patience_ == 2 and early.n_epochs_ < 12


@pytest.mark.parametrize("name", ["onecycle", "cosine"])
def test_per_step_schedules_warm_up_peak_and_anneal(name):
    param = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.AdamW([param], lr=1e-2)
    schedule = LRSchedule(name, opt, total_steps=100)
    lrs = []
    for _ in range(100):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        schedule.after_step()
    peak = int(np.argmax(lrs))
    assert lrs[0] < 0.5e-2 and max(lrs) == pytest.approx(1e-2, rel=1e-3)
    assert 0 < peak < 40 and lrs[-1] < 1e-4
    assert all(a >= b - 1e-12 for a, b in zip(lrs[peak:], lrs[peak + 1 :]))  # never rises after the peak


def test_plateau_schedule_halves_the_lr_when_the_loss_stalls():
    param = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.AdamW([param], lr=1e-2)
    schedule = LRSchedule("plateau", opt, total_steps=10, plateau_patience=2)
    for loss in [1.0, 0.9, 0.9, 0.9, 0.9]:
        schedule.after_epoch(loss)
    assert opt.param_groups[0]["lr"] == pytest.approx(5e-3)


def test_balanced_class_weight_weights_the_loss_as_documented():
    classes = np.array(["a", "b", "c"])
    index = np.array([0, 0, 0, 0, 0, 0, 1, 1, 2, 2])  # 6 / 2 / 2 cases
    per_class = class_weights("balanced", classes, index)
    # scikit-learn's rule: n_cases / (n_classes * count)
    np.testing.assert_allclose(per_class, [10 / 18, 10 / 6, 10 / 6])
    weights = case_weights(None, per_class, index)
    assert float(weights.mean()) == pytest.approx(1.0)  # scaled to mean 1: the lr keeps its meaning
    # Each class then carries the same share of the loss.
    shares = [float(weights[index == k].sum()) for k in range(3)]
    np.testing.assert_allclose(shares, [10 / 3] * 3, rtol=1e-6)
    logits = torch.randn(10, 3, generator=torch.Generator().manual_seed(0))
    targets = torch.as_tensor(index)
    got = classification_loss(0.0)(logits, targets, weights)
    per_case = F.cross_entropy(logits, targets, reduction="none")
    assert float(got) == pytest.approx(float((per_case * weights).sum() / 10), rel=1e-6)
    # A dict names classes; unnamed classes weigh 1.
    np.testing.assert_allclose(class_weights({"c": 3.0}, classes, index), [1.0, 1.0, 3.0])


def test_label_smoothing_is_torch_cross_entropy_with_smoothing():
    logits = torch.randn(6, 4, generator=torch.Generator().manual_seed(1))
    targets = torch.tensor([0, 1, 2, 3, 0, 1])
    expected = F.cross_entropy(logits, targets, label_smoothing=0.1)
    assert float(classification_loss(0.1)(logits, targets, None)) == pytest.approx(float(expected), rel=1e-6)


def test_auto_label_smoothing_is_0_1_for_a_classifier_and_none_for_a_regressor():
    X, y = _toy(20)
    auto = EADCTransformerClassifier(**TINY).fit(X, y)
    assert auto.label_smoothing == "auto" and auto.label_smoothing_ == 0.1
    explicit = EADCTransformerClassifier(**{**TINY, "label_smoothing": 0.1}).fit(X, y)
    unsmoothed = EADCTransformerClassifier(**{**TINY, "label_smoothing": 0.0}).fit(X, y)
    np.testing.assert_array_equal(auto.predict_proba(X), explicit.predict_proba(X))  # the loss "auto" trains on
    assert not np.allclose(auto.predict_proba(X), unsmoothed.predict_proba(X))
    regressor = EADCTransformerRegressor(**TINY).fit(X, X[:, 0, 0])
    assert regressor.label_smoothing == "auto" and not hasattr(regressor, "label_smoothing_")


def test_uniform_sample_weights_change_nothing_and_weights_reach_the_loss():
    X, y = _toy(20)
    plain = EADCTransformerClassifier(**TINY).fit(X, y).predict_proba(X)
    scaled = EADCTransformerClassifier(**TINY).fit(X, y, sample_weight=np.full(20, 3.0)).predict_proba(X)
    np.testing.assert_allclose(plain, scaled, atol=1e-6)
    same = EADCTransformerClassifier(**TINY, class_weight={"a": 2.0, "b": 2.0}).fit(X, y).predict_proba(X)
    np.testing.assert_allclose(plain, same, atol=1e-6)
    weights = np.where(y == "a", 5.0, 0.2)
    weighted = EADCTransformerClassifier(**TINY).fit(X, y, sample_weight=weights).predict_proba(X)
    assert not np.allclose(plain, weighted, atol=1e-4)
    # Up-weighting class a moves probability towards it.
    assert weighted[:, 0].mean() > plain[:, 0].mean()


def test_ensemble_of_two_averages_its_members_exactly():
    X, y = _toy(20)
    # The members' mean alone (the MiniRocket blended into it: tests/test_minirocket_blend.py).
    ens = EADCTransformerClassifier(**TINY, n_estimators=2, blend_minirocket=False).fit(X, y)
    assert len(ens.estimators_) == 2
    probas = [m.predict_proba(X) for m in ens.estimators_]
    assert not np.allclose(probas[0], probas[1])  # members differ in seed
    np.testing.assert_array_equal(ens.predict_proba(X), (probas[0] + probas[1]) / 2)
    assert ens.n_parameters_ == sum(m.n_parameters_ for m in ens.estimators_)
    # The same random_state gives the same members; n_jobs=2 fits them in parallel to the same result.
    again = EADCTransformerClassifier(**TINY, n_estimators=2, n_jobs=2, blend_minirocket=False).fit(X, y)
    np.testing.assert_allclose(again.predict_proba(X), ens.predict_proba(X), atol=1e-6)


def test_ensemble_members_take_the_token_budgets_in_turn():
    X, y = _toy(20, t=64)
    ens = EADCTransformerClassifier(**TINY, n_estimators=4, max_tokens=(8, 4), blend_minirocket=False).fit(X, y)
    # 64 steps: at most 8 tokens -> stride 8, at most 4 -> stride 16; members 2 and 3 take the budgets again.
    budgets = [(m.max_tokens, m.patch_len_, m.patch_stride_) for m in ens.estimators_]
    assert budgets == [(8, 16, 8), (4, 32, 16), (8, 16, 8), (4, 32, 16)]
    assert [m.module_.encoder.n_positions for m in ens.estimators_] == [8, 4, 8, 4]
    probas = [m.predict_proba(X) for m in ens.estimators_]
    np.testing.assert_array_equal(ens.predict_proba(X), (probas[0] + probas[1] + probas[2] + probas[3]) / 4)
    # A member is the single model of its seed and budget.
    alone = EADCTransformerClassifier(**{**TINY, "random_state": ens.estimators_[1].random_state}, max_tokens=4,
                                      blend_minirocket=False)
    np.testing.assert_allclose(alone.fit(X, y).predict_proba(X), probas[1], atol=1e-6)


@pytest.mark.parametrize("other", [{"patch_len": 8}, {"patch_len": None}, {"downsample": 4}, {"pretrain_epochs": 1}])
def test_token_budgets_without_the_auto_rule_are_refused(other):
    X, y = _toy(20, t=64)
    with pytest.raises(ValueError, match=r"max_tokens=\(8, 4\) sets the token budgets of patch_len='auto'"):
        EADCTransformerClassifier(**{**TINY, "n_estimators": 2, "max_tokens": (8, 4), **other}).fit(X, y)


def test_regression_ensemble_averages_predictions():
    X, _ = _toy(20)
    y = X[:, 0, :12].mean(axis=1)
    reg = EADCTransformerRegressor(**TINY, n_estimators=2, blend_minirocket=False).fit(X, y)
    np.testing.assert_array_equal(reg.predict(X), np.mean([m.predict(X) for m in reg.estimators_], axis=0))


def test_auto_tokens_rule():
    assert auto_patch(12, 29) is None  # JapaneseVowels: the paper's per-step tokens
    assert auto_patch(1, 24) is None  # ItalyPowerDemand
    assert auto_patch(1, 150) == (8, 4)  # GunPoint: 37 tokens
    patch_len, stride = auto_patch(1, 2000)
    assert patch_len == 2 * stride and math.ceil(2000 / stride) <= 64
    assert auto_patch(1, 427, max_tokens=32) == (28, 14)  # OSULeaf: 31 tokens instead of 61
    assert auto_patch(1, 80, max_tokens=16) == (10, 5) and auto_patch(1, 60, max_tokens=16) == (8, 4)
    X, y = _toy(20, t=40)
    clf = EADCTransformerClassifier(**TINY).fit(X, y)
    assert (clf.patch_len_, clf.patch_stride_) == (8, 4)
    per_step = EADCTransformerClassifier(**TINY, patch_len=None).fit(X, y)
    assert per_step.patch_len_ is None and per_step.module_.encoder.patching is None
    assert clf.module_.encoder.patching.stride == 4


def test_auto_token_budget_is_32_for_a_classifier_and_64_for_a_regressor():
    assert resolve_max_tokens("auto", "classification") == 32
    assert resolve_max_tokens("auto", "regression") == 64
    assert resolve_max_tokens(48, "classification") == 48
    # 200 steps: 32 tokens -> stride ceil(200 / 32) = 7; 64 tokens -> stride max(4, ceil(200 / 64)) = 4.
    for n_cases in (64, 20):  # small and larger training sets alike
        clf = EADCTransformerClassifier(**TINY).fit(*_toy(n_cases, t=200))
        assert (clf.max_tokens_, clf.patch_len_, clf.patch_stride_) == (32, 14, 7)
        assert clf.module_.encoder.n_positions == 29  # ceil((200 - 14) / 7) + 1 windows
    X, _ = _toy(64, t=200)
    reg = EADCTransformerRegressor(**TINY).fit(X, X[:, 0, :20].mean(axis=1))
    assert (reg.max_tokens_, reg.patch_stride_) == (64, 4)
    # An explicit budget is kept whatever the size of TRAIN.
    assert EADCTransformerClassifier(**TINY, max_tokens=64).fit(*_toy(64, t=200)).patch_stride_ == 4


def test_baselines_train_with_the_same_recipe():
    """A baseline's fit runs the shared recipe itself: the step budget, no split below 100 validation cases,
    and the one-cycle schedule's learning rates (up over the first quarter, then down), read from the fit."""
    X, y = _toy(20)
    lrs = []

    class RecordLR(Callback):
        def on_epoch_end(self, epoch, logs):
            lrs.append(logs["lr"])

    resnet = get_model("resnet", "classification", d_model=8, n_blocks=1, batch_size=8, max_epochs=1,
                       min_steps=24, random_state=0, callbacks=[RecordLR()]).fit(X, y)
    assert resnet.n_epochs_ == 8 and resnet.validation_fraction_ == 0.0 and len(lrs) == 8
    peak = int(np.argmax(lrs))
    assert 0 < peak < 4 and max(lrs) == pytest.approx(1e-3, rel=0.05)  # the default lr is the cycle's peak
    assert lrs[0] < 0.8 * max(lrs) and lrs[-1] < 0.01 * max(lrs)  # (logged after each epoch)
    assert all(a >= b for a, b in zip(lrs[peak:], lrs[peak + 1 :]))


@pytest.mark.parametrize(
    "params, match",
    [
        ({"n_estimators": 0}, "n_estimators"),
        ({"lr_schedule": "triangular"}, "lr_schedule"),
        ({"label_smoothing": 1.0}, "label_smoothing"),
        ({"label_smoothing": -0.1}, "label_smoothing"),
        ({"class_weight": {"zebra": 2.0}}, "class_weight names class 'zebra'"),
        ({"class_weight": "balance"}, "class_weight"),
        ({"validation_fraction": "sometimes"}, "validation_fraction"),
        ({"weight_decay": -1.0}, "weight_decay"),
        ({"min_steps": -5}, "min_steps"),
        ({"min_steps": "many"}, r"The 'min_steps' parameter of EADCTransformerClassifier must be a str among \{'auto'\} or an int"),
        ({"batch_size": 1}, r"The 'batch_size' parameter of EADCTransformerClassifier must be an int in the range \[2, inf\)"),
        ({"n_jobs": 0}, "n_jobs"),
    ],
)
def test_bad_recipe_parameters_are_named(params, match):
    X, y = _toy(20)
    with pytest.raises(ValueError, match=match):
        EADCTransformerClassifier(**{**TINY, **params}).fit(X, y)


@pytest.mark.parametrize(
    "weights, match",
    [
        (-np.ones(20), "sample_weight must be >= 0"),
        (np.r_[np.nan, np.ones(19)], "NaN"),
        (np.ones(7), "one weight per case"),
        (np.zeros(20), "zero for every case"),
    ],
)
def test_bad_sample_weight_is_named(weights, match):
    X, y = _toy(20)
    with pytest.raises(ValueError, match=match):
        EADCTransformerClassifier(**TINY).fit(X, y, sample_weight=weights)


def test_regressor_refuses_classification_only_options():
    X, _ = _toy(20)
    y = X[:, 0, 0]
    with pytest.raises(ValueError, match="label_smoothing applies to classification only"):
        EADCTransformerRegressor(**TINY, label_smoothing=0.1).fit(X, y)
    with pytest.raises(ValueError, match="class_weight applies to classification only"):
        EADCTransformerRegressor(**TINY, class_weight="balanced").fit(X, y)


def test_set_params_after_fit_does_not_break_unpickling():
    import pickle

    X, y = _toy(20)
    clf = EADCTransformerClassifier(**TINY).fit(X, y)
    before = clf.predict_proba(X)
    clf.set_params(n_blocks=2, d_model=16)  # the fitted network keeps its own architecture
    again = pickle.loads(pickle.dumps(clf))
    np.testing.assert_allclose(again.predict_proba(X), before, atol=1e-6)
    assert again.get_params()["n_blocks"] == 2  # the user's parameters are kept as set
