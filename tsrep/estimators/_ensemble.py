"""Seed ensembles: ``n_estimators`` copies of an estimator that differ in their random seed (and, for the
EA-DC-Transformer given several ``max_tokens``, in their token budget).

Members are fitted in parallel with joblib (``n_jobs``): in worker processes (joblib's loky backend,
which gives each worker's torch cores // workers threads), unless the whole ensemble is small enough
that starting the workers would cost more than it saves (:func:`fits_in_process`): then the members
are fitted one after the other in this process, as with n_jobs=1. The ensemble averages their class
probabilities (classification) or predictions (regression), as deep-learning ensembles of time
series classifiers do (Ismail Fawaz et al., "InceptionTime: Finding AlexNet for Time Series
Classification", 2020).

Threads are no alternative to processes: a member's fit seeds torch's global random generator
(dropout, masks draw from it), which threads would share, so members would draw each other's numbers
and a fit would not be reproducible.
"""

from __future__ import annotations

import json
import math
import numbers
import warnings
from pathlib import Path

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import clone

from tsrep._io import atomic_write
from tsrep.estimators._checks import resolve_device, seed_from
from tsrep.estimators._tasks import resolve_blend_minirocket, resolve_max_epochs, resolve_min_steps
from tsrep.training.distributed import is_distributed
from tsrep.training.members import train_one, train_together, why_not_together
from tsrep.training.resume import check_writable_directory


def member_seeds(random_state, n: int) -> list[int]:
    """n distinct int seeds drawn from random_state (an int gives the same members every time)."""
    rng = np.random.default_rng(seed_from(random_state))
    return [int(s) for s in rng.choice(np.iinfo(np.int32).max, size=n, replace=False)]


def clone_member(est, **params):
    """clone(est) with `params` set, whose callbacks are est's own objects: scikit-learn's clone would
    deep-copy them, so that the user's callbacks saw nothing of the members (and a lock or an open
    file in one could not be copied at all)."""
    member = clone(type(est)(**{**est.get_params(deep=False), "callbacks": None, **params}))
    return member.set_params(callbacks=est.callbacks)


def member_budget(est) -> dict:
    """{"max_epochs": ..., "min_steps": ...} to set on each member, for those of the two `est` leaves "auto".

    Where the ensemble blends a MiniRocket into its members' mean, each member trains the blended network's
    budget (BLENDED_BUDGET_SHARE of the epochs and of the step floor), as a single blended estimator would, though
    the members blend nothing themselves; otherwise the network alone's. An explicit value is left to the member."""
    classes = est.n_classes_ if est._task == "classification" else None
    blended = resolve_blend_minirocket(getattr(est, "blend_minirocket", False), est._task)
    budget = {}
    if est.max_epochs == "auto":
        budget["max_epochs"] = resolve_max_epochs("auto", blended)
    if est.min_steps == "auto":
        budget["min_steps"] = resolve_min_steps("auto", classes, blended, est.max_epochs)
    return budget


def _fit_member(member, X, y, sample_weight, index):
    return member._fit_as_member(X, y, sample_weight, index)


#: Below this estimate of the seconds a sequential fit of all members takes (:func:`estimated_fit_seconds`),
#: the members are fitted in this process whatever n_jobs is: a worker process first imports torch and
#: tsrep (2 to 7 s measured on a 2-core machine), more than parallel members of such a fit save. Measured
#: there: two members of d_model=16, one block, 50 steps, 40 cases took 3.5 to 7 s in this process and
#: 13 to 17 s in two fresh worker processes.
IN_PROCESS_SECONDS = 20.0
#: The constants of the estimate, fitted to fits on one CPU core: fixed cost of a block in an optimiser
#: step (forward, backward, the optimiser and the epoch's evaluation of small tensors, mostly Python and
#: dispatch), and seconds per unit of batch cases x tokens x d_model**2 of a block.
_STEP_SECONDS_PER_BLOCK = 1e-2
_SECONDS_PER_UNIT = 1.5e-8


def estimated_fit_seconds(est, X, y) -> float:
    """A rough estimate (within a few times) of the seconds fitting all of `est`'s members one after the
    other takes on one CPU core: members x optimiser steps x blocks x (a fixed cost per block and step +
    one proportional to batch cases x tokens x d_model**2). Tokens are the longest series' steps (an
    over-estimate under patching); the steps follow max_epochs and min_steps as training does."""
    n_cases = len(y)
    length = max(np.shape(x)[-1] for x in X) if isinstance(X, list) else int(np.shape(X)[-1])
    batch = max(1, min(int(est.batch_size), n_cases))
    steps_per_epoch = max(1, math.ceil(n_cases / batch))
    budget = member_budget(est)
    max_epochs, min_steps = budget.get("max_epochs", est.max_epochs), budget.get("min_steps", est.min_steps)
    steps = steps_per_epoch * max(int(max_epochs), math.ceil(int(min_steps) / steps_per_epoch))
    per_step = _STEP_SECONDS_PER_BLOCK + _SECONDS_PER_UNIT * batch * length * int(est.d_model) ** 2
    return float(est.n_estimators * steps * int(est.n_blocks) * per_step)


def fits_in_process(est, X, y) -> bool:
    """Whether the members are fitted one after the other in this process: n_jobs=1, or an ensemble
    estimated to fit in less than IN_PROCESS_SECONDS, which worker processes would only slow down."""
    if min(est._n_jobs, est.n_estimators) == 1:
        return True
    return estimated_fit_seconds(est, X, y) < IN_PROCESS_SECONDS


def fit_members(est, X, y, sample_weight, previous=None, together: bool = False) -> list:
    """Fitted clones of `est`, one per seed, each a single model (n_estimators=1); member i also takes
    ``est._member_params(i)`` (e.g. its token budget).

    previous: the members of the previous fit, continued (warm start) when there are as many.
    together: train the members' networks together (tsrep.training.members; :func:`members_train_together`).
    checkpoint_dir: member i resumes from and writes to ``<checkpoint_dir>/member-<i>``.
    """
    seeds = member_seeds(est.random_state, est.n_estimators)
    if est.checkpoint_dir is not None and not isinstance(est.random_state, numbers.Integral):
        seeds = _resumable_seeds(Path(est.checkpoint_dir), seeds)
    members = []
    for i, seed in enumerate(seeds):
        own = {"n_estimators": 1, "n_jobs": 1, "warm_start": False, "random_state": seed, **est._member_params(i)}
        if "blend_minirocket" in est.get_params(deep=False):
            own["blend_minirocket"] = False  # the ensemble blends its members' mean with one MiniRocket of its own
        own.update(member_budget(est))  # ... so that each member trains what a blended estimator's network would
        if est.checkpoint_dir is not None:
            own["checkpoint_dir"] = str(Path(est.checkpoint_dir) / f"member-{i}")
        if previous is not None and len(previous) == est.n_estimators:
            member = previous[i].set_params(**{**clone_member(est, **own).get_params(deep=False), "warm_start": True})
        else:
            member = clone_member(est, **own)
        members.append(member)
    if together:
        return _fit_members_together(est, members, X, y, sample_weight)
    if min(est._n_jobs, est.n_estimators) > 1 and est.callbacks is not None:
        # Checked even when this fit stays in process: whether callbacks are accepted must not hang on
        # the size of the data.
        _check_callbacks_travel(est.callbacks, est.n_jobs)
    if fits_in_process(est, X, y):
        return [_fit_member(m, X, y, sample_weight, i) for i, m in enumerate(members)]
    # No more workers than members: joblib gives each worker's torch cores // workers threads.
    return Parallel(n_jobs=min(est._n_jobs, len(members)))(
        delayed(_fit_member)(m, X, y, sample_weight, i) for i, m in enumerate(members)
    )


def members_train_together(est, previous=None, warn: bool = False) -> bool:
    """Whether `est`'s members train together (its ``train_members_together``, "auto": on a CUDA device), as
    far as its parameters tell; what the built networks tell is checked after them (why_not_together).
    warn: a UserWarning naming the reason when True was asked and cannot be honoured."""
    wanted = est.__dict__.get("train_members_together", False)
    if wanted == "auto":
        wanted = resolve_device(est.device).type == "cuda"
    if wanted is not True:
        return False
    reason = None
    if est.callbacks is not None:
        reason = "callbacks follow one member's epochs"
    elif est.checkpoint_dir is not None:
        reason = "each member writes its own checkpoints (checkpoint_dir)"
    elif previous is not None:
        reason = "a warm start continues each member's own training"
    elif any(est._member_params(i) for i in range(est.n_estimators)):
        reason = "the members differ in their networks (a sequence of max_tokens)"
    elif est.__dict__.get("compile"):
        reason = "compile traces one network"
    elif est.__dict__.get("checkpointing"):
        reason = "activation checkpointing recomputes one network's layers"
    elif est.__dict__.get("mixed_precision") is not None:
        reason = "mixed_precision is not traced under vmap"
    elif is_distributed():
        reason = "the members train data-parallel under torchrun"
    if reason is not None and warn and est.train_members_together is True:
        warnings.warn(f"train_members_together=True: the members are fitted separately, since {reason}",
                      UserWarning, stacklevel=4)
    return reason is None


def _fit_members_together(est, members: list, X, y, sample_weight) -> list:
    """Fit the members with their networks' training deferred, then train the networks together (or, when the
    built networks cannot, each on its own, as a separate fit would)."""
    runs = []
    members = [m._fit_as_member(X, y, sample_weight, i, deferred=runs) for i, m in enumerate(members)]
    reason, histories = why_not_together(runs), None
    if reason is None:
        try:
            histories = train_together(runs)
        except RuntimeError as exc:  # an operation vmap cannot batch (a shape that depends on the data), memory
            reason = f"training them together failed ({type(exc).__name__}: {str(exc).splitlines()[0][:200]})"
            warnings.warn(f"train_members_together: the members are trained separately, since {reason}",
                          UserWarning, stacklevel=4)
    elif est.train_members_together is True:
        warnings.warn(f"train_members_together=True: the members are trained separately, since {reason}",
                      UserWarning, stacklevel=4)
    if histories is None:  # each from the random states its fit left: what separate fits give
        histories = [train_one(run) for run in runs]
    for member, run, history in zip(members, runs, histories):
        member._finish_training(run, history)
    return members


def _check_callbacks_travel(callbacks, n_jobs) -> None:
    """Members fitted in other processes get a pickled copy of the callbacks: refuse, naming them, callbacks
    that cannot be pickled (a lock, an open file), before any member starts."""
    try:  # what joblib's worker processes send the members with (vendored by joblib before 1.5)
        import cloudpickle
    except ImportError:  # pragma: no cover
        from joblib.externals import cloudpickle
    try:
        cloudpickle.dumps(callbacks)
    except Exception as exc:  # noqa: BLE001 - pickling raises TypeError, PicklingError, AttributeError, ...
        raise ValueError(
            f"callbacks={callbacks!r} cannot be sent to the worker processes that fit the members with "
            f"n_jobs={n_jobs} ({type(exc).__name__}: {exc}); use n_jobs=1, or callbacks that pickle (open files "
            "and locks in on_fit_start, not in __init__)"
        ) from None


def _resumable_seeds(directory: Path, drawn: list[int]) -> list[int]:
    """The member seeds recorded in `directory` (a resumed ensemble of drawn seeds reuses them), or
    `drawn`, recorded there for the next fit."""
    path = directory / "member-seeds.json"
    if path.is_file():
        try:
            seeds = json.loads(path.read_text())
        except ValueError as exc:
            raise ValueError(f"{str(path)!r} is corrupt ({exc}); delete it or give another checkpoint_dir") from exc
        if isinstance(seeds, list) and len(seeds) == len(drawn) and all(isinstance(s, int) for s in seeds):
            return seeds
    check_writable_directory(directory)
    atomic_write(path, lambda f: f.write(json.dumps(drawn).encode()))
    return drawn
