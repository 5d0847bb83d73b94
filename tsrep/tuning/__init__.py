"""Hyper-parameter tuning with Optuna: `tune`, `TSRepSearchCV`, storages, configs, pictures, `tsrep-tune`."""

from __future__ import annotations

import sys
import types

from tsrep._lazy import lazy_attributes

# Loaded on first use (PEP 562): `tsrep-tune --help` (tsrep.tuning.cli) does not pay for Optuna, torch and aeon.
__getattr__, __dir__ = lazy_attributes(__name__, {
    "ConfigError": "tsrep.tuning.config",
    "load_config": "tsrep.tuning.config",
    "save_config": "tsrep.tuning.config",
    "TSRepSearchCV": "tsrep.tuning.search",
    "PAPER_SEARCH_SPACE": "tsrep.tuning.space",
    "PAPER_SEARCH_SPACE_CONTINUOUS": "tsrep.tuning.space",
    "SearchSpace": "tsrep.tuning.space",
    "SearchSpaceError": "tsrep.tuning.space",
    "StorageError": "tsrep.tuning.storage",
    "default_storage_url": "tsrep.tuning.storage",
    "resolve_storage": "tsrep.tuning.storage",
    "StudyMismatchError": "tsrep.tuning.tune",
    "TuneResult": "tsrep.tuning.tune",
    "default_pruner": "tsrep.tuning.tune",
    "tune": "tsrep.tuning.tune",
})



class _Package(types.ModuleType):
    """tsrep.tuning.tune is the function, as when it was imported with the package: the import system binds
    each submodule it loads to the package under the submodule's name, which for tsrep.tuning.tune, loaded
    whenever something first imports from it, would replace the function by its module."""

    def __setattr__(self, name, value):
        if name == "tune" and isinstance(value, types.ModuleType):
            value = value.tune
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package

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
