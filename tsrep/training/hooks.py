"""Hooks through which outside code (a tuner) follows training without becoming an estimator parameter.

A tuner wraps ``fit`` in :func:`epoch_callback`; the estimator's training loop then calls
``fn(epoch, val_score)`` after each epoch's validation. Whatever ``fn`` raises (for example
``optuna.TrialPruned``) propagates out of ``fit``, which leaves the estimator unfitted.

The callback lives in a context variable, not on the estimator: it is never cloned, pickled or
reported by ``get_params``, and it applies only to fits run inside the ``with`` block (same thread).
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Callable, Iterator

EpochCallback = Callable[[int, float], None]

_EPOCH_CALLBACK: ContextVar[EpochCallback | None] = ContextVar("tsrep_epoch_callback", default=None)


@contextmanager
def epoch_callback(fn: EpochCallback | None) -> Iterator[None]:
    """Within the block, every tsrep fit calls ``fn(epoch, val_score)`` after each validated epoch."""
    token = _EPOCH_CALLBACK.set(fn)
    try:
        yield
    finally:
        _EPOCH_CALLBACK.reset(token)


def current_epoch_callback() -> EpochCallback | None:
    """The callback installed by the innermost enclosing :func:`epoch_callback`, or None."""
    return _EPOCH_CALLBACK.get()
