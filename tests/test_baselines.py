"""Baseline backbones of paper 002's tables (LSTM, GRU, ResNet, T-Loss dilated conv, TST) and their
estimators: padding-exact, trainable, aeon-compatible, picklable, clear errors."""

import pickle

import numpy as np
import pytest
import torch
from aeon.testing.estimator_checking import parametrize_with_checks as aeon_checks

from helpers import two_class_series
from tsrep.estimators import BackboneClassifier, BackboneRegressor, _memory
from tsrep.estimators.baselines import BACKBONES, baseline_encoder
from tsrep.exceptions import InsufficientMemoryError

TINY = {"d_model": 8, "n_blocks": 2, "n_heads": 2, "max_epochs": 2, "min_steps": 0, "batch_size": 8, "random_state": 0}


_data = two_class_series


def test_baselines_and_ea_dc_transformer_share_one_harness_as_siblings():
    """Both families subclass the training harness; a baseline is not an EA-DC-Transformer estimator,
    carries none of its parameters (not even as class attributes) and runs its own __init__."""
    import inspect

    from tsrep import EADCTransformerClassifier, EADCTransformerRegressor
    from tsrep.estimators._base import DeepSeriesEstimator

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
    enc = baseline_encoder(backbone, 3, 20, 8, 2, 2, 3, None, 0.0, None).eval()
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


@pytest.mark.parametrize("backbone", ["resnet", "transformer", "lstm"])
def test_numpy_integer_sizes_pass_the_check_and_build_the_network(backbone):
    """scikit-learn's checks accept numpy integers (a grid of np.arange values): the network must take them too."""
    X, y = _data(n=16, t=8)
    sizes = {"n_blocks": np.int64(1), "d_model": np.int64(8), "n_heads": np.int64(2)}
    clf = BackboneClassifier(**{**TINY, **sizes, "max_epochs": 1, "backbone": backbone}).fit(X, y)
    assert clf.predict(X).shape == (16,)


def test_a_bool_is_refused_as_a_size():
    """True is an int to Python, never a size: refused by the estimator and by the encoders themselves."""
    from tsrep.backbones import ResNetEncoder, TSTEncoder

    X, y = _data()
    with pytest.raises(ValueError, match="n_blocks"):
        BackboneClassifier(**{**TINY, "n_blocks": True}).fit(X, y)
    with pytest.raises(ValueError, match="n_blocks must be a positive integer, got True"):
        ResNetEncoder(3, 16, d_model=8, n_blocks=True)
    with pytest.raises(ValueError, match="n_layers must be a positive integer, got True"):
        TSTEncoder(3, 16, d_model=8, n_layers=True, n_heads=2)


# ----------------------------------------------------------------------------- memory, refused before any weight
@pytest.fixture
def built_for_real(monkeypatch):
    """Networks are counted on the meta device; a real build (a fit that passed the memory check, or one
    with no check) is recorded and stopped there, so that nothing large is ever allocated."""
    import tsrep.estimators.baselines as backbone_module

    reached, build = [], backbone_module.baseline_encoder

    def build_on_meta_only(*args):
        if torch.empty(()).device.type != "meta":
            reached.append(args[0])
            raise ZeroDivisionError("a real network would be built here")
        return build(*args)

    monkeypatch.setattr(backbone_module, "baseline_encoder", build_on_meta_only)
    monkeypatch.setattr(_memory, "available_memory", lambda device: 8 * 2**30)  # whatever this machine has
    return reached


@pytest.mark.parametrize("backbone,params,length,match", [
    # 5.4e11 weights: the first allocation alone would ask for 86 GB.
    ("resnet", {"d_model": 2**16, "n_blocks": 3}, 16, r"weights and optimiser state 8064\.1 GiB: backbone 'resnet' "
                                                     r"with 541,1[\d,]+ parameters.*a smaller d_model \(now 65536"),
    ("transformer", {"d_model": 8, "n_heads": 2}, 20_000,
     r"attention maps .*series of 20000 steps, batches of 8\).*a smaller batch_size \(now 8; the attention maps"),
    ("lstm", {"d_model": 64}, 200_000, r"activations .*a smaller batch_size \(now 8; the activations grow"),
    ("dilated-conv", {"d_model": 8, "n_blocks": 24}, 16,
     r"dilated convolutions' padding .*fewer n_blocks \(now 24: block i's dilated convolution pads"),
])
def test_a_baseline_that_cannot_fit_is_refused_before_any_weight(built_for_real, backbone, params, length, match):
    X = np.zeros((8, 1, length))
    y = np.array(["a", "b"] * 4)
    with pytest.raises(InsufficientMemoryError, match=match) as raised:
        BackboneClassifier(**{**TINY, "backbone": backbone, **params}).fit(X, y)
    assert "but cpu has 8.0 GiB free" in str(raised.value)
    assert built_for_real == []
    # The same backbone at a small size passes the check (the regressor's too) and goes on to build its network.
    with pytest.raises(ZeroDivisionError):
        BackboneRegressor(**{**TINY, "backbone": backbone}).fit(_data(n=8)[0], np.linspace(-1.0, 1.0, 8))
    assert built_for_real == [backbone]


def test_baseline_ensemble_members_at_once_are_refused_when_together_they_do_not_fit(built_for_real, monkeypatch):
    X, y = _data(n=16, t=2000)
    params = {**TINY, "backbone": "gru", "d_model": 64, "n_estimators": 3}
    one = _memory.backbone_training_memory(
        backbone="gru", n_parameters=1, n_steps=2000, batch_size=8, d_model=64, n_blocks=2, n_heads=2, kernel_size=3,
        dim_feedforward=None,
    )["total"]
    monkeypatch.setattr(_memory, "available_memory", lambda device: 2 * one)  # room for one member, not three
    with pytest.raises(InsufficientMemoryError, match=r"about 3 members at once x .*a smaller n_jobs"):
        BackboneClassifier(**params, n_jobs=3).fit(X, y)
    assert built_for_real == []
    with pytest.raises(ZeroDivisionError):  # one member at a time passes the check and goes on to build its network
        BackboneClassifier(**params, n_jobs=1).fit(X, y)
    assert built_for_real == ["gru"]
