"""Seed ensembles: ``n_estimators`` copies of an estimator that differ only in their random seed.

Members are fitted in parallel with joblib (``n_jobs``, loky processes: each member's torch uses
its share of the cores); the ensemble averages their class probabilities (classification) or
predictions (regression), as deep-learning ensembles of time series classifiers do (Ismail Fawaz
et al., "InceptionTime: Finding AlexNet for Time Series Classification", 2020).
"""

from __future__ import annotations

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import clone

from tsrep.estimators._common import seed_from


def member_seeds(random_state, n: int) -> list[int]:
    """n distinct int seeds drawn from random_state (an int gives the same members every time)."""
    rng = np.random.default_rng(seed_from(random_state))
    return [int(s) for s in rng.choice(np.iinfo(np.int32).max, size=n, replace=False)]


def _fit_member(member, X, y, sample_weight):
    return member.fit(X, y, sample_weight=sample_weight)


def fit_members(est, X, y, sample_weight) -> list:
    """Fitted clones of `est`, one per seed, each a single model (n_estimators=1)."""
    members = [
        clone(est).set_params(n_estimators=1, n_jobs=1, random_state=seed)
        for seed in member_seeds(est.random_state, est.n_estimators)
    ]
    return Parallel(n_jobs=est._n_jobs)(delayed(_fit_member)(m, X, y, sample_weight) for m in members)


def mean_of(values: list[np.ndarray]) -> np.ndarray:
    return np.mean(np.stack(values), axis=0)
