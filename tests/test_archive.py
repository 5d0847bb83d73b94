"""Archive loaders (tsrep.data.archive): every path on the shipped files, offline, no network.

The download path runs aeon's real loader with only the network fetch replaced (aeon's Zenodo
download function is monkeypatched to copy shipped files), so everything up to the fetch is real.
"""

import shutil
from pathlib import Path

import numpy as np
import pytest

import tsrep.data.archive as archive
from tsrep.data import DatasetNotFoundError, dataset_task, list_datasets, load_archive


def _shipped_dir(name: str) -> Path:
    folder = archive.find_local(name, offline=True)
    assert folder is not None, f"{name} should ship with aeon/sktime"
    return folder


@pytest.fixture(autouse=True)
def _isolated(monkeypatch, tmp_path):
    """No user cache, no offline setting and no aeon download directory leak into the tests."""
    monkeypatch.delenv(archive.ENV_OFFLINE, raising=False)
    monkeypatch.setenv(archive.ENV_CACHE, str(tmp_path / "default-cache"))
    monkeypatch.setattr(archive, "_aeon_data_home", lambda: None)


def _copy(name: str, dest: Path, flat: bool = False, as_name: str | None = None) -> Path:
    target = dest if flat else dest / (as_name or name)
    target.mkdir(parents=True, exist_ok=True)
    for split in ("TRAIN", "TEST"):
        shutil.copy(_shipped_dir(name) / f"{name}_{split}.ts", target / f"{as_name or name}_{split}.ts")
    return target


def test_collections():
    assert len(list_datasets("uea")) == 30 and len(list_datasets("monash")) == 19
    assert "PPGDalia" in list_datasets("monash")
    assert set(list_datasets("paper-classification")) <= set(list_datasets("uea"))
    assert set(list_datasets("paper-regression")) <= set(list_datasets("monash"))
    assert len(list_datasets("paper-classification")) == 11 and len(list_datasets("paper-regression")) == 6
    shipped = list_datasets("shipped")
    assert {"BasicMotions", "JapaneseVowels", "Covid3Month", "CardanoSentiment"} <= set(shipped)
    assert dataset_task("Covid3Month") == "regression" and dataset_task("basicmotions") == "classification"
    with pytest.raises(ValueError, match="did you mean 'uea'"):
        list_datasets("uae")


def test_tuning_fallback_problems_are_shipped_inside_aeon():
    # One list of shipped problems (tsrep.data.archive.SHIPPED); tsrep-tune's fallback names a subset of it,
    # read offline by aeon's own loaders, so every entry's files must lie inside aeon with the same task.
    assert set(archive.CLI_SHIPPED) <= set(archive.SHIPPED)
    assert all(archive.CLI_SHIPPED[name] == archive.SHIPPED[name] == dataset_task(name) for name in archive.CLI_SHIPPED)
    aeon_data = Path(__import__("aeon.datasets", fromlist=["__file__"]).__file__).parent / "data"
    assert all(archive._find_files(aeon_data, name) is not None for name in archive.CLI_SHIPPED)


def test_shipped_problems_load_offline_with_their_formats():
    X, y, meta = load_archive("BasicMotions", split="train", offline=True, return_metadata=True)
    assert isinstance(X, np.ndarray) and X.shape == (40, 6, 100) and meta["task"] == "classification"
    # Unequal length comes as a list of (channels, length_i) arrays.
    X, y = load_archive("JapaneseVowels", split="test", offline=True)
    assert isinstance(X, list) and len(X) == 370 and len({x.shape[1] for x in X}) > 1
    # Regression targets are floats; split=None concatenates train then test.
    X, y = load_archive("Covid3Month", split=None, offline=True)
    assert y.dtype == np.float64 and len(X) == len(y) == 201
    # Names are case-insensitive.
    assert load_archive("basicmotions", offline=True)[0].shape == (40, 6, 100)


def test_offline_directory_in_both_layouts(tmp_path):
    nested = _copy("BasicMotions", tmp_path / "nested")
    X, y, meta = load_archive("BasicMotions", "test", offline=tmp_path / "nested", return_metadata=True)
    assert Path(meta["path"]) == nested
    X_ref, y_ref = load_archive("BasicMotions", "test", offline=True)
    np.testing.assert_array_equal(X, X_ref)
    np.testing.assert_array_equal(y, y_ref)
    _copy("Covid3Month", tmp_path / "flat", flat=True)
    _, y, meta = load_archive("Covid3Month", "train", offline=str(tmp_path / "flat"), return_metadata=True)
    assert Path(meta["path"]) == tmp_path / "flat" and y.dtype == np.float64


def test_cache_dir_from_parameter_and_environment(tmp_path, monkeypatch):
    cached = _copy("JapaneseVowels", tmp_path / "cache")
    _, _, meta = load_archive("JapaneseVowels", cache_dir=tmp_path / "cache", return_metadata=True)
    assert Path(meta["path"]) == cached
    monkeypatch.setenv(archive.ENV_CACHE, str(tmp_path / "cache"))
    _, _, meta = load_archive("JapaneseVowels", offline=True, return_metadata=True)
    assert Path(meta["path"]) == cached
    # $TSREP_OFFLINE=DIR reads a local directory first.
    other = _copy("JapaneseVowels", tmp_path / "mine")
    monkeypatch.setenv(archive.ENV_OFFLINE, str(tmp_path / "mine"))
    assert Path(load_archive("JapaneseVowels", return_metadata=True)[2]["path"]) == other


def test_unknown_name_suggests_close_names_and_aliases_work():
    with pytest.raises(ValueError, match="did you mean 'JapaneseVowels'"):
        load_archive("JapanseVowels")
    with pytest.raises(ValueError, match="unknown dataset 'NoSuchThing'"):
        load_archive("NoSuchThing", offline=True)
    assert archive.canonical_name("BenzeneConcentr") == "BenzeneConcentration"
    assert archive.canonical_name("SpokenArabicDigit") == "SpokenArabicDigits"
    assert archive.canonical_name("pems-sf") == "PEMS-SF"
    with pytest.raises(ValueError, match="split"):
        load_archive("BasicMotions", split="validation", offline=True)


def test_offline_error_says_where_it_looked_and_how_to_provide(tmp_path):
    with pytest.raises(DatasetNotFoundError) as info:
        load_archive("EthanolConcentration", offline=True, cache_dir=tmp_path / "c")
    message = str(info.value)
    assert "offline" in message and str(tmp_path / "c") in message
    assert "EthanolConcentration_TRAIN.ts" in message and "TSREP_DATA_DIR" in message


def _fake_zenodo(calls, source: str):
    """Stands in for aeon's network fetch: 'downloads' the shipped files of `source` under the requested name."""

    def fetch(record_id, target_dir):
        calls.append(record_id)
        name = Path(target_dir).name
        Path(target_dir).mkdir(parents=True, exist_ok=True)
        for split in ("TRAIN", "TEST"):
            shutil.copy(_shipped_dir(source) / f"{source}_{split}.ts", Path(target_dir) / f"{name}_{split}.ts")
        return {f"{name}_TRAIN.ts", f"{name}_TEST.ts"}

    return fetch


def test_download_goes_through_aeon_into_the_cache_once(tmp_path, monkeypatch):
    import aeon.datasets._data_loaders as aeon_loaders
    from aeon.datasets.tsc_datasets import tsc_zenodo
    from aeon.datasets.tser_datasets import tsr_zenodo

    calls = []
    monkeypatch.setattr(aeon_loaders, "_download_all_zenodo_files", _fake_zenodo(calls, "BasicMotions"))
    cache = tmp_path / "cache"
    X, y, meta = load_archive("EthanolConcentration", "train", cache_dir=cache, return_metadata=True)
    assert calls == [tsc_zenodo["EthanolConcentration"]]
    assert Path(meta["path"]) == cache / "EthanolConcentration" and X.shape == (40, 6, 100)
    assert not [p for p in cache.iterdir() if p.name.startswith(".partial")]  # staging cleaned up
    load_archive("EthanolConcentration", "test", cache_dir=cache)  # now cached: no second download
    assert len(calls) == 1
    # Regression goes through load_regression and returns float targets.
    monkeypatch.setattr(aeon_loaders, "_download_all_zenodo_files", _fake_zenodo(calls, "Covid3Month"))
    _, y = load_archive("AppliancesEnergy", "test", cache_dir=cache)
    assert calls[-1] == tsr_zenodo["AppliancesEnergy"] and y.dtype == np.float64


def test_failed_download_is_a_clear_error(tmp_path, monkeypatch):
    import aeon.datasets._data_loaders as aeon_loaders

    def no_network(record_id, target_dir):
        raise ValueError(f"Failed to retrieve Zenodo metadata for record {record_id}: <urlopen error no network>")

    monkeypatch.setattr(aeon_loaders, "_download_all_zenodo_files", no_network)
    with pytest.raises(DatasetNotFoundError, match="could not be downloaded") as info:
        load_archive("Heartbeat", cache_dir=tmp_path / "c")
    assert "no network" in str(info.value) and "offline=DIR" in str(info.value)
    assert not (tmp_path / "c" / "Heartbeat").exists()


def _write_ts(path: Path, header: str, rows: list[str]):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(header + "@data\n" + "\n".join(rows) + "\n")


def test_channels_of_unequal_length_within_a_case_are_resampled(tmp_path):
    """PPGDalia's layout: sensors sampled at different rates over the same window."""
    header = ("@problemName PPGDalia\n@timeStamps false\n@missing false\n@univariate false\n@dimensions 2\n"
              "@equalLength false\n@targetLabel true\n")
    rows = ["1.0,2.0,3.0,4.0,5.0:10.0,30.0:71.5", "0.0,1.0,2.0:4.0,6.0,8.0:80.25"]
    for split in ("TRAIN", "TEST"):
        _write_ts(tmp_path / "PPGDalia" / f"PPGDalia_{split}.ts", header, rows)
    X, y = load_archive("PPGDalia", "train", offline=tmp_path)
    np.testing.assert_allclose(X[0], [[1, 2, 3, 4, 5], [10, 15, 20, 25, 30]])
    np.testing.assert_allclose(X[1], [[0, 1, 2], [4, 6, 8]])
    np.testing.assert_allclose(y, [71.5, 80.25])


def test_missing_values_and_unequal_length_reach_the_estimator(tmp_path):
    from tsrep import EADCTransformerClassifier

    header = ("@problemName Toy\n@timeStamps false\n@missing true\n@univariate true\n@equalLength false\n"
              "@classLabel true a b\n")
    rng = np.random.default_rng(0)
    rows = []
    for i in range(12):
        values = [f"{v:.3f}" for v in rng.normal(size=6 + i % 4) + (i % 2)]
        values[2] = "?"
        rows.append(",".join(values) + (":a" if i % 2 == 0 else ":b"))
    for split in ("TRAIN", "TEST"):
        _write_ts(tmp_path / "Toy" / f"Toy_{split}.ts", header, rows)
    X, y = load_archive("Toy", "train", offline=tmp_path)  # not an archive name, but in the offline dir
    assert isinstance(X, list) and np.isnan(X[0][0, 2])
    clf = EADCTransformerClassifier(d_model=8, n_blocks=1, n_heads=2, p=0.5, max_epochs=2, min_steps=0, random_state=0)
    assert clf.fit(X, y).predict(X).shape == (12,)
