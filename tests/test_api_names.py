"""One name for one thing across the API: histories, checkpoint directories, tuning results, lr schedules,
and the tuner leaving alone what the user set."""

from __future__ import annotations

import functools
import logging

import numpy as np
import optuna
import pytest
import torch

from tsrep import EADCTransformerClassifier, TSRepEncoder
from tsrep.estimators import BackboneClassifier
from tsrep.training import History, fit_classifier
from tsrep.training.callbacks import Callback
from tsrep.training.resume import PRETRAIN_STATE_FILE
from tsrep.tuning import SearchSpace, tune
from tsrep.tuning.tune import TuneResult

TINY = EADCTransformerClassifier._get_test_params()


def _data(n=24, c=1, t=16, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, c, t))
    y = np.array([0, 1] * (n // 2))
    X[y == 1, :, : t // 2] += 1.5
    return X, y


class _LearningRates(Callback):
    def __init__(self):
        self.lrs = []

    def on_epoch_end(self, epoch, logs):
        self.lrs.append(logs["lr"])


# ----------------------------------------------------------------- one history type
def test_fit_classifier_and_the_estimators_return_the_same_history_type_and_fields():
    X, y = _data()
    clf = EADCTransformerClassifier(**{**TINY, "max_epochs": 3, "validation_fraction": 0.25}).fit(X, y)
    Xt = torch.randn(40, 6)
    yt = (Xt[:, 0] > 0).long()
    history = fit_classifier(torch.nn.Linear(6, 2), Xt, yt, epochs=3, batch_size=8, eval_data=(Xt, yt))
    assert type(history) is type(clf.history_) is History
    for h in (history, clf.history_):  # one entry per epoch in every per-epoch field
        assert len(h.train_loss) == len(h.val_loss) == len(h.val_score) == len(h.epoch_seconds) == 3
        assert all(s > 0 for s in h.epoch_seconds) and all(0 <= v <= 1 for v in h.val_score)
    assert history.val_loss[-1] < history.val_loss[0]  # cross-entropy on eval_data, falling as it learns
    assert not hasattr(history, "eval_accuracy")


# ----------------------------------------------------------------- checkpoint directories
def test_the_encoder_and_the_estimators_take_a_checkpoint_directory_by_the_same_name(tmp_path):
    assert "checkpoint_dir" in TSRepEncoder().get_params() and "checkpoint" not in TSRepEncoder().get_params()
    assert "checkpoint_dir" in EADCTransformerClassifier().get_params()
    X, _ = _data()
    TSRepEncoder(**{**TSRepEncoder._get_test_params(), "pretrain_epochs": 1}, checkpoint_dir=tmp_path / "enc").fit(X)
    EADCTransformerClassifier(**{**TINY, "pretrain_epochs": 1}, checkpoint_dir=tmp_path / "clf").fit(X, _data()[1])
    # Both hold their pretraining state under the same name in the directory given.
    assert (tmp_path / "enc" / PRETRAIN_STATE_FILE).is_file() and (tmp_path / "clf" / PRETRAIN_STATE_FILE).is_file()
    (tmp_path / "file").write_text("")
    with pytest.raises(NotADirectoryError, match="checkpoint_dir="):
        TSRepEncoder(**TSRepEncoder._get_test_params(), checkpoint_dir=tmp_path / "file").fit(X)


# ----------------------------------------------------------------- the tuning result
def test_a_tune_result_is_the_sequence_study_best_estimator():
    study = optuna.create_study(direction="maximize")
    best = EADCTransformerClassifier()
    result = TuneResult(study, best, {"alpha": 0.1}, 0.9)
    assert result[0] is study and result[1] is best and result[-1] is best
    assert len(result) == 2 and tuple(result) == (study, best) and result[:1] == (study,)
    with pytest.raises(IndexError):
        result[2]
    first, second = result
    assert first is study and second is best and result.best_params == {"alpha": 0.1}


# ----------------------------------------------------------------- lr_schedule: a torch scheduler
def test_lr_schedule_takes_a_torch_scheduler_built_on_the_optimizer_and_steps_it_every_epoch():
    X, y = _data()
    params = {**TINY, "max_epochs": 3, "lr": 0.1}
    seen = _LearningRates()
    step = functools.partial(torch.optim.lr_scheduler.StepLR, step_size=1, gamma=0.5)
    EADCTransformerClassifier(**params, lr_schedule=step, callbacks=[seen]).fit(X, y)
    assert seen.lrs == pytest.approx([0.1, 0.05, 0.025])
    seen = _LearningRates()  # the backbones' estimators take it alike
    BackboneClassifier(**{**BackboneClassifier._get_test_params(), "max_epochs": 3, "lr": 0.1},
                       lr_schedule=step, callbacks=[seen]).fit(X, y)
    assert seen.lrs == pytest.approx([0.1, 0.05, 0.025])
    # ReduceLROnPlateau is stepped with the monitored loss
    plateau = functools.partial(torch.optim.lr_scheduler.ReduceLROnPlateau, patience=0, factor=0.1, threshold=10.0)
    seen = _LearningRates()
    EADCTransformerClassifier(**params, lr_schedule=plateau, callbacks=[seen]).fit(X, y)
    assert seen.lrs == pytest.approx([0.1, 0.01, 0.001])  # no epoch improves by the relative threshold 10
    with pytest.raises(TypeError, match=r"lr_schedule=.* must return a torch.optim.lr_scheduler scheduler.*got int"):
        EADCTransformerClassifier(**params, lr_schedule=lambda optimizer: 3).fit(X, y)
    with pytest.raises(ValueError, match="'lr_schedule' parameter"):
        EADCTransformerClassifier(**params, lr_schedule="step").fit(X, y)


def test_fit_classifier_takes_a_torch_scheduler_too():
    seen = _LearningRates()
    X = torch.randn(16, 4)
    fit_classifier(torch.nn.Linear(4, 2), X, (X[:, 0] > 0).long(), epochs=3, batch_size=8, lr=0.1, callbacks=seen,
                   lr_schedule=functools.partial(torch.optim.lr_scheduler.StepLR, step_size=1, gamma=0.5))
    assert seen.lrs == pytest.approx([0.1, 0.05, 0.025])


# ----------------------------------------------------------------- the default search space and the user's values
def test_the_default_search_space_keeps_what_the_user_set_on_the_estimator(caplog):
    est = EADCTransformerClassifier(d_model=16, n_heads=2)
    space = SearchSpace(est)
    assert "d_model" not in space.distributions and space.kept == {"d_model": 16}
    assert {"alpha", "beta", "p", "n_blocks"} <= set(space.distributions)
    assert "d_model" in SearchSpace(est, {"d_model": [16, 32]}).distributions  # named in the space: tuned
    assert "d_model" in SearchSpace(EADCTransformerClassifier()).distributions  # left at its default: tuned

    X, y = _data()
    with caplog.at_level(logging.INFO, logger="tsrep.tuning"):
        study, best = tune(EADCTransformerClassifier(**{**TINY, "max_epochs": 1}), X, y, n_trials=1,
                           storage="memory", seed=0)
    # TINY sets d_model=8, n_blocks=1, p=0.5: only alpha and beta are searched, the rest is the user's.
    assert set(study.trials[0].params) == {"alpha", "beta"}
    assert (best.d_model, best.n_blocks, best.p) == (TINY["d_model"], TINY["n_blocks"], TINY["p"])
    assert "leaves d_model=8" in caplog.text
