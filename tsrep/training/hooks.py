"""Hooks through which outside code (a tuner) follows training without becoming an estimator parameter.

A tuner wraps ``fit`` in :func:`epoch_callback`; the estimator's training loop then calls
``fn(epoch, score)`` after each epoch. The score is computed on ``eval_data`` (the tuner's own
validation fold, ``(X, y)``) when given, else on the estimator's validation split of TRAIN when it
takes one; it is only reported: it never selects the epoch or stops training by itself. Whatever
``fn`` raises (for example ``optuna.TrialPruned``) propagates out of ``fit``, which leaves the
estimator unfitted.

The callback lives in a context variable, not on the estimator: it is never cloned, pickled or
reported by ``get_params``, and it applies only to fits run inside the ``with`` block (same thread).
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Callable, Iterator, NamedTuple

EpochCallback = Callable[[int, float], None]


class EpochHook(NamedTuple):
    fn: EpochCallback
    eval_data: tuple[Any, Any] | None


_EPOCH_HOOK: ContextVar[EpochHook | None] = ContextVar("tsrep_epoch_hook", default=None)


@contextmanager
def epoch_callback(fn: EpochCallback | None, eval_data: tuple[Any, Any] | None = None) -> Iterator[None]:
    """Within the block, every tsrep fit calls ``fn(epoch, score)`` after each epoch (see the module doc)."""
    token = _EPOCH_HOOK.set(None if fn is None else EpochHook(fn, eval_data))
    try:
        yield
    finally:
        _EPOCH_HOOK.reset(token)


def current_epoch_hook() -> EpochHook | None:
    """The hook installed by the innermost enclosing :func:`epoch_callback`, or None."""
    return _EPOCH_HOOK.get()


def current_epoch_callback() -> EpochCallback | None:
    """The callback installed by the innermost enclosing :func:`epoch_callback`, or None."""
    hook = _EPOCH_HOOK.get()
    return None if hook is None else hook.fn
