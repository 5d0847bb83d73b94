"""save / load: pickle-free model files (safetensors weights, JSON configuration) for the classifier,
the regressor, the baselines and TSRepEncoder; crafted, truncated, newer and misplaced files."""

from __future__ import annotations

import json
import os
import pickle

import numpy as np
import pytest
import torch
from aeon.datasets import load_basic_motions
from safetensors import safe_open
from safetensors.torch import save as safetensors_save
from sklearn.exceptions import NotFittedError

import tsrep
from tsrep import EADCTransformerClassifier, EADCTransformerRegressor, TSRepEncoder
from tsrep._serialization import FORMAT_VERSION, ModelFileError
from tsrep.estimators.backbone import BackboneClassifier
from tsrep.training.callbacks import CSVLogger

TINY = dict(d_model=8, n_blocks=1, n_heads=2, p=0.5, batch_size=8, min_steps=0, random_state=0, max_epochs=2)


@pytest.fixture(scope="module")
def data():
    X, y = load_basic_motions(split="train")
    X_test, _ = load_basic_motions(split="test")
    return X, y, X_test


@pytest.fixture(scope="module")
def classifier(data):
    X, y, _ = data
    return EADCTransformerClassifier(**TINY, validation_fraction=0.25).fit(X, y)


def _metadata(path) -> dict:
    with safe_open(str(path), framework="pt") as f:
        return f.metadata()


def test_classifier_round_trips_predict_proba_exactly(classifier, data, tmp_path):
    _, _, X_test = data
    path = classifier.save(tmp_path / "clf.safetensors")
    loaded = EADCTransformerClassifier.load(path)
    assert np.array_equal(loaded.predict_proba(X_test), classifier.predict_proba(X_test))
    assert np.array_equal(loaded.classes_, classifier.classes_) and loaded.classes_.dtype == classifier.classes_.dtype
    assert loaded.get_params() == {**classifier.get_params(), "callbacks": None}
    for name in ("patch_len_", "patch_stride_", "max_len_", "n_parameters_", "best_epoch_", "validation_fraction_"):
        assert getattr(loaded, name) == getattr(classifier, name)
    assert loaded.history_ == classifier.history_
    assert np.array_equal(loaded.standardizer_.mean_, classifier.standardizer_.mean_)
    # The configuration is JSON in the safetensors metadata, readable without tsrep.
    document = json.loads(_metadata(path)["tsrep"])
    assert document["estimator"] == "EADCTransformerClassifier" and document["params"]["d_model"] == 8
    assert set(document["versions"]) >= {"tsrep", "torch", "numpy", "python"}
    # tsrep.load finds the class itself; pickling keeps working beside it.
    assert np.array_equal(tsrep.load(path).predict_proba(X_test), classifier.predict_proba(X_test))
    assert np.array_equal(pickle.loads(pickle.dumps(loaded)).predict_proba(X_test), classifier.predict_proba(X_test))


def test_regressor_baseline_and_ensemble_round_trip(data, tmp_path):
    X, y, X_test = data
    target = np.linspace(-2.0, 5.0, len(X))
    reg = EADCTransformerRegressor(**TINY, callbacks=[CSVLogger(tmp_path / "log.csv")]).fit(X, target)
    loaded = EADCTransformerRegressor.load(reg.save(tmp_path / "reg.safetensors"))
    assert np.array_equal(loaded.predict(X_test), reg.predict(X_test))
    assert (loaded.y_mean_, loaded.y_std_) == (reg.y_mean_, reg.y_std_) and loaded.callbacks is None
    base = BackboneClassifier(backbone="gru", d_model=8, n_blocks=1, max_epochs=1, min_steps=0, random_state=0).fit(X, y)
    assert np.array_equal(tsrep.load(base.save(tmp_path / "gru.st")).predict_proba(X_test), base.predict_proba(X_test))
    ens = EADCTransformerClassifier(**TINY, n_estimators=2).fit(X, y)
    loaded = EADCTransformerClassifier.load(ens.save(tmp_path / "ens.st"))
    assert len(loaded.estimators_) == 2
    assert np.array_equal(loaded.predict_proba(X_test), ens.predict_proba(X_test))
    with pytest.raises(ModelFileError, match="holds a EADCTransformerClassifier, not a EADCTransformerRegressor"):
        EADCTransformerRegressor.load(tmp_path / "ens.st")


def test_encoder_round_trips_transform_and_starts_a_classifier(data, tmp_path):
    X, y, X_test = data
    enc = TSRepEncoder(d_model=8, n_blocks=1, n_heads=2, p=0.5, pretrain_epochs=1, batch_size=8, random_state=0).fit(X)
    path = enc.save(tmp_path / "enc.safetensors")
    assert _metadata(path)["format"] == "tsrep-model"
    for loaded in (TSRepEncoder.load(path), tsrep.load(path)):
        assert np.array_equal(loaded.transform(X_test), enc.transform(X_test))
        assert loaded.get_params() == enc.get_params() and loaded.loss_history_ == enc.loss_history_
    clf = EADCTransformerClassifier(**TINY, pretrained_encoder=path).fit(X, y)
    assert clf.encoder_config_ == enc.config_


def test_labels_of_any_json_type_round_trip_and_others_are_refused(data, tmp_path):
    X, y, X_test = data
    for labels in (np.where(y == y[0], 3, 7), y == y[0]):
        clf = EADCTransformerClassifier(**TINY).fit(X, labels)
        loaded = EADCTransformerClassifier.load(clf.save(tmp_path / "labels.st"))
        assert loaded.classes_.dtype == clf.classes_.dtype and np.array_equal(loaded.classes_, clf.classes_)
        assert np.array_equal(loaded.predict(X_test), clf.predict(X_test))
    clf.classes_ = np.array([(1, 2), object()], dtype=object)  # labels JSON cannot hold faithfully
    with pytest.raises(ValueError, match="classes_ holds .* which a tsrep model file cannot store faithfully"):
        clf.save(tmp_path / "bad.st")
    assert not (tmp_path / "bad.st").exists()


def test_unfitted_or_unsaveable_parameters_are_clear_errors(classifier, tmp_path):
    with pytest.raises(NotFittedError):
        EADCTransformerClassifier().save(tmp_path / "x.st")
    clf = pickle.loads(pickle.dumps(classifier))
    clf.set_params(optimizer_kwargs={"foo": object()})
    with pytest.raises(ValueError, match=r"optimizer_kwargs.*cannot store \(JSON values only, no pickle\)"):
        clf.save(tmp_path / "x.st")
    clf.set_params(optimizer_kwargs=None, optimizer=torch.optim.SGD)  # an optimiser class is saved by name
    assert EADCTransformerClassifier.load(clf.save(tmp_path / "x.st")).optimizer == "SGD"


class _Payload:
    """Unpickling this runs a shell command that leaves a marker file."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def _model_file(path, document, metadata_overrides=None, tensors=None):
    metadata = {"format": "tsrep-model", "format_version": str(FORMAT_VERSION), "tsrep": json.dumps(document)}
    metadata.update(metadata_overrides or {})
    path.write_bytes(safetensors_save(tensors or {"x": torch.zeros(1)}, metadata=metadata))
    return path


def test_crafted_files_run_nothing_and_are_refused(classifier, tmp_path):
    marker = tmp_path / "pwned"
    evil = tmp_path / "evil.safetensors"
    evil.write_bytes(pickle.dumps(_Payload(marker)))
    pickle.loads(evil.read_bytes())  # the payload is live: an unpickling load would run it
    assert marker.exists()
    marker.unlink()
    torch.save({"model": _Payload(marker)}, tmp_path / "evil.pt")  # a torch (zip + pickle) file
    for path in (evil, tmp_path / "evil.pt"):
        for load in (tsrep.load, EADCTransformerClassifier.load, TSRepEncoder.load):
            with pytest.raises(ValueError, match="not a readable tsrep model file|could not be loaded safely"):
                load(path)
    # JSON that asks for code: an unknown class, dunder parameters, reduce-like tags.
    document = json.loads(_metadata(classifier.save(tmp_path / "good.st"))["tsrep"])
    with pytest.raises(ModelFileError, match="holds an estimator 'os.system', which is not a tsrep estimator"):
        tsrep.load(_model_file(tmp_path / "a.st", {**document, "estimator": "os.system"}))
    bad_params = {**document["params"], "__reduce__": ["os.system", ["touch " + str(marker)]]}
    with pytest.raises(ModelFileError, match=r"parameters \['__reduce__'\] are not parameters"):
        tsrep.load(_model_file(tmp_path / "b.st", {**document, "params": bad_params}))
    bad_fitted = {**document["fitted"], "classes_": {"$array": {"dtype": "O", "shape": [1], "values": ["x"]},
                                                     "$reduce": "os.system"}}
    with pytest.raises(ModelFileError, match="malformed value"):
        tsrep.load(_model_file(tmp_path / "c.st", {**document, "fitted": bad_fitted}))
    assert not marker.exists()


def test_newer_truncated_foreign_and_missing_files_are_clear_errors(classifier, tmp_path):
    good = classifier.save(tmp_path / "good.st")
    document = json.loads(_metadata(good)["tsrep"])
    newer = _model_file(tmp_path / "newer.st", document, {"format_version": str(FORMAT_VERSION + 1)})
    with pytest.raises(ModelFileError, match=f"format version '{FORMAT_VERSION + 1}'.*upgrade tsrep"):
        tsrep.load(newer)
    truncated = tmp_path / "truncated.st"
    truncated.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    with pytest.raises(ModelFileError, match="not a readable tsrep model file"):
        tsrep.load(truncated)
    foreign = tmp_path / "foreign.safetensors"
    foreign.write_bytes(safetensors_save({"w": torch.zeros(2)}))
    with pytest.raises(ModelFileError, match="a safetensors file but not a tsrep model"):
        tsrep.load(foreign)
    mismatched = _model_file(tmp_path / "mismatch.st", document)  # the configuration without its weights
    with pytest.raises(ModelFileError, match="inconsistent"):
        tsrep.load(mismatched)
    (tmp_path / "a_directory").mkdir()
    with pytest.raises(ModelFileError, match="is a directory, not a tsrep model file"):
        tsrep.load(tmp_path / "a_directory")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        tsrep.load(tmp_path / "nothing.st")


def test_a_failed_save_keeps_the_old_file_intact(classifier, data, tmp_path, monkeypatch):
    _, _, X_test = data
    path = classifier.save(tmp_path / "model.st")
    before = path.read_bytes()
    other = EADCTransformerClassifier(**{**TINY, "random_state": 1}).fit(data[0], data[1])

    def disk_full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", disk_full)
    with pytest.raises(OSError, match="No space left"):
        other.save(path)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert np.array_equal(tsrep.load(path).predict_proba(X_test), classifier.predict_proba(X_test))
    assert [p.name for p in tmp_path.iterdir()] == ["model.st"]  # no temporary file left behind
    a_file = tmp_path / "model.st"
    with pytest.raises(NotADirectoryError, match="is a file, not a directory"):
        other.save(a_file / "inside.st")
    with pytest.raises(IsADirectoryError, match="it is an existing directory"):
        other.save(tmp_path)
    assert path.read_bytes() == before


def test_a_model_saved_for_a_gpu_loads_on_a_cpu_only_machine(classifier, data, tmp_path, monkeypatch):
    _, _, X_test = data
    clf = pickle.loads(pickle.dumps(classifier)).set_params(device="cuda")
    path = clf.save(tmp_path / "gpu.st")
    with safe_open(str(path), framework="pt") as f:
        assert all(f.get_tensor(k).device.type == "cpu" for k in f.keys())
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.warns(UserWarning, match="CUDA is not available here, so it is loaded with device='cpu'"):
        loaded = tsrep.load(path)
    assert loaded.device == "cpu"
    assert np.array_equal(loaded.predict_proba(X_test), classifier.predict_proba(X_test))
    assert tsrep.load(path, device="cpu").device == "cpu"
