"""Bad input and faults through the public surface: every wrong input gets an error of a clear type whose
message names the problem (the parameter, the argument, the file and line), never a deep torch or numpy
traceback and never an ordinary-looking answer.

Most cases are refused before any training; those that need a fitted model share tiny ones.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from tsrep import EADCTransformerClassifier, EADCTransformerRegressor, TSRepEncoder
from tsrep._io import atomic_write
from tsrep.data import DatasetNotFoundError, list_datasets, load_archive, read_tsv
from tsrep.estimators import BackboneClassifier, _memory
from tsrep.exceptions import InsufficientMemoryError, MissingChannelWarning
from tsrep.backbones.checkpoint import load_encoder, save_encoder

TINY = dict(d_model=8, n_heads=2, n_blocks=1, p=0.5, max_epochs=1, min_steps=0, batch_size=4, device="cpu",
            random_state=0)
TINY_ENCODER = dict(d_model=8, n_heads=2, n_blocks=1, p=0.5, pretrain_epochs=1, batch_size=4, device="cpu",
                    random_state=0)
GIB = 2**30


def _data(n_cases=8, n_channels=2, length=12, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n_cases, n_channels, length)), np.array(["a", "b"] * (n_cases // 2))


X, Y = _data()
Y_REG = np.linspace(-1.0, 1.0, len(X))


@pytest.fixture(scope="module")
def fitted():
    return EADCTransformerClassifier(**TINY).fit(X, Y)


@pytest.fixture(scope="module")
def encoder_path(tmp_path_factory):
    return TSRepEncoder(**TINY_ENCODER).fit(X).save(tmp_path_factory.mktemp("encoder") / "encoder.pt")


@pytest.fixture
def memory_of_8_gib(monkeypatch):
    """The memory check sees a machine with 8 GiB free, whatever this one has."""
    monkeypatch.setattr(_memory, "available_memory", lambda device: 8 * GIB)


# ----------------------------------------------------------------------------- parameters, refused at fit
#: The standard refusal of a declared constraint (tsrep.estimators._constraints): it names the
#: parameter, the estimator, what is accepted and the value given.
DECLARED = None

PARAMETER_CASES = [
    ("d_model", True, DECLARED),
    ("d_model", 0, DECLARED),
    ("d_model", 8.0, DECLARED),
    ("n_blocks", "2", DECLARED),
    ("n_heads", True, DECLARED),
    ("n_heads", 3, "n_heads=3 must divide the attention width round(p * d_model) = 4"),
    ("p", "0.5", DECLARED),
    ("p", 1.5, DECLARED),
    ("alpha", None, DECLARED),
    ("beta", -0.1, DECLARED),
    ("attn_kernel_size", 2, "attn_kernel_size must be a positive odd integer, got 2"),
    ("kernel_size", 0, DECLARED),
    ("dropout", "0.1", DECLARED),
    ("dropout", 1.0, DECLARED),
    ("optimizer", "LBFGS", "optimizer='LBFGS' needs a closure that re-evaluates the loss"),
    ("optimizer", "adamx", "unknown optimizer 'adamx'"),
    ("optimizer_kwargs", "x", DECLARED),
    ("optimizer_kwargs", {"momentun": 0.9}, "optimizer_kwargs={'momentun': 0.9} are not accepted by AdamW"),
    ("random_state", -1, DECLARED),
    ("random_state", "seed", DECLARED),
    ("device", "bogus", "device='bogus' is not a device name torch knows"),
    ("device", 3, "device must be 'auto', 'cpu', 'cuda', 'cuda:N', 'mps' or a torch.device, got 3 (int); for GPU 3 "
                  "write 'cuda:3'"),
    ("batch_size", 1, DECLARED),
    ("lr", 0, DECLARED),
    ("max_epochs", 0, DECLARED),
    ("pooling", "median", DECLARED),
    ("norm", "group", DECLARED),
    ("attention", "sparse", "attention must be one of"),
    ("validation_fraction", 1.5, DECLARED),
    ("n_estimators", 0, DECLARED),
    ("label_smoothing", 1.0, DECLARED),
    ("patch_len", 0, DECLARED),
    ("max_tokens", 0, DECLARED),
    ("max_tokens", "many", DECLARED),
    ("max_tokens", (64, 32), "max_tokens=(64, 32) gives the members of an ensemble their token budgets in turn, but "
                             "n_estimators=1; set n_estimators >= 2 or give one int"),
    ("max_tokens", [64, 0], "max_tokens must be a positive int or a non-empty sequence of them, got [64, 0]"),
    ("patch_len", 50, "patch_len=50 is longer than every training series (the longest has 12 steps)"),
    ("downsample", 40, "downsample=40 is longer than every training series (the longest has 12 steps)"),
    ("pretrained_encoder", 3, DECLARED),
    ("freeze_encoder", "yes", DECLARED),
    ("pretrain_epochs", -1, DECLARED),
]


@pytest.mark.parametrize("name, value, message", PARAMETER_CASES, ids=[f"{c[0]}={c[1]!r}" for c in PARAMETER_CASES])
def test_bad_parameter_is_named_at_fit(name, value, message):
    with pytest.raises(ValueError) as raised:
        EADCTransformerClassifier(**{**TINY, name: value}).fit(X, Y)
    if message is DECLARED:
        assert f"The {name!r} parameter of EADCTransformerClassifier must be " in str(raised.value)
        assert f"Got {value!r} instead" in str(raised.value)
    else:
        assert message in str(raised.value)


def _invalid_values(constraints):
    """A value of no accepted kind, then for each constraint a value just outside it (scikit-learn's
    generator) that no other constraint of the parameter accepts."""
    from sklearn.utils._param_validation import generate_invalid_param_val, make_constraint

    yield object()
    for constraint in constraints:
        try:
            bad = generate_invalid_param_val(make_constraint(constraint))
        except NotImplementedError:  # types, "boolean", None: object() above is outside them
            continue
        if not any(make_constraint(other).is_satisfied_by(bad) for other in constraints):
            yield bad


DECLARED_CASES = [
    (cls, name, value)
    for cls in (EADCTransformerClassifier, EADCTransformerRegressor, BackboneClassifier, TSRepEncoder)
    for name, constraints in cls._parameter_constraints.items()
    if constraints != "no_validation"
    for value in _invalid_values(constraints)
]


@pytest.mark.parametrize(
    "cls, name, value", DECLARED_CASES, ids=[f"{c.__name__}-{n}={v!r}"[:80] for c, n, v in DECLARED_CASES]
)
def test_every_declared_constraint_refuses_with_the_parameter_named(cls, name, value):
    with pytest.raises(ValueError, match=rf"The '{name}' parameter of {cls.__name__} must be "):
        if cls is TSRepEncoder:
            cls(**{name: value}).fit(X)
        else:
            cls(**{name: value}).fit(X, Y_REG if cls._task == "regression" else Y)


@pytest.mark.parametrize("cls", [EADCTransformerClassifier, EADCTransformerRegressor, BackboneClassifier, TSRepEncoder])
def test_every_parameter_is_declared(cls):
    """A parameter added to __init__ without a constraint (or "no_validation") fails here, named."""
    import inspect

    undeclared = set(inspect.signature(cls.__init__).parameters) - {"self"} - set(cls._parameter_constraints)
    assert not undeclared, f"{cls.__name__} parameters without a declared constraint: {sorted(undeclared)}"


def test_regressor_refuses_classification_only_parameters():
    with pytest.raises(ValueError, match=r"class_weight applies to classification only"):
        EADCTransformerRegressor(**TINY, class_weight="balanced").fit(X, Y_REG)


@pytest.mark.parametrize("name, value, message", [
    ("random_state", -1, "The 'random_state' parameter of TSRepEncoder must be an int in the range [0, 4294967295]"),
    ("device", "bogus", "device='bogus' is not a device name torch knows"),
    ("optimizer", "LBFGS", "optimizer='LBFGS' needs a closure"),
    ("optimizer_kwargs", "x", "The 'optimizer_kwargs' parameter of TSRepEncoder must be an instance of 'dict' or None"),
    ("d_model", True, "The 'd_model' parameter of TSRepEncoder must be an int in the range [1, inf). Got True"),
])
def test_bad_encoder_parameter_is_named_at_fit(name, value, message):
    with pytest.raises(ValueError) as raised:
        TSRepEncoder(**{**TINY_ENCODER, name: value}).fit(X)
    assert message in str(raised.value)


# ----------------------------------------------------------------------------- memory, refused before training
def test_huge_width_is_refused_with_the_estimate():
    with pytest.raises(InsufficientMemoryError) as raised:
        EADCTransformerClassifier(**{**TINY, "d_model": 10**6}).fit(X, Y)
    message = str(raised.value)
    assert isinstance(raised.value, MemoryError) and isinstance(raised.value, ValueError)
    assert "training would need about" in message and "weights and optimiser state" in message
    assert "a smaller d_model (now 1000000)" in message


def test_sixty_blocks_are_refused_naming_what_helps(memory_of_8_gib):
    X_long, y = _data(n_cases=64, n_channels=1, length=600)
    with pytest.raises(InsufficientMemoryError) as raised:
        EADCTransformerClassifier(**{**TINY, "n_blocks": 60, "batch_size": 64, "patch_len": None}).fit(X_long, y)
    message = str(raised.value)
    assert "120 layers" in message and "but cpu has 8.0 GiB free" in message
    for option in ("patch_len", "checkpointing=True", "a smaller batch_size (now 64"):
        assert option in message


def test_long_series_of_per_step_tokens_is_refused_and_patches_pass(memory_of_8_gib, monkeypatch):
    X_long, y = _data(n_cases=64, n_channels=1, length=6000)
    params = {**TINY, "d_model": 64, "n_heads": 4, "p": 0.25, "batch_size": 64}
    with pytest.raises(InsufficientMemoryError, match=r"6000 tokens per series.*Options that help: patch_len"):
        EADCTransformerClassifier(**params, patch_len=None).fit(X_long, y)
    # The same data with patch_len="auto" (at most about 64 tokens) passes the check.
    reached = []
    monkeypatch.setattr(EADCTransformerClassifier, "_build_model", lambda self, n: reached.append(n) or 1 / 0)
    with pytest.raises(ZeroDivisionError):
        EADCTransformerClassifier(**params).fit(X_long, y)
    assert reached == [2]


def test_ensemble_members_training_at_once_are_refused_when_together_they_do_not_fit(memory_of_8_gib, monkeypatch):
    # One member of this size needs about 3 GiB: alone it fits in 8 GiB, three at once (n_jobs=3) do not.
    X_long, y = _data(n_cases=64, n_channels=1, length=600)
    params = {**TINY, "d_model": 64, "n_heads": 4, "p": 0.25, "batch_size": 64, "patch_len": None, "n_estimators": 3}
    with pytest.raises(InsufficientMemoryError, match=r"about 3 members at once x 3\.0 GiB.*a smaller n_jobs"):
        EADCTransformerClassifier(**params, n_jobs=3).fit(X_long, y)
    reached = []  # one member at a time passes the check and goes on to build its network
    monkeypatch.setattr(EADCTransformerClassifier, "_build_model", lambda self, n: reached.append(n) or 1 / 0)
    with pytest.raises(ZeroDivisionError):
        EADCTransformerClassifier(**params, n_jobs=1).fit(X_long, y)
    assert reached == [2]
    # Members trained together (one network of stacked weights) need the three at once too...
    with pytest.raises(InsufficientMemoryError, match=r"3 members at once x 3\.0 GiB.*train_members_together=True: F"):
        EADCTransformerClassifier(**params, n_jobs=1, train_members_together=True).fit(X_long, y)
    # ... so "auto" on a GPU, where it trains them together, trains them one after another where they do not fit.
    from tsrep.estimators import _ensemble

    monkeypatch.setattr(_ensemble, "resolve_device", lambda device: torch.device("cuda"))
    assert _ensemble.members_train_together(EADCTransformerClassifier(**params))
    reached.clear()
    with pytest.raises(ZeroDivisionError):
        EADCTransformerClassifier(**params, n_jobs=1).fit(X_long, y)
    assert reached == [2]


def test_a_stem_on_very_long_series_is_refused_naming_it(monkeypatch):
    # 64 patch tokens keep the maps small, but the stem's 64 channels run on all 40 000 steps of a
    # batch of 64: about 4.3 GiB of features at the peak of a step (STEM_COPIES of them), with 4 GiB free.
    X_long, y = _data(n_cases=64, n_channels=1, length=40_000)
    params = {**TINY, "batch_size": 64}
    need = _memory.training_memory(
        n_tokens_max=64, batch_size=64, in_features=64, d_model=8, n_blocks=1, n_heads=2, p=0.5, kernel_size=3,
        dim_feedforward=None, attention="evolving", checkpointing=False, stem_channels=64, n_steps_max=40_000,
    )
    assert need["stem"] == 4 * 64 * _memory.STEM_COPIES * 64 * 40_000 and need["stem"] > 0.5 * need["total"]
    monkeypatch.setattr(_memory, "available_memory", lambda device: 4 * GIB)
    with pytest.raises(InsufficientMemoryError, match=r"convolutional stem 4\.\d GiB.*conv_stem=None or a narrower"):
        EADCTransformerClassifier(**params).fit(X_long, y)
    reached = []  # without the stem the same fit passes the check and goes on to build its network
    monkeypatch.setattr(EADCTransformerClassifier, "_build_model", lambda self, n: reached.append(n) or 1 / 0)
    with pytest.raises(ZeroDivisionError):
        EADCTransformerClassifier(**params, conv_stem=None).fit(X_long, y)
    assert reached == [2]


def test_encoder_on_long_series_is_refused(memory_of_8_gib):
    with pytest.raises(InsufficientMemoryError, match=r"pretraining would need about .*batch_size"):
        TSRepEncoder(**{**TINY_ENCODER, "batch_size": 64}).fit(_data(n_cases=64, n_channels=1, length=6000)[0])


def test_doubling_padding_of_many_dilated_blocks_is_refused_before_any_weight(memory_of_8_gib, monkeypatch):
    # Block i pads its causal convolution's input by (kernel_size - 1) * 2**i steps whatever the series'
    # length: 22 blocks on 12 steps need about 12 GiB, nearly all of it padding, and 16 blocks 0.2 GiB.
    # A network is never built here: a fit that passes the check stops where it would build one.
    import tsrep.representation

    reached = []
    monkeypatch.setattr(EADCTransformerClassifier, "_build_model", lambda self, n: reached.append(n) or 1 / 0)
    monkeypatch.setattr(tsrep.representation, "encoder_from_config", lambda config: reached.append("encoder") or 1 / 0)
    X16, y16 = np.random.default_rng(0).normal(size=(16, 2, 12)), np.arange(16) % 2
    params = dict(d_model=8, n_heads=2, max_epochs=1, min_steps=0, device="cpu", random_state=0)
    with pytest.raises(InsufficientMemoryError) as raised:
        EADCTransformerClassifier(**params, n_blocks=22).fit(X16, y16)
    message = str(raised.value)
    assert "training would need about 16.0 GiB" in message and "dilated convolutions' padding 16.0 GiB" in message
    assert "but cpu has 8.0 GiB free" in message
    assert "fewer n_blocks (now 22: block i's dilated convolution pads its input by (kernel_size - 1) * 2**i" in message
    assert "patch_len" not in message  # the maps of 12 tokens are not what lacks room
    with pytest.raises(InsufficientMemoryError, match=r"pretraining would need about .*fewer n_blocks \(now 22"):
        TSRepEncoder(**{**TINY_ENCODER, "n_blocks": 22, "batch_size": 16}).fit(X16)
    assert reached == []
    need = _memory.training_memory(
        n_tokens_max=12, batch_size=16, in_features=2, d_model=8, n_blocks=22, n_heads=2, p=0.25, kernel_size=3,
        dim_feedforward=None, attention="evolving", checkpointing=False,
    )
    last = 2 * 2**21  # steps of padding in the last block
    assert need["padding"] == 4 * 16 * 8 * (2 * 2 * (2**22 - 1) + _memory.PAD_WORKSPACE_COPIES * last)
    with pytest.raises(ZeroDivisionError):
        EADCTransformerClassifier(**params, n_blocks=16).fit(X16, y16)
    assert reached == [2]


# ----------------------------------------------------------------------------- X and y at fit
def _with(values_at, value, X=X):
    out = X.copy()
    out[values_at] = value
    return out


FIT_DATA_CASES = [
    ("all-NaN X", lambda: (np.full_like(X, np.nan), Y),
     "X holds no observed value: every value of every training series is NaN"),
    ("one all-NaN case", lambda: (_with(3, np.nan), Y), "X case(s) 3 hold no observed value"),
    ("inf in X", lambda: (_with((0, 1, 5), np.inf), Y),
     "X holds infinite values (1 in all; the first at case 0, channel 1, step 5)"),
    ("-inf in X", lambda: (_with((2, 0, 0), -np.inf), Y), "the first at case 2, channel 0, step 0"),
    ("empty X", lambda: (X[:0], Y[:0]), "X is empty"),
    ("y of another length", lambda: (X, Y[:-1]), "Mismatch in number of cases. Found X = 8 and y = 7"),
    ("object y with NaN", lambda: (X, np.array(["a", "b", np.nan, "a", "b", "a", "b", "a"], dtype=object)),
     "y holds no class label (NaN or None) for case(s) 2"),
    ("infinite label", lambda: (X, np.where(np.arange(8) == 5, -np.inf, np.arange(8) % 2)),
     "y holds an infinite class label for case(s) 5"),
    ("int label past float's range", lambda: (X, np.array([10**400, 1] * 4, dtype=object)),
     "y type is unknown"),  # scikit-learn's refusal, reached without an OverflowError from the infinity check
    ("mixed int and str labels", lambda: (X, np.array([1, "b"] * 4, dtype=object)),
     "y mixes class labels of different kinds (number 1, str 'b')"),
    ("one class", lambda: (X, np.array(["a"] * 8)), "y must contain at least 2 unique labels"),
]


@pytest.mark.parametrize("case, make, message", FIT_DATA_CASES, ids=[c[0] for c in FIT_DATA_CASES])
def test_bad_training_data_is_named(case, make, message):
    X_bad, y_bad = make()
    with pytest.raises(ValueError) as raised:
        EADCTransformerClassifier(**TINY).fit(X_bad, y_bad)
    assert message in str(raised.value)


@pytest.mark.parametrize("make", [
    lambda: EADCTransformerClassifier(**TINY),
    lambda: BackboneClassifier(backbone="gru", d_model=8, n_blocks=1, max_epochs=1, min_steps=0, batch_size=4,
                               device="cpu", random_state=0),
], ids=["EADCTransformerClassifier", "BackboneClassifier"])
def test_a_list_of_labels_fits_as_its_array_does(make):
    # scikit-learn takes y as a list; aeon's own check refuses anything but an array or a Series.
    labels = [str(v) for v in Y]
    from_list = make().fit(X, labels)
    from_array = make().fit(X, np.asarray(labels))
    assert list(from_list.classes_) == sorted(set(labels))
    np.testing.assert_array_equal(from_list.predict_proba(X), from_array.predict_proba(X))
    assert from_list.score(X, labels) == from_array.score(X, np.asarray(labels))


@pytest.mark.parametrize("X_bad, y_bad, message", [
    (X[:1], np.array([1.0]), "X and y hold 1 case(s); fitting needs at least 2"),
    (X, np.column_stack([Y_REG, Y_REG]), "y must be 1-D with one target per case, got shape (8, 2)"),
    (X, np.where(np.arange(8) == 4, np.nan, Y_REG), "y contains NaN or infinite values"),
    (X, np.array(["low", "high"] * 4), "y must hold numbers for a regressor"),
], ids=["one case", "2-D y", "NaN target", "class labels"])
def test_bad_regression_data_is_named(X_bad, y_bad, message):
    with pytest.raises(ValueError) as raised:
        EADCTransformerRegressor(**TINY).fit(X_bad, y_bad)
    assert message in str(raised.value)


@pytest.mark.parametrize("make, y", [
    (lambda: EADCTransformerClassifier(**TINY), Y), (lambda: EADCTransformerRegressor(**TINY), Y_REG),
], ids=["classifier", "regressor"])
def test_a_column_vector_y_is_read_as_1d_with_a_warning(make, y):
    # scikit-learn's estimators ravel a column vector with a DataConversionWarning; both tasks do the same.
    from sklearn.exceptions import DataConversionWarning

    with pytest.warns(DataConversionWarning, match="A column-vector y was passed"):
        column = make().fit(X, y.reshape(-1, 1))
    flat = make().fit(X, y)
    np.testing.assert_array_equal(column.predict(X), flat.predict(X))


def test_predicting_other_channels_is_named():
    clf = EADCTransformerClassifier(**TINY).fit(X, Y)
    with pytest.raises(ValueError, match=r"^X has 4 channel\(s\) but the model was fitted on 2; give the channels"):
        clf.predict(np.repeat(X, 2, axis=1))  # X has two channels


def test_a_misspelled_parameter_names_the_class_and_the_parameter_meant():
    with pytest.raises(TypeError, match=r"EADCTransformerClassifier: .*'d_modle' \(did you mean 'd_model'\?\)"):
        EADCTransformerClassifier(d_modle=16)
    with pytest.raises(TypeError, match=r"BackboneClassifier: .*'zzz'$"):  # nothing close: no suggestion
        BackboneClassifier(zzz=1)


@pytest.mark.parametrize("fit_params, message", [
    ({"sample_weight": -np.ones(8)}, "sample_weight must be >= 0"),
    ({"sample_weight": np.ones(5)}, "sample_weight must have one weight per case (8), got shape (5,)"),
])
def test_bad_sample_weight_is_named(fit_params, message):
    with pytest.raises(ValueError) as raised:
        EADCTransformerClassifier(**TINY).fit(X, Y, **fit_params)
    assert message in str(raised.value)


def test_class_weight_naming_an_unknown_class_is_named():
    with pytest.raises(ValueError, match=r"class_weight names class 'z', which is not in y"):
        EADCTransformerClassifier(**TINY, class_weight={"z": 2.0}).fit(X, Y)


def test_all_nan_channel_warns_naming_the_channel():
    with pytest.warns(MissingChannelWarning, match=r"X channel\(s\) 1 hold no observed value in any training series"):
        EADCTransformerClassifier(**TINY).fit(_with((slice(None), 1), np.nan), Y)


def test_encoder_refuses_infinite_values():
    with pytest.raises(ValueError, match=r"X holds infinite values .*case 1, channel 0, step 2"):
        TSRepEncoder(**TINY_ENCODER).fit(_with((1, 0, 2), np.inf))


# ----------------------------------------------------------------------------- X at predict
@pytest.mark.parametrize("method", ["predict", "predict_proba"])
def test_all_nan_series_at_predict_is_refused(fitted, method):
    with pytest.raises(ValueError, match=r"X case\(s\) 0, 1 hold no observed value .*nothing to predict from"):
        getattr(fitted, method)(np.full_like(X[:2], np.nan))


def test_inf_at_predict_is_refused(fitted):
    with pytest.raises(ValueError, match=r"X holds infinite values \(1 in all; the first at case 1, channel 0, step 7\)"):
        fitted.predict(_with((1, 0, 7), np.inf))


def test_series_far_outside_the_training_scale_are_refused(fitted):
    with pytest.raises(ValueError, match=r"X case\(s\) 0, 1 lie too far from the scale of the training data"):
        fitted.predict_proba(X[:2] * 1e300)


def test_other_channel_count_at_predict_is_refused(fitted):
    with pytest.raises(ValueError, match=r"channel"):
        fitted.predict(X[:, :1])


# ----------------------------------------------------------------------------- magnitudes that overflowed
def test_inputs_of_magnitude_1e300_are_standardised_without_overflow():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow anywhere
        big = EADCTransformerClassifier(**TINY).fit(X * 1e300, Y).predict_proba(X * 1e300)
    small = EADCTransformerClassifier(**TINY).fit(X, Y).predict_proba(X)
    np.testing.assert_allclose(big, small, atol=1e-6)  # standardisation makes the scale irrelevant


def test_targets_of_magnitude_1e200_give_predictions_in_their_units():
    y = np.linspace(-3.0, 5.0, len(X))
    pred_big = EADCTransformerRegressor(**TINY).fit(X, y * 1e200).predict(X)
    pred = EADCTransformerRegressor(**TINY).fit(X, y).predict(X)
    assert np.isfinite(pred_big).all()
    np.testing.assert_allclose(pred_big / 1e200, pred, rtol=1e-6)


# ----------------------------------------------------------------------------- NaN-padded 3-D arrays
def test_trailing_nan_padding_of_a_3d_array_equals_the_list_input():
    lengths = [12, 9, 12, 7, 12, 10, 12, 8]
    cases = [x[:, :n] for x, n in zip(X, lengths)]
    padded = np.full_like(X, np.nan)
    for i, case in enumerate(cases):
        padded[i, :, : case.shape[1]] = case
    from_padded = EADCTransformerClassifier(**TINY).fit(padded, Y).predict_proba(padded)
    from_list = EADCTransformerClassifier(**TINY).fit(cases, Y).predict_proba(cases)
    np.testing.assert_array_equal(from_padded, from_list)
    embedded = TSRepEncoder(**TINY_ENCODER).fit(padded).transform(padded)
    np.testing.assert_array_equal(embedded, TSRepEncoder(**TINY_ENCODER).fit(cases).transform(cases))


# ----------------------------------------------------------------------------- pretrained encoders
def _edited_checkpoint(path: Path, source: Path, **changes) -> Path:
    """The encoder checkpoint `source` written again to `path` with config keys dropped or its standardisation changed."""
    config, encoder, standardizer = load_encoder(source)
    config = {k: v for k, v in config.items() if k not in changes.get("drop", ())}
    standardizer.mean_ = np.asarray(changes.get("mean", standardizer.mean_))
    standardizer.std_ = np.asarray(changes.get("std", standardizer.std_))
    return save_encoder(path, config, encoder, standardizer)


def test_explicit_architecture_contradicting_the_checkpoint_is_named(encoder_path):
    with pytest.raises(ValueError, match=r"d_model=16 contradicts pretrained_encoder .*d_model=8.*set it to 8"):
        EADCTransformerClassifier(**{**TINY, "d_model": 16}, pretrained_encoder=str(encoder_path)).fit(X, Y)


def test_parameters_left_at_their_default_take_the_checkpoints(encoder_path):
    params = {k: v for k, v in TINY.items() if k not in ("d_model", "n_heads", "p")}
    model = EADCTransformerClassifier(**params, pretrained_encoder=str(encoder_path)).fit(X, Y)
    assert model.module_.encoder.d_model == 8


def test_directory_as_pretrained_encoder_is_named(tmp_path):
    with pytest.raises(ValueError, match=r"is a directory, not a tsrep encoder checkpoint"):
        EADCTransformerClassifier(**TINY, pretrained_encoder=str(tmp_path)).fit(X, Y)


def test_missing_pretrained_encoder_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"nothing\.pt' does not exist"):
        EADCTransformerClassifier(**TINY, pretrained_encoder=str(tmp_path / "nothing.pt")).fit(X, Y)


@pytest.mark.parametrize("changes, message", [
    ({"drop": ["n_blocks"]}, "its configuration lacks n_blocks"),
    ({"mean": np.zeros(3)}, "its standardisation mean has shape (3,), but the encoder takes 2 channel(s)"),
    ({"std": np.array([1.0, np.nan])}, "its standardisation std must hold positive finite numbers"),
    ({"mean": np.array([np.nan, 0.0])}, "its standardisation mean must hold finite numbers"),
], ids=["lacks a key", "wrong size", "NaN std", "NaN mean"])
def test_corrupt_checkpoint_contents_are_named(encoder_path, tmp_path, changes, message):
    path = _edited_checkpoint(tmp_path / "bad.pt", encoder_path, **changes)
    with pytest.raises(ValueError) as raised:
        EADCTransformerClassifier(**{k: v for k, v in TINY.items() if k not in ("d_model", "n_heads", "p")},
                                  pretrained_encoder=str(path)).fit(X, Y)
    assert message in str(raised.value)
    with pytest.raises(ValueError, match="corrupt|incomplete"):
        TSRepEncoder.load(path)


def test_saved_encoder_whose_standardisation_holds_nan_is_refused(tmp_path):
    encoder = TSRepEncoder(**TINY_ENCODER).fit(X)
    encoder.standardizer_.std_ = np.array([1.0, np.nan])
    path = encoder.save(tmp_path / "nan.pt")
    with pytest.raises(ValueError, match=r"its standardisation std must hold positive finite numbers"):
        TSRepEncoder.load(path)
    with pytest.raises(ValueError, match=r"its standardisation std must hold positive finite numbers"):
        EADCTransformerClassifier(pretrained_encoder=str(path), **{
            k: v for k, v in TINY.items() if k not in ("d_model", "n_heads", "p")}).fit(X, Y)


def test_network_answering_nan_is_an_error_not_an_answer():
    model = EADCTransformerClassifier(**TINY).fit(X, Y)
    with torch.no_grad():
        next(model.module_.parameters()).fill_(float("nan"))
    with pytest.raises(ValueError, match=r"the network's outputs for X case\(s\) 0, 1, 2 are NaN or infinite"):
        model.predict_proba(X[:3])
    encoder = TSRepEncoder(**TINY_ENCODER).fit(X)
    with torch.no_grad():
        next(encoder.encoder_.parameters()).fill_(float("nan"))
    with pytest.raises(ValueError, match=r"the network's outputs for X case\(s\) 0 are NaN or infinite"):
        encoder.transform(X[:1])


def test_checkpoint_of_other_channel_count_is_named(encoder_path):
    with pytest.raises(ValueError, match=r"was pretrained on 2 channel\(s\), but X has 1"):
        EADCTransformerClassifier(pretrained_encoder=str(encoder_path), **{
            k: v for k, v in TINY.items() if k not in ("d_model", "n_heads", "p")}).fit(X[:, :1], Y)


# ----------------------------------------------------------------------------- saving and loading
def _unwritable_directory(tmp_path: Path) -> Path:
    if os.geteuid() == 0:  # root writes anywhere a plain file system allows: /sys refuses everyone
        return Path("/sys/tsrep-unwritable")
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    return locked / "below"


def _stray_temporary_files(directory: Path) -> list[Path]:
    return [p for p in directory.iterdir() if p.name.endswith(".tmp")]


@pytest.fixture(scope="module")
def fitted_encoder():
    return TSRepEncoder(**TINY_ENCODER).fit(X)


def test_save_to_an_unwritable_path_names_it(fitted_encoder, tmp_path):
    target = _unwritable_directory(tmp_path) / "encoder.pt"
    with pytest.raises(OSError, match=rf"cannot save to '{target}'.*cannot be created or written"):
        fitted_encoder.save(target)


def test_save_onto_a_directory_names_it_and_leaves_nothing(fitted_encoder, tmp_path):
    (tmp_path / "encoder.pt").mkdir()
    with pytest.raises(IsADirectoryError, match=r"encoder\.pt': it is an existing directory"):
        fitted_encoder.save(tmp_path / "encoder.pt")
    assert _stray_temporary_files(tmp_path) == [] and list((tmp_path / "encoder.pt").iterdir()) == []


def test_save_below_a_file_names_it(fitted_encoder, tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(NotADirectoryError, match=r"is a file, not a directory"):
        fitted_encoder.save(tmp_path / "file" / "encoder.pt")


def test_failed_atomic_save_keeps_the_old_file_and_leaves_no_temporary(tmp_path):
    target = tmp_path / "model.pt"
    target.write_bytes(b"old")

    def write_then_fail(file):
        file.write(b"half")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        atomic_write(target, write_then_fail)
    assert target.read_bytes() == b"old" and _stray_temporary_files(tmp_path) == []


@pytest.mark.parametrize("make, error, message", [
    (lambda p: p, ValueError, "is a directory"),
    (lambda p: p / "absent.pt", FileNotFoundError, "does not exist"),
    (lambda p: (p / "garbage.pt").write_bytes(b"\x00not a checkpoint") and p / "garbage.pt", ValueError,
     "garbage.pt"),
], ids=["directory", "missing", "garbage"])
def test_loading_an_encoder_from_a_wrong_path_is_named(tmp_path, make, error, message):
    with pytest.raises(error, match=message):
        TSRepEncoder.load(make(tmp_path))


# ----------------------------------------------------------------------------- archive files
TS_HEADER = "@problemName Toy\n@timeStamps false\n@missing false\n@univariate true\n@equalLength true\n" \
            "@seriesLength 4\n@classLabel true a b\n@data\n"
TS_CASES = "1,2,3,4:a\n2,3,4,5:b\n3,4,5,6:a\n"


def _offline(tmp_path: Path, train: str | bytes | None, test: str | bytes | None, name="Toy") -> Path:
    for split, content in (("TRAIN", train), ("TEST", test)):
        if content is None:
            continue
        path = tmp_path / f"{name}_{split}.ts"
        path.write_bytes(content) if isinstance(content, bytes) else path.write_text(content)
    return tmp_path


TS_FILE_CASES = [
    ("corrupt value", TS_HEADER + "1,2,3,4:a\n2,x,4,5:b\n", "Toy_TRAIN.ts, line 10: channel 0 holds 'x', which is not a number"),
    ("missing label", TS_HEADER + "1,2,3,4:a\n2,3,4,5\n", "Toy_TRAIN.ts, line 10: no class label or target"),
    ("other channel count", TS_HEADER + "1,2:3,4:a\n2,3,4,5:b\n", "line 10: 1 channel(s), but the cases before have 2"),
    ("empty", "", "holds Toy_TEST.ts but Toy_TRAIN.ts is empty"),  # an empty file counts as absent
    ("binary", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "Toy_TRAIN.ts is a binary file, not a .ts text file"),
    ("header only", TS_HEADER, "Toy_TRAIN.ts: no case after the @data line"),
    ("no @data line", TS_HEADER.replace("@data\n", ""), "no @data line"),
    ("undeclared class label", TS_HEADER + "1,2,3,4:a\n2,3,4,5:c\n",
     "line 10: class label 'c' is not among those the @classLabel line declares (a, b)"),
    ("not a .ts file", "hello world\n", "Toy_TRAIN.ts, line 1: 'hello world' is neither a header line"),
]


@pytest.mark.parametrize("case, train, message", TS_FILE_CASES, ids=[c[0] for c in TS_FILE_CASES])
def test_bad_ts_file_is_named_with_its_line(tmp_path, case, train, message):
    folder = _offline(tmp_path, train, TS_HEADER + TS_CASES)
    with pytest.raises(ValueError if case != "empty" else DatasetNotFoundError) as raised:
        load_archive("Toy", split="train", offline=folder)
    assert message in str(raised.value)


def test_train_file_alone_is_not_completed_from_the_shipped_problem(tmp_path):
    shipped_train = load_archive("GunPoint", split="train", offline=True)[0]
    folder = _offline(tmp_path, TS_HEADER.replace("a b", "1 2") + "1,2,3,4:1\n2,3,4,5:2\n", None, name="GunPoint")
    for split in ("train", "test", None):
        with pytest.raises(DatasetNotFoundError, match=r"holds GunPoint_TRAIN\.ts but GunPoint_TEST\.ts is missing"):
            load_archive("GunPoint", split=split, offline=folder)
    assert len(shipped_train) == 50


def test_empty_test_file_beside_a_train_file_is_named(tmp_path):
    folder = _offline(tmp_path, TS_HEADER + TS_CASES, "")
    with pytest.raises(DatasetNotFoundError, match=r"holds Toy_TRAIN\.ts but Toy_TEST\.ts is empty"):
        load_archive("Toy", split="test", offline=folder)


def test_empty_files_neither_make_a_0_case_problem_nor_hide_the_shipped_one(tmp_path):
    (tmp_path / "GunPoint_TEST.ts").write_text("")
    (tmp_path / "GunPoint_TRAIN.ts").write_text("\n")
    with pytest.warns(UserWarning, match=r"skipped the empty file\(s\) .*GunPoint_TRAIN\.ts"):
        X_test, y_test = load_archive("GunPoint", split="test", offline=tmp_path)
    assert len(X_test) == len(y_test) == 150  # the shipped problem


@pytest.mark.parametrize("call, error, message", [
    (lambda tmp: load_archive("NoSuchProblemAnywhere", offline=True), ValueError, "unknown dataset"),
    (lambda tmp: load_archive("GunPoint", split="validation", offline=True), ValueError,
     "split must be 'train', 'test' or None"),
    (lambda tmp: load_archive("GunPoint", offline=str(tmp / "absent")), NotADirectoryError, "is not a directory"),
    (lambda tmp: list_datasets("ucrr"), ValueError, "unknown collection 'ucrr' (did you mean 'ucr'?)"),
    (lambda tmp: read_tsv((tmp / "x.tsv").write_text("a\tb\tc\n") and tmp / "x.tsv"), ValueError,
     "is not a UCR TSV file"),
], ids=["unknown name", "bad split", "offline not a directory", "unknown collection", "tsv of text"])
def test_bad_loader_arguments_are_named(tmp_path, call, error, message):
    with pytest.raises(error) as raised:
        call(tmp_path)
    assert message in str(raised.value)


# ----------------------------------------------------------------------------- command lines
def _usage_error(main, argv, capsys) -> str:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    err = capsys.readouterr().err
    assert exited.value.code == 2 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("argv, message", [
    (["--dataset", "Nope"], "--dataset 'Nope' is not a UCR, UEA or Monash problem"),
    (["--dataset", "BasicMotions", "--device", "bogus"], "device='bogus' is not a device name torch knows"),
    (["--dataset", "BasicMotions", "--param", "random_state=-1"], "The 'random_state' parameter of EADCTransformerClassifier must be an int in the range [0, 4294967295]"),
    (["--dataset", "BasicMotions", "--param", "optimizer=LBFGS"], "optimizer='LBFGS' needs a closure"),
    (["--dataset", "BasicMotions", "--d-model", "0"], "The 'd_model' parameter of EADCTransformerClassifier must be an int in the range [1, inf). Got 0 instead."),
], ids=["unknown dataset", "bad device", "negative seed", "LBFGS", "zero width"])
def test_python_m_tsrep_usage_errors(capsys, argv, message):
    from tsrep.__main__ import main

    assert message in _usage_error(main, argv, capsys)


@pytest.mark.parametrize("argv, message", [
    (["--config", "no-such-config"], "no config named 'no-such-config'"),
    (["--jobs", "0"], "argument --jobs: must be a positive integer, got '0'"),
    (["--threads", "0"], "argument --threads: must be a positive integer, got '0'"),
    (["--device", "bogus"], "device 'bogus' is not a device"),
    (["--out", "{file}/results"], "(Not a directory)"),
    (["--out", "{damaged}", "--report-only"], "Move it aside"),
    (["--config", "{bad_config}", "--out", "{out}"], "model 'ea-dc-transformer' on GunPoint: The 'd_model' parameter of EADCTransformerClassifier must be"),
], ids=["unknown config", "zero jobs", "zero threads", "bad device", "out below a file", "damaged results store",
        "bad d_model in a config"])
def test_tsrep_benchmark_refuses_up_front(capsys, tmp_path, argv, message):
    from tsrep.benchmarks.cli import main

    (tmp_path / "file").write_text("x")
    (tmp_path / "damaged").mkdir()
    (tmp_path / "damaged" / "results.sqlite").write_bytes(b"SQLite format 3\x00 cut short")
    (tmp_path / "bad.yaml").write_text(
        "name: bad\ndatasets: [GunPoint]\nmodels: [ea-dc-transformer]\nseeds: [0]\nparams: {d_model: 0}\n"
        "data: {offline: true}\n"
    )
    argv = [a.format(file=tmp_path / "file", damaged=tmp_path / "damaged", bad_config=tmp_path / "bad.yaml",
                     out=tmp_path / "out") for a in argv]
    try:
        code = main(["--config", "quick", *argv] if argv[0] != "--config" else argv)
    except SystemExit as exited:
        code = exited.code
    assert code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err, err


@pytest.mark.parametrize("argv, message", [
    (["--dataset", "Nope", "--n-trials", "1"], "unknown dataset 'Nope'"),
    (["--dataset", "BasicMotions", "--set", "nonsense"], "--set expects NAME=VALUE"),
    (["--dataset", "BasicMotions", "--n-trials", "1", "--search-space", "{missing}"], "does not exist"),
    (["--dataset", "BasicMotions", "--n-trials", "1", "--output", "{file}/out"], "cannot be created or written"),
    (["--dataset", "BasicMotions", "--n-trials", "1", "--search-space", "{malformed}"], "is not valid YAML (line 2"),
    (["--dataset", "BasicMotions", "--n-trials", "0"], "--n-trials: must be a positive integer, got '0'"),
    (["--dataset", "BasicMotions", "--timeout", "-5"], "--timeout: must be a positive number of seconds"),
], ids=["unknown dataset", "malformed --set", "missing search space", "output below a file", "malformed search space",
        "zero trials", "negative timeout"])
def test_tsrep_tune_usage_errors(capsys, tmp_path, argv, message):
    from tsrep.tuning.cli import main

    (tmp_path / "file").write_text("x")
    (tmp_path / "malformed.yaml").write_text("d_model: [8, 16\n")
    argv = [a.format(missing=tmp_path / "space.yaml", file=tmp_path / "file", malformed=tmp_path / "malformed.yaml")
            for a in argv]
    argv += ["--storage", f"sqlite:///{tmp_path / 'studies.db'}"]
    try:
        code = main(argv)
    except SystemExit as exited:
        code = exited.code
    assert code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "studies.db").exists()  # refused before any study is created


def test_tune_api_refuses_what_is_not_an_estimator():
    from tsrep.tuning import tune

    with pytest.raises(TypeError, match="estimator must be a scikit-learn style estimator"):
        tune("not an estimator", X, Y, n_trials=1, storage="memory")


@pytest.mark.parametrize("options, message", [
    ({"n_trials": 0}, "n_trials must be a positive integer or None, got 0"),
    ({"n_trials": 1, "search_space": ["d_model"]}, "search_space must be a dict of parameter name -> spec, got list"),
    ({"n_trials": 1, "y": Y[:6]}, "X and y must hold the same number of cases: X has 8, y has 6"),
], ids=["zero trials", "search space of a list", "y of another length"])
def test_tune_api_names_a_bad_option(options, message):
    from tsrep.tuning import tune

    y = options.pop("y", Y)
    with pytest.raises(ValueError) as raised:
        tune(EADCTransformerClassifier(**TINY), X, y, storage="sqlite:///:memory:", **options)
    assert message in str(raised.value)


# ----------------------------------------------------------------------------- what must be accepted
def test_numpy_integers_are_accepted_as_parameters_and_in_grid_search():
    from sklearn.model_selection import GridSearchCV

    params = {**TINY, "d_model": np.int64(8), "n_heads": np.int32(2), "n_blocks": np.int64(1),
              "batch_size": np.int64(4), "max_epochs": np.int64(1), "random_state": np.int64(0)}
    model = EADCTransformerClassifier(**params).fit(X, Y)
    assert model.module_.encoder.d_model == 8
    search = GridSearchCV(EADCTransformerClassifier(**TINY), {"d_model": np.array([8, 12])}, cv=2,
                          error_score="raise").fit(X, Y)
    assert search.best_params_["d_model"] in (8, 12)


# ----------------------------------------------------------------------------- one encoder configuration
@pytest.mark.parametrize("cls", [EADCTransformerClassifier, EADCTransformerRegressor, TSRepEncoder])
def test_every_encoder_config_field_is_a_parameter_with_the_config_default(cls):
    """DCTransformerConfig is the one source of the network's hyperparameters: each field is a parameter
    of both estimators and of TSRepEncoder, with the field's default and constraint (the test names any
    that is missing or differs)."""
    from tsrep.backbones import DCTransformerConfig

    params = cls().get_params(deep=False)
    for name, default in DCTransformerConfig.defaults().items():
        assert name in params, f"{cls.__name__} lacks the encoder parameter {name!r}"
        assert params[name] == default, f"{cls.__name__}.{name} defaults to {params[name]!r}, the config to {default!r}"
        assert cls._parameter_constraints[name] == DCTransformerConfig.constraints()[name], (
            f"{cls.__name__}.{name} is checked differently from DCTransformerConfig.{name}"
        )


@pytest.mark.parametrize("cls", [EADCTransformerClassifier, TSRepEncoder])
def test_the_fitted_encoder_is_built_from_every_parameter_of_the_config(cls):
    from tsrep.backbones import DCTransformerConfig

    chosen = dict(d_model=12, n_blocks=1, n_heads=3, p=0.5, alpha=0.3, beta=0.7, attn_kernel_size=5,
                  kernel_size=2, dim_feedforward=20, dropout=0.05, norm="layer", head_mixing="deacon-average",
                  deacon_m=2, deacon_dp=0.1, deacon_xi=0.5, deacon_inner_steps=3)
    assert set(chosen) | {"attention"} == set(DCTransformerConfig.names())
    est = cls(**chosen, random_state=0, batch_size=8)
    if cls is TSRepEncoder:
        encoder = est.set_params(pretrain_epochs=1).fit(X).encoder_
    else:
        encoder = est.set_params(max_epochs=1, min_steps=0).fit(X, Y).module_.encoder
    assert encoder.config == DCTransformerConfig(**chosen)
