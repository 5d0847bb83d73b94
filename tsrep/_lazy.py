"""Public names of a package that load on first use (PEP 562), as scikit-learn and aeon do."""

from __future__ import annotations

import importlib
import sys


def lazy_attributes(package: str, homes: dict[str, str]):
    """(__getattr__, __dir__) for `package` whose names in `homes` (name -> module defining it) are
    imported when first read; a read name is then a plain attribute of the package."""

    def __getattr__(name: str):
        if name not in homes:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(homes[name]), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__():
        return sorted([*vars(sys.modules[package]), *homes])

    return __getattr__, __dir__
