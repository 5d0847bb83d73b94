"""Estimator behaviour: input formats, masks, missing values, reproducibility, clear errors."""

import os

import numpy as np
import pytest
import torch

from helpers import two_class_series
from tsrep import EADCTransformerClassifier, EADCTransformerRegressor

TINY = EADCTransformerClassifier._get_test_params()


_data = two_class_series


def test_same_random_state_gives_identical_predictions():
    X, y = _data()
    a = EADCTransformerClassifier(**TINY).fit(X, y).predict_proba(X)
    b = EADCTransformerClassifier(**TINY).fit(X, y).predict_proba(X)
    np.testing.assert_array_equal(a, b)
    c = EADCTransformerClassifier(**{**TINY, "random_state": 1}).fit(X, y).predict_proba(X)
    assert not np.array_equal(a, c)


def test_fit_leaves_global_torch_rng_alone():
    X, y = _data()
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    EADCTransformerClassifier(**TINY).fit(X, y)
    torch.testing.assert_close(torch.rand(3), expected)


def test_input_formats_agree_and_unequal_length_is_native():
    X, y = _data()
    clf = EADCTransformerClassifier(**TINY).fit(X, y)
    as_list = clf.predict_proba([x for x in X])
    np.testing.assert_allclose(as_list, clf.predict_proba(X), atol=1e-6)
    # Univariate 2-D input is read as (n_cases, n_timepoints).
    uni = EADCTransformerRegressor(**TINY).fit(X[:, 0], X[:, 0].mean(1))
    assert uni.predict(X[:, 0]).shape == (len(X),)
    # A ragged list: each series gives the same prediction alone as in the padded batch.
    ragged = [x[:, : 8 + i % 8] for i, x in enumerate(X)]
    clf = EADCTransformerClassifier(**TINY).fit(ragged, y)
    batch = clf.predict_proba(ragged)
    alone = np.vstack([clf.predict_proba([r]) for r in ragged[:5]])
    np.testing.assert_allclose(batch[:5], alone, atol=1e-5)
    # Test series longer than any training series are accepted with mean pooling.
    assert clf.predict_proba([X[0]]).shape == (1, 2)


def test_missing_values_are_handled_not_propagated():
    X, y = _data()
    X[0, 0, 3:7] = np.nan
    X[1, 1, :] = np.nan  # a whole channel missing
    reg = EADCTransformerRegressor(**TINY).fit(X, np.arange(len(X), dtype=float))
    assert np.isfinite(reg.history_.train_loss).all()
    assert np.isfinite(reg.predict(X)).all()


def test_fitted_attributes_and_parameter_count():
    X, y = _data()
    clf = EADCTransformerClassifier(**TINY).fit(X, y)
    assert clf.n_parameters_ == sum(p.numel() for p in clf.module_.parameters())
    assert list(clf.classes_) == ["a", "b"] and clf.n_channels_ == 2 and clf.max_len_ == 16
    assert 0 <= clf.best_epoch_ < clf.n_epochs_ <= TINY["max_epochs"]
    # p = 0 (pure dilated convolution) counts no attention parameters at all.
    conv_only = EADCTransformerClassifier(**{**TINY, "p": 0.0}).fit(X, y)
    assert conv_only.n_parameters_ < clf.n_parameters_


def test_loss_decreases_on_learnable_data():
    X, y = _data(n=48, seed=3)
    # Without mixup: a mixed batch's loss has a floor well above zero (targets between classes), and this
    # test is about the optimiser driving the plain loss down.
    params = {**TINY, "d_model": 16, "max_epochs": 25, "dropout": 0.0, "validation_fraction": 0.0, "mixup": 0.0}
    clf = EADCTransformerClassifier(**params).fit(X, y)
    losses = clf.history_.train_loss
    assert losses[-1] < 0.5 * losses[0]
    assert clf.score(X, y) == 1.0


@pytest.mark.parametrize(
    "params,match",
    [
        ({"p": 1.5}, "The 'p' parameter of EADCTransformerClassifier must be a float in the range"),
        ({"p": -0.2}, "The 'p' parameter of EADCTransformerClassifier must be a float in the range"),
        ({"n_heads": 3}, "n_heads"),
        ({"alpha": 1.1}, "alpha"),
        ({"beta": -0.1}, "beta"),
        ({"optimizer": "adamm"}, "unknown optimizer 'adamm'"),
        ({"pooling": "median"}, "pooling"),
        ({"norm": "group"}, "norm"),
        ({"lr": 0}, "lr"),
        ({"validation_fraction": 1.0}, "validation_fraction"),
        ({"max_epochs": 0}, "max_epochs"),
    ],
)
def test_bad_parameters_are_named_at_fit(params, match):
    X, y = _data()
    est = EADCTransformerClassifier(**{**TINY, **params})  # construction never validates
    with pytest.raises(ValueError, match=match):
        est.fit(X, y)


def test_optimizers_by_name_from_torch_and_torch_optimizer():
    X, y = _data()
    for name in ("AdamW", "sgd", "Lamb"):
        EADCTransformerClassifier(**{**TINY, "optimizer": name, "max_epochs": 1}).fit(X, y)


def test_bad_input_gets_clear_errors():
    X, y = _data()
    clf = EADCTransformerClassifier(**TINY)
    with pytest.raises((ValueError, TypeError), match="2D or 3D"):
        clf.fit(X[:, 0, 0], y)  # 1-D X
    with pytest.raises((ValueError, TypeError), match="2D or 3D"):
        clf.fit(X[..., None], y)  # 4-D X
    with pytest.raises(ValueError, match="at least 2 unique labels"):
        clf.fit(X, np.array(["a"] * len(X)))  # fewer than 2 classes
    with pytest.raises(ValueError, match="NaN|nan|missing"):
        EADCTransformerRegressor(**TINY).fit(X, np.where(np.arange(len(X)) == 3, np.nan, 1.0))
    with pytest.raises(ValueError, match="NaN|nan|missing"):
        clf.fit(X, np.where(np.arange(len(X)) % 2 == 0, np.nan, 1.0))
    clf.fit(X, y)
    with pytest.raises(ValueError, match="channel"):
        clf.predict(X[:, :1])  # channel count differs from fit
    with pytest.raises(ValueError, match="flatten"):
        EADCTransformerClassifier(**{**TINY, "pooling": "flatten"}).fit(X, y).predict(np.concatenate([X, X], 2))


def test_cuda_request_without_cuda_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    X, y = _data()
    with pytest.raises(ValueError, match="CUDA is not available"):
        EADCTransformerClassifier(**{**TINY, "device": "cuda"}).fit(X, y)
    # device="auto" falls back to the CPU, which is how a GPU-trained pickle is used on a CPU machine.
    EADCTransformerClassifier(**{**TINY, "device": "auto"}).fit(X, y).predict(X)


def test_pickled_network_is_stored_as_cpu_tensors():
    X, y = _data()
    clf = EADCTransformerClassifier(**TINY).fit(X, y)
    weights, _ = clf.__getstate__()["_module_state"]
    assert all(t.device.type == "cpu" for t in weights.values())
    assert "module_" not in clf.__getstate__()


# ----------------------------------------------------------------- n_jobs: where ensemble members are fitted
class _PidLog:
    """Appends the id of the process that starts each member's fit to a file (a worker's copy of the
    callback writes there too, where an attribute would stay in the worker)."""

    def __init__(self, path):
        self.path = str(path)

    def on_fit_start(self, info):
        with open(self.path, "a") as f:
            f.write(f"{os.getpid()}\n")

    def pids(self):
        with open(self.path) as f:
            return [int(line) for line in f]


def test_a_small_ensemble_with_n_jobs_is_fitted_in_this_process_as_with_one_job(tmp_path):
    X, y = _data()
    log = _PidLog(tmp_path / "pids")
    parallel = EADCTransformerClassifier(**TINY, n_estimators=2, n_jobs=2, callbacks=[log]).fit(X, y)
    # Worker processes would start (import torch) for longer than these members train: no process is started.
    assert log.pids() == [os.getpid(), os.getpid()]
    one_job = EADCTransformerClassifier(**TINY, n_estimators=2, n_jobs=1).fit(X, y)
    np.testing.assert_array_equal(parallel.predict_proba(X), one_job.predict_proba(X))


def test_a_large_ensemble_is_fitted_in_worker_processes_to_the_same_members(tmp_path, monkeypatch):
    from tsrep.estimators import _ensemble

    X, y = _data()
    default_size = EADCTransformerClassifier(n_estimators=2, n_jobs=2)
    default_size._n_jobs, default_size.n_classes_ = 2, 2
    X_large = np.zeros((500, 1, 200))
    assert not _ensemble.fits_in_process(default_size, X_large, np.zeros(500))  # minutes of work: in parallel
    default_size._n_jobs = 1  # as fit resolves n_jobs=1
    assert _ensemble.fits_in_process(default_size, X_large, np.zeros(500))

    monkeypatch.setattr(_ensemble, "IN_PROCESS_SECONDS", 0.0)  # TINY as if it were large
    log = _PidLog(tmp_path / "pids")
    parallel = EADCTransformerClassifier(**TINY, n_estimators=2, n_jobs=2, callbacks=[log]).fit(X, y)
    pids = log.pids()
    assert len(pids) == 2 and os.getpid() not in pids
    one_job = EADCTransformerClassifier(**TINY, n_estimators=2, n_jobs=1).fit(X, y)
    # The same seeds give the same members; only float rounding differs with the workers' thread count.
    np.testing.assert_allclose(parallel.predict_proba(X), one_job.predict_proba(X), atol=1e-6)
