"""Seed ensembles: ``n_estimators`` copies of an estimator that differ in their random seed (and, for the
EA-DC-Transformer given several ``max_tokens``, in their token budget).

Members are fitted in parallel with joblib (``n_jobs``, loky processes: each member's torch uses
its share of the cores); the ensemble averages their class probabilities (classification) or
predictions (regression), as deep-learning ensembles of time series classifiers do (Ismail Fawaz
et al., "InceptionTime: Finding AlexNet for Time Series Classification", 2020).
"""

from __future__ import annotations

import json
import numbers
from pathlib import Path

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import clone

from tsrep._io import atomic_write
from tsrep.estimators._common import seed_from
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


def _fit_member(member, X, y, sample_weight, index):
    return member._fit_as_member(X, y, sample_weight, index)


def fit_members(est, X, y, sample_weight, previous=None) -> list:
    """Fitted clones of `est`, one per seed, each a single model (n_estimators=1); member i also takes
    ``est._member_params(i)`` (e.g. its token budget).

    previous: the members of the previous fit, continued (warm start) when there are as many.
    checkpoint_dir: member i resumes from and writes to ``<checkpoint_dir>/member-<i>``.
    """
    seeds = member_seeds(est.random_state, est.n_estimators)
    if est.checkpoint_dir is not None and not isinstance(est.random_state, numbers.Integral):
        seeds = _resumable_seeds(Path(est.checkpoint_dir), seeds)
    members = []
    for i, seed in enumerate(seeds):
        own = {"n_estimators": 1, "n_jobs": 1, "warm_start": False, "random_state": seed, **est._member_params(i)}
        if est.checkpoint_dir is not None:
            own["checkpoint_dir"] = str(Path(est.checkpoint_dir) / f"member-{i}")
        if previous is not None and len(previous) == est.n_estimators:
            member = previous[i].set_params(**{**clone_member(est, **own).get_params(deep=False), "warm_start": True})
        else:
            member = clone_member(est, **own)
        members.append(member)
    if est._n_jobs != 1 and est.callbacks is not None:
        _check_callbacks_travel(est.callbacks, est.n_jobs)
    return Parallel(n_jobs=est._n_jobs)(
        delayed(_fit_member)(m, X, y, sample_weight, i) for i, m in enumerate(members)
    )


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


def mean_of(values: list[np.ndarray]) -> np.ndarray:
    return np.mean(np.stack(values), axis=0)
