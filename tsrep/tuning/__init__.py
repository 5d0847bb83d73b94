"""Hyper-parameter tuning with Optuna: `tune`, `TSRepSearchCV`, storages, configs, pictures, `tsrep-tune`."""

from tsrep.tuning.config import ConfigError, load_config, save_config
from tsrep.tuning.search import TSRepSearchCV
from tsrep.tuning.space import (
    PAPER_SEARCH_SPACE,
    PAPER_SEARCH_SPACE_CONTINUOUS,
    SearchSpace,
    SearchSpaceError,
)
from tsrep.tuning.storage import StorageError, default_storage_url, resolve_storage
from tsrep.tuning.tune import StudyMismatchError, TuneResult, default_pruner, tune

__all__ = [
    "PAPER_SEARCH_SPACE",
    "PAPER_SEARCH_SPACE_CONTINUOUS",
    "ConfigError",
    "SearchSpace",
    "SearchSpaceError",
    "StorageError",
    "StudyMismatchError",
    "TSRepSearchCV",
    "TuneResult",
    "default_pruner",
    "default_storage_url",
    "load_config",
    "resolve_storage",
    "save_config",
    "tune",
]
