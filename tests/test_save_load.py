"""save / load: pickle-free model files (safetensors weights, JSON configuration) for the classifier,
the regressor, the baselines and TSRepEncoder; crafted, truncated, newer and misplaced files."""

from __future__ import annotations

import json
import os
import pickle
import re

import numpy as np
import pytest
import torch
from aeon.datasets import load_basic_motions
from safetensors import safe_open
from safetensors.torch import load as safetensors_load
from safetensors.torch import save as safetensors_save
from sklearn.exceptions import NotFittedError

import tsrep
from tsrep import EADCTransformerClassifier, EADCTransformerRegressor, TSRepEncoder
from tsrep._serialization import FORMAT_VERSION, ModelFileError
from tsrep.estimators.baselines import BackboneClassifier
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


def _edited(path, fitted=None, tensors=None):
    """The model file at `path` with entries of its fitted state and tensors replaced, as a hand edit would."""
    raw = path.read_bytes()  # read whole: the file is rewritten in place below (a mapped file would break)
    with safe_open(str(path), framework="pt") as f:
        metadata = f.metadata()
    document = json.loads(metadata["tsrep"])
    document["fitted"].update(fitted or {})
    weights = {**safetensors_load(raw), **(tensors or {})}
    path.write_bytes(safetensors_save(weights, metadata={**metadata, "tsrep": json.dumps(document)}))
    return path


def _quoted(path) -> str:
    """A pattern matching `path` as the messages quote it."""
    return re.escape(repr(str(path)))


def _labels(*values):
    return {"$array": {"dtype": "<i8", "shape": [len(values)], "values": list(values)}}


def test_fitted_state_contradicting_the_weights_is_refused_at_load(classifier, tmp_path):
    # The head has 4 outputs (BasicMotions' classes): a file listing another number of classes once
    # loaded and answered 4 columns for them.
    for fitted, message in [
        ({"classes_": _labels(0, 1, 2), "n_classes_": 3},
         r"its network has 4 output\(s\) \(n_outputs_\), but classes_ lists 3 labels"),
        ({"classes_": _labels(0, 1, 2, 3, 4)}, r"n_classes_=4 but classes_ lists 5 labels"),
    ]:
        path = _edited(classifier.save(tmp_path / "clf.st"), fitted)
        with pytest.raises(ModelFileError, match=rf"model file {_quoted(path)} is inconsistent: {message}"):
            tsrep.load(path)


def test_ensemble_member_naming_its_columns_otherwise_is_refused_at_load(data, tmp_path):
    # The ensemble averages its members' probabilities column by column under its own classes_.
    X, y, _ = data
    ens = EADCTransformerClassifier(**{**TINY, "max_epochs": 1}, n_estimators=2).fit(X, y)
    path = ens.save(tmp_path / "ens.st")
    document = json.loads(_metadata(path)["tsrep"])
    labels = document["members"][1]["fitted"]["classes_"]["$array"]
    labels["values"] = labels["values"][::-1]  # member 1's columns named in another order
    _model_file(path, document, tensors=safetensors_load(path.read_bytes()))
    with pytest.raises(ModelFileError, match=r"is inconsistent: member 1 has classes_ .* the ensemble"):
        tsrep.load(path)


@pytest.mark.parametrize("fitted, message", [
    ({"classes_": [0, 1, 2, 3]}, r"corrupt: its classes_ must be a non-empty 1-D array of labels, got \[0, 1, 2, 3\]"),
    ({"classes_": "abcd"}, r"corrupt: its classes_ must be a non-empty 1-D array of labels, got 'abcd'"),
    ({"classes_": {"$array": {"dtype": "<i8", "shape": [2, 2], "values": [0, 1, 2, 3]}}},
     "corrupt: its classes_ must be a non-empty 1-D array of labels"),
    ({"classes_": {"$array": {"dtype": "object", "shape": [4], "values": [{"a": 0}, {"a": 1}, {"a": 2}, {"a": 3}]}}},
     "corrupt: its classes_ must hold strings, numbers, booleans or None"),
    ({"classes_": _labels(0, 1, 1, 3)}, r"corrupt: its classes_ \[0, 1, 1, 3\] name a label twice"),
    ({"n_classes_": "4"}, "corrupt: its n_classes_ must be a positive integer, got '4'"),
    ({"metadata_": [2]}, r"corrupt: its metadata_ must be a JSON object, got \[2\]"),
    ({"metadata_": {"n_channels": 3}}, r"inconsistent: metadata_ records 3 channel\(s\), but its network takes 6"),
], ids=["plain list", "string", "2-D", "unhashable labels", "repeated label", "n_classes_ string", "metadata list",
        "metadata channels"])
def test_fitted_state_of_the_wrong_type_or_shape_is_refused_at_load(classifier, tmp_path, fitted, message):
    # Such files loaded, then predict failed with a TypeError or an error about the user's data.
    path = _edited(classifier.save(tmp_path / "clf.st"), fitted)
    with pytest.raises(ModelFileError, match=rf"model file {_quoted(path)} is {message}"):
        EADCTransformerClassifier.load(path)


def test_target_standardisation_of_the_wrong_type_or_value_is_refused_at_load(data, tmp_path):
    X, _, _ = data
    reg = EADCTransformerRegressor(**{**TINY, "max_epochs": 1}).fit(X[:12], np.arange(12.0))
    for fitted, message in [({"y_std_": 0.0}, "y_std_ must be a positive finite number, got 0.0"),
                            ({"y_std_": "1"}, "y_std_ must be a positive finite number, got '1'"),
                            ({"y_mean_": {"$float": "nan"}}, "y_mean_ must be a finite number, got nan")]:
        path = _edited(reg.save(tmp_path / "reg.st"), fitted)
        with pytest.raises(ModelFileError, match=f"is corrupt: its target standardisation {message}"):
            tsrep.load(path)


@pytest.mark.parametrize("name, values, message", [
    ("std", [0.0] * 6, r"std must hold positive finite numbers, got \[0.0, 0.0"),
    ("std", [-1.0] * 6, r"std must hold positive finite numbers, got \[-1.0, -1.0"),
    ("std", [float("inf")] * 6, r"std must hold positive finite numbers, got \[inf"),
    ("std", [float("nan")] * 6, r"std must hold positive finite numbers, got \[nan"),
    ("mean", [float("inf")] * 6, r"mean must hold finite numbers, got \[inf"),
    ("std", [1.0] * 3, r"std has shape \(3,\), but the model takes 6 channel\(s\)"),
], ids=["zero std", "negative std", "infinite std", "NaN std", "infinite mean", "std of 3 channels"])
def test_standardisation_that_is_not_positive_and_finite_is_refused_at_load(classifier, tmp_path, name, values,
                                                                           message):
    # A zeroed std loaded, then predict said the user's data "lie too far from the scale of the training data".
    tensors = {f"standardizer.{name}": torch.tensor(values, dtype=torch.float64)}
    path = _edited(classifier.save(tmp_path / "clf.st"), tensors=tensors)
    with pytest.raises(ModelFileError, match=rf"model file {_quoted(path)} is corrupt: its standardisation {message}"):
        tsrep.load(path)


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs a device file")
def test_a_device_is_named_as_not_a_regular_file_not_as_missing():
    for load in (tsrep.load, EADCTransformerClassifier.load, TSRepEncoder.load):
        with pytest.raises(ModelFileError, match=r"'/dev/zero' is not a regular file \(a device, pipe or socket\)"):
            load("/dev/zero")
    with pytest.raises(ModelFileError, match=r"'/dev/zero' is not a regular file.*not a tsrep encoder checkpoint"):
        EADCTransformerClassifier(**TINY, pretrained_encoder="/dev/zero").fit(np.zeros((4, 2, 8)), [0, 1, 0, 1])
