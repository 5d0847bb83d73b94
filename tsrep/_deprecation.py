"""Renamed keyword arguments and attributes: the old name keeps working, with a FutureWarning, until its removal.

scikit-learn's deprecation style: the warning says what the name became, since when, and when the
old name goes (``FutureWarning``, which Python shows to users by default, unlike ``DeprecationWarning``).
Giving both the old and the new name is a TypeError naming both, as Python does for a keyword given twice.
"""

from __future__ import annotations

import functools
import warnings
from typing import Callable, TypeVar

__all__ = ["rename_keywords", "renamed_attribute", "renamed_keywords"]

#: The version that renamed the names, and the one that will drop the old names.
RENAMED_IN = "0.1"
REMOVED_IN = "0.3"

_F = TypeVar("_F", bound=Callable)


def _warn_renamed(old: str, new: str, since: str, removal: str, stacklevel: int) -> None:
    warnings.warn(
        f"`{old}` was renamed `{new}` in {since} and will be removed in {removal}; use `{new}`",
        FutureWarning,
        stacklevel=stacklevel + 1,
    )


def rename_keywords(
    kwargs: dict,
    renames: dict[str, str],
    owner: str,
    *,
    since: str = RENAMED_IN,
    removal: str = REMOVED_IN,
    stacklevel: int = 2,
) -> dict:
    """A copy of `kwargs` with every old name of `renames` ({old: new}) replaced by its new name.

    Warns a FutureWarning for each old name found, attributed `stacklevel` frames up from the caller
    of this function (1: that caller, 2: its caller); TypeError naming both when an old name and its
    new name are both in `kwargs`. `owner` names the callable in that message.
    """
    found = [old for old in renames if old in kwargs]
    if not found:
        return kwargs
    kwargs = dict(kwargs)
    for old in found:
        new = renames[old]
        if new in kwargs:
            raise TypeError(f"{owner}() got both `{old}` and `{new}`; `{old}` was renamed `{new}`: pass `{new}` only")
        _warn_renamed(old, new, since, removal, stacklevel + 1)
        kwargs[new] = kwargs.pop(old)
    return kwargs


def renamed_keywords(renames: dict[str, str], *, since: str = RENAMED_IN, removal: str = REMOVED_IN):
    """Decorator of a function or ``__init__`` whose keyword arguments `renames` ({old: new}) were renamed.

    A call giving an old name is forwarded with the new one and a FutureWarning pointing at the
    caller (see rename_keywords). The signature that inspect.signature reports (it follows
    ``__wrapped__``) lists the new names only.
    """

    def decorate(func: _F) -> _F:
        owner = func.__qualname__.removesuffix(".__init__")

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            return func(*args, **rename_keywords(kwargs, renames, owner, since=since, removal=removal, stacklevel=2))

        return wrapper  # type: ignore[return-value]

    return decorate


def renamed_attribute(old: str, new: str, *, since: str = RENAMED_IN, removal: str = REMOVED_IN) -> property:
    """A read-only property `old` returning ``self.<new>`` with a FutureWarning, for a class body:
    ``dim = renamed_attribute("dim", "d_model")``."""

    def get(self):
        _warn_renamed(old, new, since, removal, 2)
        return getattr(self, new)

    return property(get, doc=f"Deprecated: the old name of ``{new}``.")
