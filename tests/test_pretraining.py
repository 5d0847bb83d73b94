"""Masked-reconstruction pretraining, TSRepEncoder and encoder checkpoints."""

import os
import pickle

import numpy as np
import pytest
import torch
from aeon.datasets import load_basic_motions, load_covid_3month, load_japanese_vowels
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from tsrep import EADCTransformerClassifier, EADCTransformerRegressor, TSRepEncoder
from tsrep.backbones.checkpoint import load_encoder

SMALL = dict(d_model=32, n_blocks=2, n_heads=4, p=0.25, batch_size=16, device="cpu", random_state=0)


@pytest.fixture(scope="module")
def basic_motions():
    X, y = load_basic_motions(split="train")
    Xt, yt = load_basic_motions(split="test")
    return X, y, Xt, yt


@pytest.fixture(scope="module")
def fitted_pipeline(basic_motions):
    X, y, _, _ = basic_motions
    torch.set_num_threads(1)
    encoder = TSRepEncoder(pretrain_epochs=20, **SMALL)
    return make_pipeline(encoder, StandardScaler(), LogisticRegression(max_iter=2000)).fit(X, y)


@pytest.fixture(scope="module")
def fitted_encoder(fitted_pipeline):
    return fitted_pipeline[0]


def test_reconstruction_loss_falls_on_basic_motions(fitted_encoder):
    losses = fitted_encoder.loss_history_
    assert len(losses) == 20 and all(np.isfinite(losses))
    assert np.mean(losses[-3:]) < 0.8 * losses[0]


def test_encoder_pipeline_accuracy_on_basic_motions(basic_motions, fitted_pipeline, fitted_encoder):
    from sklearn.linear_model import RidgeClassifierCV

    X, y, Xt, yt = basic_motions
    # TSRepEncoder -> StandardScaler -> LogisticRegression, fitted as one Pipeline on the raw series.
    assert fitted_pipeline.score(Xt, yt) >= 0.9
    ridge = make_pipeline(StandardScaler(), RidgeClassifierCV(alphas=np.logspace(-3, 3, 10)))
    assert ridge.fit(fitted_encoder.transform(X), y).score(fitted_encoder.transform(Xt), yt) >= 0.9


def test_transform_shape_and_unequal_length():
    X, _ = load_japanese_vowels(split="train")
    assert isinstance(X, list) and len({x.shape[1] for x in X}) > 1
    enc = TSRepEncoder(pretrain_epochs=1, **dict(SMALL, d_model=16, n_blocks=1, n_heads=2)).fit(X[:60])
    Z = enc.transform(X[60:90])
    assert Z.shape == (30, 16) and np.all(np.isfinite(Z))


def test_save_load_round_trips_transform_exactly(fitted_encoder, basic_motions, tmp_path):
    _, _, Xt, _ = basic_motions
    path = fitted_encoder.save(tmp_path / "enc.pt")
    loaded = TSRepEncoder.load(path)
    assert np.array_equal(loaded.transform(Xt), fitted_encoder.transform(Xt))
    unpickled = pickle.loads(pickle.dumps(fitted_encoder))
    assert np.array_equal(unpickled.transform(Xt), fitted_encoder.transform(Xt))


class _Payload:
    """Unpickling this runs a shell command that leaves a marker file."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_loaded_checkpoint_cannot_execute_code(fitted_encoder, tmp_path):
    # A torch.save pickle that carries a payload, where an encoder checkpoint is expected.
    marker = tmp_path / "pwned"
    evil = {"config": _Payload(marker), "encoder": fitted_encoder.encoder_.state_dict()}
    path = tmp_path / "evil.pt"
    torch.save(evil, path)
    # The payload is live: an unsafe load would run it.
    torch.load(path, weights_only=False)
    assert marker.exists()
    marker.unlink()
    with pytest.raises(ValueError, match="not a readable tsrep model file"):
        load_encoder(path)
    with pytest.raises(ValueError, match="not a readable tsrep model file"):
        TSRepEncoder.load(path)
    with pytest.raises(ValueError, match="not a readable tsrep model file"):
        EADCTransformerClassifier(pretrained_encoder=path, max_epochs=1, min_steps=0).fit(
            np.random.default_rng(0).normal(size=(6, 6, 20)), np.array([0, 1] * 3))
    assert not marker.exists()


def test_missing_corrupt_and_mismatched_checkpoints_are_clear_errors(fitted_encoder, tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        TSRepEncoder.load(tmp_path / "nope.pt")
    corrupt = tmp_path / "corrupt.pt"
    corrupt.write_bytes(np.random.default_rng(0).bytes(256))
    with pytest.raises(ValueError, match="not a readable tsrep model file"):
        load_encoder(corrupt)
    truncated = tmp_path / "truncated.pt"
    truncated.write_bytes(fitted_encoder.save(tmp_path / "full.pt").read_bytes()[:500])
    with pytest.raises(ValueError):
        load_encoder(truncated)
    other = tmp_path / "other.pt"
    torch.save({"weights": torch.zeros(2)}, other)
    with pytest.raises(ValueError, match="not a readable tsrep model file"):
        load_encoder(other)
    classifier = tmp_path / "classifier.safetensors"
    EADCTransformerClassifier(d_model=8, n_heads=2, n_blocks=1, max_epochs=1, min_steps=0).fit(
        np.random.default_rng(0).normal(size=(6, 2, 20)), np.array([0, 1] * 3)).save(classifier)
    with pytest.raises(ValueError, match="not a tsrep encoder checkpoint"):
        load_encoder(classifier)
    # BasicMotions has 6 channels; JapaneseVowels 12.
    X, y = load_japanese_vowels(split="train")
    with pytest.raises(ValueError, match="pretrained on 6 channel"):
        EADCTransformerClassifier(pretrained_encoder=tmp_path / "full.pt", max_epochs=1, min_steps=0).fit(X[::10], y[::10])


def test_classifier_starts_from_checkpoint_only_head_new(fitted_encoder, basic_motions, tmp_path):
    X, y, Xt, yt = basic_motions
    path = fitted_encoder.save(tmp_path / "enc.pt")
    clf = EADCTransformerClassifier(
        pretrained_encoder=str(path), freeze_encoder=True, max_epochs=80, min_steps=0, validation_fraction=0, lr=1e-2,
        batch_size=16, device="cpu", random_state=0,
    ).fit(X, y)
    for key, value in fitted_encoder.encoder_.state_dict().items():
        assert torch.equal(clf.module_.encoder.state_dict()[key], value), key  # encoder untouched
    head_params = sum(p.numel() for p in clf.module_.head.parameters())
    assert clf.n_parameters_ == head_params
    assert clf.encoder_config_["d_model"] == 32 and clf.module_.encoder.d_model == 32
    assert clf.score(Xt, yt) >= 0.85
    # Pickle round trip rebuilds the checkpoint architecture.
    again = pickle.loads(pickle.dumps(clf))
    assert np.array_equal(again.predict_proba(Xt), clf.predict_proba(Xt))


def test_regressor_pretrains_then_fine_tunes_all_parameters(tmp_path):
    X, y = load_covid_3month(split="train")
    reg = EADCTransformerRegressor(
        d_model=16, n_blocks=1, n_heads=2, p=0.5, max_epochs=2, min_steps=0, pretrain_epochs=3, batch_size=32,
        device="cpu", random_state=0,
    ).fit(X[:80], y[:80])
    assert len(reg.pretrain_history_) == 3
    assert reg.n_parameters_ == sum(p.numel() for p in reg.module_.parameters())  # nothing frozen
    assert np.all(np.isfinite(reg.predict(X[80:100])))
    # Starting a regressor from an encoder checkpoint (univariate encoder).
    enc = TSRepEncoder(pretrain_epochs=1, **dict(SMALL, d_model=16, n_blocks=1, n_heads=2)).fit(X[:80])
    reg2 = EADCTransformerRegressor(pretrained_encoder=enc.save(tmp_path / "u.pt"), max_epochs=1, min_steps=0,
                                    device="cpu", random_state=0).fit(X[:80], y[:80])
    assert reg2.predict(X[80:90]).shape == (10,)


def test_resume_interrupted_pretraining_from_checkpoint(tmp_path):
    X, _ = load_basic_motions(split="train")
    params = dict(SMALL, d_model=16, n_blocks=1, n_heads=2)
    straight = TSRepEncoder(pretrain_epochs=4, **params).fit(X)
    state = tmp_path / "state"
    first = TSRepEncoder(pretrain_epochs=2, checkpoint_dir=state, **params).fit(X)  # "interrupted" after 2 epochs
    # The layout of the estimators' checkpoint_dir: a pretraining state there resumes either way.
    assert (state / "pretrain-state.pt").is_file() and len(first.loss_history_) == 2
    resumed = TSRepEncoder(pretrain_epochs=4, checkpoint_dir=state, **params).fit(X)
    assert len(resumed.loss_history_) == 4
    np.testing.assert_allclose(resumed.loss_history_, straight.loss_history_, rtol=1e-5)
    np.testing.assert_allclose(resumed.transform(X), straight.transform(X), rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match=r"written for other data/settings.*mask_ratio \(stored 0.15, now 0.3\)"):
        TSRepEncoder(pretrain_epochs=4, checkpoint_dir=state, **dict(params, mask_ratio=0.3)).fit(X)


@pytest.mark.parametrize("params, match", [
    (dict(mask_ratio=1.0), "mask_ratio"), (dict(mask_ratio=0), "mask_ratio"),
    (dict(pretrain_epochs=-1), "pretrain_epochs"), (dict(freeze_encoder=True), "freeze_encoder"),
])
def test_bad_pretraining_parameters(params, match):
    X = np.random.default_rng(0).normal(size=(8, 2, 16))
    y = np.array([0, 1] * 4)
    with pytest.raises(ValueError, match=match):
        EADCTransformerClassifier(max_epochs=1, min_steps=0, **params).fit(X, y)
    if "freeze_encoder" not in params:
        with pytest.raises(ValueError, match=match):
            TSRepEncoder(**params).fit(X)


def test_conv_stem_with_a_pretrained_encoder_is_refused_by_name(fitted_encoder, tmp_path):
    path = fitted_encoder.save(tmp_path / "encoder.safetensors")
    X = np.random.default_rng(0).normal(size=(8, 6, 16))
    with pytest.raises(ValueError, match=r"conv_stem=16 cannot be combined with pretrained_encoder"):
        EADCTransformerClassifier(conv_stem=16, pretrained_encoder=str(path), max_epochs=1).fit(X, np.array([0, 1] * 4))


def test_tsrep_encoder_passes_aeon_estimator_checks():
    from aeon.testing.estimator_checking import check_estimator

    results = check_estimator(TSRepEncoder)
    failed = {k: v for k, v in results.items() if v != "PASSED"}
    assert not failed, failed


@pytest.mark.parametrize("X", [np.zeros((0, 2, 10)), np.zeros((3, 2, 0)), [], [np.zeros((2, 0))]])
def test_encoder_rejects_empty_input_by_name(X):
    with pytest.raises(ValueError, match="X is empty"):
        TSRepEncoder(**TSRepEncoder._get_test_params()).fit(X)
