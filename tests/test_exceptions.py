"""tsrep.exceptions is the one home of tsrep's exceptions: the modules that raise them re-export the same classes."""

import importlib

import pytest

import tsrep
from tsrep import exceptions
from tsrep.data import load_archive

# (module that raises it, name): the import paths users already have keep working.
RAISED_FROM = [
    ("tsrep.data", "DatasetNotFoundError"),
    ("tsrep.data.archive", "TsFormatError"),
    ("tsrep.benchmarks", "ConfigError"),
    ("tsrep.tuning", "ConfigError"),
    ("tsrep.tuning", "SearchSpaceError"),
    ("tsrep.tuning", "StorageError"),
    ("tsrep.tuning", "StudyMismatchError"),
    ("tsrep.benchmarks.store", "StoreError"),
    ("tsrep.benchmarks.run", "SchedulerError"),
    ("tsrep.estimators._memory", "InsufficientMemoryError"),
    ("tsrep.estimators._checks", "MissingChannelWarning"),
    ("tsrep._serialization", "ModelFileError"),
]


@pytest.mark.parametrize(("module", "name"), RAISED_FROM)
def test_raising_module_exposes_the_class_of_tsrep_exceptions(module, name):
    assert getattr(importlib.import_module(module), name) is getattr(exceptions, name)


def test_every_exception_subclasses_the_builtin_a_caller_catches():
    for name in exceptions.__all__:
        cls = getattr(exceptions, name)
        builtin = Warning if name.endswith("Warning") else (ValueError, FileNotFoundError, ConnectionError, RuntimeError)
        assert issubclass(cls, builtin), name
    assert {n for _, n in RAISED_FROM} == set(exceptions.__all__)


def test_known_problem_not_on_disk_raises_dataset_not_found_from_tsrep_exceptions(tmp_path):
    with pytest.raises(exceptions.DatasetNotFoundError, match="Yoga is not on disk"):
        load_archive("Yoga", offline=True, cache_dir=tmp_path)


def test_a_file_that_is_no_model_raises_model_file_error(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("not a model")
    with pytest.raises(exceptions.ModelFileError):
        tsrep.load(path)
