"""Baseline backbones of paper 002's tables (LSTM, GRU, ResNet, T-Loss dilated conv, TST) and their
estimators: padding-exact, trainable, aeon-compatible, picklable, clear errors."""

import pickle

import numpy as np
import pytest
import torch
from aeon.testing.estimator_checking import parametrize_with_checks as aeon_checks

from tsrep.estimators import BackboneClassifier, BackboneRegressor
from tsrep.estimators.backbone import BACKBONES, build_encoder

TINY = {"d_model": 8, "n_blocks": 2, "n_heads": 2, "max_epochs": 2, "min_steps": 0, "batch_size": 8, "random_state": 0}


def _data(n=24, c=2, t=16, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, c, t))
    y = np.array(["a", "b"] * (n // 2))
    X[y == "b", :, : t // 2] += 1.5
    return X, y


def test_baselines_and_ea_dc_transformer_share_one_harness_as_siblings():
    """Both families subclass the training harness; a baseline is not an EA-DC-Transformer estimator,
    carries none of its parameters (not even as class attributes) and runs its own __init__."""
    import inspect

    from tsrep import EADCTransformerClassifier, EADCTransformerRegressor
    from tsrep.estimators._harness import DeepSeriesEstimator

    for baseline, ea_dc in ((BackboneClassifier, EADCTransformerClassifier), (BackboneRegressor, EADCTransformerRegressor)):
        assert issubclass(baseline, DeepSeriesEstimator) and issubclass(ea_dc, DeepSeriesEstimator)
        assert not issubclass(baseline, ea_dc)
        assert baseline._task == ea_dc._task
        est = baseline(d_model=12)
        assert est.d_model == 12
        only_ea_dc = set(inspect.signature(ea_dc.__init__).parameters) - set(inspect.signature(baseline.__init__).parameters)
        assert {"alpha", "beta", "p", "patch_len", "pretrain_epochs"} <= only_ea_dc
        assert not [name for name in only_ea_dc if hasattr(baseline, name)]


@aeon_checks([BackboneClassifier, BackboneRegressor])
def test_aeon_estimator_checks(check):
    check()


@pytest.mark.parametrize("backbone", BACKBONES)
def test_encoder_output_on_valid_steps_ignores_padding(backbone):
    torch.manual_seed(0)
    enc = build_encoder(backbone, 3, 20, 8, 2, 2, 3, None, 0.0, None).eval()
    x = torch.randn(2, 20, 3)
    valid = torch.ones(2, 20, dtype=torch.bool)
    valid[1, 12:] = False
    x[1, 12:] = 0.0  # padded steps are zero, as tsrep.data.pad_cases makes them
    with torch.no_grad():
        batch = enc(x, valid)
        alone = enc(x[1:2, :12], None)
    assert batch.shape == (2, 20, enc.d_model)
    torch.testing.assert_close(batch[1, :12], alone[0], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("backbone", BACKBONES)
def test_each_backbone_learns_a_separable_problem(backbone):
    X, y = _data(n=32, seed=3)
    params = {**TINY, "max_epochs": 60, "min_steps": 400, "dropout": 0.0, "validation_fraction": 0.0, "backbone": backbone}
    clf = BackboneClassifier(**params).fit(X, y)
    assert clf.history_.train_loss[-1] < 0.5 * clf.history_.train_loss[0]
    assert clf.score(X, y) >= 0.9
    assert clf.n_parameters_ == sum(p.numel() for p in clf.module_.parameters())


def test_regressor_unequal_length_and_pickle_round_trip():
    X, y = _data()
    ragged = [x[:, : 8 + i % 8] for i, x in enumerate(X)]
    target = np.array([x.mean() for x in ragged])
    reg = BackboneRegressor(**{**TINY, "backbone": "transformer"}).fit(ragged, target)
    again = pickle.loads(pickle.dumps(reg))
    np.testing.assert_allclose(again.predict(ragged), reg.predict(ragged), atol=1e-6)


@pytest.mark.parametrize(
    "params,match",
    [
        ({"backbone": "lstmm"}, "did you mean 'lstm'"),
        ({"backbone": "transformer", "n_heads": 3}, "n_heads"),
        ({"n_blocks": 0}, "n_blocks"),
        ({"norm": "group"}, "norm"),
        ({"dropout": 1.0}, "dropout"),
        ({"optimizer": "adamm"}, "unknown optimizer"),
    ],
)
def test_bad_parameters_are_named_at_fit(params, match):
    X, y = _data()
    with pytest.raises(ValueError, match=match):
        BackboneClassifier(**{**TINY, **params}).fit(X, y)
