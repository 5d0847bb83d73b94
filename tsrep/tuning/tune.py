"""`tune`: Optuna search over a tsrep estimator's hyper-parameters, scored on TRAIN only, with pruning."""

from __future__ import annotations

import json
import logging
import math
import os
import socket
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import optuna
from optuna.trial import TrialState
from sklearn.base import clone, is_classifier
from sklearn.metrics import check_scoring
from sklearn.model_selection import KFold, StratifiedKFold, check_cv, train_test_split
from sklearn.utils import _safe_indexing
from tqdm.auto import tqdm

from tsrep._fingerprint import data_fingerprint, describe_settings, differing_settings
from tsrep.exceptions import SearchSpaceError, StudyMismatchError
from tsrep.training.callbacks import OptunaPruning
from tsrep.tuning.space import SearchSpace, adjust_params
from tsrep.tuning.storage import (
    fail_dead_owner_trials,
    fail_stale_trials,
    heartbeat_enabled,
    mask_url,
    owner_record,
    resolve_storage,
)

logger = logging.getLogger("tsrep.tuning")

FINISHED = (TrialState.COMPLETE, TrialState.PRUNED)
ALIVE = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.RUNNING, TrialState.WAITING)
DEFAULT_N_TRIALS = 20


class _BudgetReached(Exception):
    """Raised in a trial that another worker's trials left no room for (max_trials)."""


@dataclass
class TuneResult(Sequence):
    """What :func:`tune` returns: the sequence ``(study, best_estimator)``, so that it unpacks as
    ``study, best_estimator = tune(...)`` and ``result[0]`` is the study, with the best trial's
    details as attributes besides."""

    study: optuna.Study
    best_estimator: object | None
    best_params: dict = field(default_factory=dict)
    best_value: float = float("nan")
    best_trial: optuna.trial.FrozenTrial | None = None

    def __getitem__(self, index):
        return (self.study, self.best_estimator)[index]

    def __len__(self) -> int:
        return 2


def default_pruner() -> optuna.pruners.BasePruner:
    """MedianPruner: a trial stops when its validation score at an epoch is below the median of
    earlier trials' scores at that epoch; not during the first 5 trials nor before epoch 5."""
    return optuna.pruners.MedianPruner(n_startup_trials=5, n_warmup_steps=5)


def make_splits(X, y, cv=None, validation_size: float = 0.2, random_state=0, classifier: bool = True):
    """(train, validation) index pairs within the training data: one hold-out split, or CV folds."""
    y = np.asarray(y)
    n = len(y)
    index = np.arange(n)
    if cv is None:
        if not 0 < validation_size < 1:
            raise ValueError(f"validation_size must be in (0, 1), got {validation_size!r}")
        stratify = None
        if classifier:
            _, counts = np.unique(y, return_counts=True)
            n_val = math.ceil(validation_size * n)
            if counts.min() >= 2 and len(counts) <= n_val <= n - len(counts):
                stratify = y
        train, val = train_test_split(index, test_size=validation_size, random_state=random_state, stratify=stratify)
        return [(np.sort(train), np.sort(val))]
    if isinstance(cv, int):
        if cv < 2:
            raise ValueError(f"cv must be at least 2 folds, got {cv}")
        splitter = (StratifiedKFold if classifier else KFold)(n_splits=cv, shuffle=True, random_state=random_state)
    else:
        splitter = check_cv(cv, y, classifier=classifier)
    return [(np.asarray(tr), np.asarray(va)) for tr, va in splitter.split(np.zeros((n, 1)), y)]


def check_same_length(X, y) -> None:
    """X and y must hold one case per target: checked before a study is created or a trial runs."""
    try:
        n_X, n_y = len(X), len(y)
    except TypeError:
        raise TypeError(
            f"X and y must be collections of cases with a length, got {type(X).__name__} and {type(y).__name__}"
        ) from None
    if n_X != n_y:
        raise ValueError(f"X and y must hold the same number of cases: X has {n_X}, y has {n_y}")


def _trial_counts(study: optuna.Study) -> dict:
    counts = {s: 0 for s in TrialState}
    for t in study.get_trials(deepcopy=False):
        counts[t.state] += 1
    return counts


def _check_budget(trial: optuna.Trial, max_trials: int) -> None:
    """Race-free cap on the study's finished trials across workers: a trial runs only if fewer than
    ``max_trials`` live trials (finished, running or queued) have a smaller number."""
    before = [
        t for t in trial.study.get_trials(deepcopy=False, states=ALIVE) if t.number < trial.number
    ]
    if len(before) >= max_trials:
        trial.set_user_attr("tsrep_surplus", True)
        raise _BudgetReached(f"study already has {max_trials} trials finished or under way")


def best_params_of(trial: optuna.trial.FrozenTrial, space: SearchSpace) -> dict:
    """The parameters a trial ran with: fixed values, sampled values, adjustments (snapped p)."""
    return {**space.fixed, **trial.params, **trial.user_attrs.get("adjusted", {})}


def _metric_name(estimator, scoring) -> str:
    if scoring is None:
        return "accuracy" if is_classifier(estimator) else "r2"
    return scoring if isinstance(scoring, str) else getattr(scoring, "__name__", repr(scoring))


def add_pruning(model, pruning: OptunaPruning) -> None:
    """Append `pruning` to the callbacks of `model`, or of the last step of a Pipeline (then the
    earlier steps transform the scored data); estimators without ``callbacks`` are left as they are."""
    target, prefix = model, ""
    steps = getattr(model, "steps", None)
    if steps:
        target, prefix = steps[-1][1], f"{steps[-1][0]}__"
        pruning.transform = model[:-1].transform if len(steps) > 1 else None
    if "callbacks" not in target.get_params(deep=False):
        return
    own = target.callbacks
    own = [] if own is None else list(own) if isinstance(own, (list, tuple)) else [own]
    model.set_params(**{f"{prefix}callbacks": [*own, pruning]})


def make_objective(estimator, X, y, space: SearchSpace, splits, scorer, max_trials=None, reuse_duplicates=True,
                   scoring_name: str | None = None):
    """The Optuna objective: fit on each training part, score on its validation part, report every epoch.

    A score that is NaN fails the trial (Optuna takes no NaN); the trial records which scorer gave it
    (user attribute ``tsrep_nan_score``), so that a study left without a completed trial says why."""
    scoring_name = scoring_name or getattr(scorer, "__name__", repr(scorer))
    worker = f"{socket.gethostname()}:{os.getpid()}"

    def objective(trial: optuna.Trial) -> float:
        if max_trials is not None:
            _check_budget(trial, max_trials)
        trial.set_user_attr("worker", worker)
        trial.set_user_attr("tsrep_owner", owner_record(trial.number))  # lets a resumed run fail it if we die
        params, adjusted = adjust_params(space.suggest(trial), space.estimator_params)
        if adjusted:
            trial.set_user_attr("adjusted", adjusted)
        if reuse_duplicates:  # on a grid the sampler repeats itself; a seeded fit would give the same score
            for done in trial.study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
                if done.params == trial.params and done.number != trial.number:
                    trial.set_user_attr("duplicate_of", done.number)
                    for key in ("fold_scores", "epochs"):
                        if key in done.user_attrs:
                            trial.set_user_attr(key, done.user_attrs[key])
                    return float(done.value)
        scores, epochs = [], []
        for fold, (train, val) in enumerate(splits):
            model = clone(estimator).set_params(**params)
            X_val, y_val = _safe_indexing(X, val), _safe_indexing(y, val)
            # Each epoch is scored on this fold's validation part (the split the trial is scored on), so
            # pruning works whether or not the estimator holds out a split of its own; fold k reports
            # after the epochs of the folds before it.
            add_pruning(model, OptunaPruning(trial, X_val, y_val, step_offset=sum(epochs)))
            model.fit(_safe_indexing(X, train), _safe_indexing(y, train))
            score = float(scorer(model, _safe_indexing(X, val), _safe_indexing(y, val)))
            if math.isnan(score):
                trial.set_user_attr("tsrep_nan_score", {"scorer": scoring_name, "fold": fold})
                logger.warning("trial %d failed: the scorer %r returned NaN on the validation part of fold %d",
                               trial.number, scoring_name, fold)
                return float("nan")  # Optuna fails the trial; the search goes on
            scores.append(score)
            epochs.append(int(getattr(model, "n_epochs_", -1)))
            trial.set_user_attr("fold_scores", scores)
            trial.set_user_attr("epochs", epochs)
        return float(np.mean(scores))

    return objective


# Estimator parameters that change where, how parallel or how loudly a fit runs, not its scores:
# distributed workers of one study may differ in them.
_NOT_IDENTITY = ("device", "n_jobs", "verbose")


def study_identity(estimator, X, y, space: SearchSpace, cv, validation_size, random_state, scoring) -> dict:
    """What a study's scores depend on besides the tuned parameters: the data and the fixed settings.

    ``{"data": hash of X and y, "settings": {name: description}}`` where settings are the
    estimator's class and every parameter outside the search space (its own value, or the space's
    fixed value), plus how trials are scored (``tune.cv``, ``tune.validation_size``,
    ``tune.random_state``, ``tune.scoring``), the estimator's class name and the search space
    (``{"estimator": name, "space": SearchSpace.describe()}``). Stored with a new study; a reuse must match it.
    """
    settings = {**estimator.get_params(deep=False), **space.fixed}
    for name in (*space.distributions, *_NOT_IDENTITY):
        settings.pop(name, None)
    settings["estimator"] = type(estimator)
    settings["tune.cv"] = cv
    if cv is None:
        settings["tune.validation_size"] = validation_size
    settings["tune.random_state"] = random_state
    settings["tune.scoring"] = scoring
    return {"data": data_fingerprint(X, y), "settings": describe_settings(settings),
            "estimator": type(estimator).__name__, "space": json.loads(json.dumps(space.describe()))}


def check_study_identity(study: optuna.Study, identity: dict, new: bool) -> None:
    """Record `identity` in a new study; in a reused one, raise StudyMismatchError if it differs.

    A study holds scores of one data set under one set of fixed settings: trials of another would
    be compared (and, as duplicates, copied) as if they were alike."""
    attrs = study.user_attrs
    problems = []
    if not new:  # what the trials were run as: another estimator or space makes them incomparable
        if attrs.get("tsrep_estimator", identity["estimator"]) != identity["estimator"]:
            problems.append(f"it tunes {attrs['tsrep_estimator']}, this call {identity['estimator']}")
        differ = differing_settings(attrs.get("tsrep_search_space", identity["space"]), identity["space"])
        if differ:
            problems.append("the search space differs: " + "; ".join(differ))
    if not new and "tsrep_data" in attrs:
        if attrs["tsrep_data"] != identity["data"]:
            problems.append(
                "the data differ: X and y are not those its trials were scored on "
                f"(stored {attrs['tsrep_data'][:19]}..., now {identity['data'][:19]}...)"
            )
        differ = differing_settings(attrs.get("tsrep_fixed_settings", {}), identity["settings"])
        if differ:
            problems.append("fixed settings differ: " + "; ".join(differ))
    if problems:
        raise StudyMismatchError(
            f"study {study.study_name!r} exists for another estimator, search space, data or settings, and its "
            f"trials' scores would be compared with (and, for repeated parameters, copied into) this search: "
            f"{'; '.join(problems)}. Use another study_name for this search"
        )
    if new or "tsrep_data" not in attrs:
        if not new:
            logger.warning(
                "study %r was created by a tsrep that did not record its data and fixed settings; "
                "they are recorded now, from this call, and checked from the next call on", study.study_name,
            )
        study.set_user_attr("tsrep_data", identity["data"])
        study.set_user_attr("tsrep_fixed_settings", identity["settings"])


def _run_loop(study, objective, n_trials, timeout, max_trials, callbacks, catch, show_progress_bar, poll_interval):
    """Run trials one at a time until n_trials, timeout or the study's shared max_trials ends the search;
    returns the number of trials this call ran."""
    start = time.monotonic()
    ran = 0
    bar = tqdm(total=_planned_trials(study, n_trials, max_trials), desc="trials", unit="trial",
               disable=not show_progress_bar)
    all_callbacks = [_progress_callback(bar), *(callbacks or [])]
    waiting = False
    try:
        while True:
            if n_trials is not None and ran >= n_trials:
                break
            if timeout is not None and time.monotonic() - start >= timeout:
                break
            if max_trials is not None:
                action = _shared_budget_action(study, max_trials, waiting)
                if action == "stop":
                    break
                waiting = action == "wait"
                if waiting:
                    time.sleep(poll_interval)
                    continue
            try:
                study.optimize(objective, n_trials=1, catch=catch, callbacks=all_callbacks, show_progress_bar=False)
            except _BudgetReached:
                continue  # another worker took the last slot; the checks above decide what follows
            ran += 1
    finally:
        bar.close()
    return ran


def _planned_trials(study, n_trials, max_trials) -> int | None:
    """The progress bar's total: n_trials, capped by what max_trials leaves of the study's budget."""
    if max_trials is None:
        return n_trials
    total = max(max_trials - sum(_trial_counts(study)[s] for s in FINISHED), 0)
    return min(total, n_trials) if n_trials is not None else total


def _progress_callback(bar):
    """An Optuna callback advancing `bar` with the best value so far and the last trial's state."""

    def progress(study_, trial):
        bar.update(1)
        try:
            bar.set_postfix(best=f"{study_.best_value:.4f}", last=trial.state.name.lower())
        except ValueError:  # no completed trial yet
            bar.set_postfix(last=trial.state.name.lower())

    return progress


def _shared_budget_action(study, max_trials: int, already_waiting: bool) -> str:
    """What max_trials, shared by every worker of the study, leaves this worker: "run" a trial, "wait" for
    the running trials of other workers to finish or go stale, or "stop"."""
    fail_stale_trials(study)
    c = _trial_counts(study)
    finished = c[TrialState.COMPLETE] + c[TrialState.PRUNED]
    if finished >= max_trials:
        return "stop"
    if finished + c[TrialState.RUNNING] + c[TrialState.WAITING] < max_trials or c[TrialState.WAITING]:
        return "run"
    if not heartbeat_enabled(study._storage):
        logger.warning(
            "study %r: %d trial(s) still running elsewhere would complete max_trials=%d; "
            "this storage has no heartbeat to detect dead workers, so this worker stops",
            study.study_name, c[TrialState.RUNNING], max_trials,
        )
        return "stop"
    if not already_waiting:
        logger.info(
            "study %r: waiting for %d running trial(s) of other workers to finish or go stale",
            study.study_name, c[TrialState.RUNNING],
        )
    return "wait"


def tune(estimator, X, y, *, n_trials: int | None = None, timeout: float | None = None, max_trials: int | None = None,
         storage=None, study_name: str | None = None, load_if_exists: bool = True, search_space: dict | None = None,
         continuous: bool = False, default_space: bool = True, pruner: optuna.pruners.BasePruner | None = None,
         sampler: optuna.samplers.BaseSampler | None = None, seed: int | None = None, cv=None,
         validation_size: float = 0.2, scoring=None, random_state: int | None = 0, refit: bool = True,
         heartbeat_interval: int | None = 60, grace_period: int | None = None, max_retry: int | None = 3,
         catch: tuple = (), callbacks: list | None = None, enqueue: list[dict] | None = None,
         show_progress_bar: bool = False, poll_interval: float = 2.0, reuse_duplicates: bool = True) -> TuneResult:
    """Tune ``estimator``'s hyper-parameters on (X, y) with Optuna; returns the study and the refitted best.

    Parameters
    ----------
    estimator : a tsrep estimator (any scikit-learn one works; pruning needs tsrep's); parameters outside the search
        space keep its values (e.g. ``max_epochs``).
    X, y : training data only: a trial fits on a training part and is scored on a validation part of it
        (``validation_size``) or averaged over ``cv`` folds, split by ``random_state`` (the same on every worker).
    n_trials, timeout : trials this call runs (None: no cap of its own; 20 if ``max_trials`` and ``timeout`` are None
        too); seconds after which no new trial starts.
    max_trials : cap on the study's finished (complete + pruned) trials, shared by all its workers (give each the same).
    storage, study_name, load_if_exists : None or "memory" keeps the study in memory (gone with the process); to keep,
        resume or share it, a path, URL or storage (:func:`resolve_storage`) and a name (None: a new one). A resumed
        study must be of the same estimator, space, data and fixed settings (``study_identity``), else
        StudyMismatchError names what differs before any trial; trials that a killed process of this machine left
        running are failed and queued again.
    search_space, continuous, default_space : overrides of the paper's space (:class:`SearchSpace`), its continuous
        box, False to tune only ``search_space``; a parameter ``estimator`` sets (``d_model=16``) stays unless named.
    pruner, sampler, seed : default :func:`default_pruner`, fed each epoch's validation score at step (epochs of the
        earlier folds) + epoch; default TPESampler(seed=seed), with ``constant_liar`` on database storages.
    scoring, refit : scorer name or callable (None: ``estimator.score``; a NaN score fails its trial); whether to
        refit the best parameters on all of (X, y).
    heartbeat_interval, grace_period, max_retry, catch : heartbeat of database storages (:mod:`tsrep.tuning.storage`;
        ``heartbeat_interval=None`` turns it off); exception types that fail a trial without stopping the search.
    enqueue, reuse_duplicates : parameter dicts (tuned parameters only) to run first; whether a trial that repeats a
        completed trial's parameters takes its score (user attribute ``duplicate_of``) instead of training again.

    Examples
    --------
    >>> from aeon.datasets import load_italy_power_demand
    >>> from tsrep import EADCTransformerClassifier
    >>> from tsrep.tuning import tune
    >>> X, y = load_italy_power_demand(split="train")
    >>> model = EADCTransformerClassifier(d_model=16, n_heads=2, n_blocks=1, max_epochs=1, min_steps=0, random_state=0)
    >>> study, best = tune(model, X, y, n_trials=2, storage="memory", seed=0,
    ...                    default_space=False, search_space={"alpha": [0.1, 0.9]})
    >>> len(study.trials), best.alpha in (0.1, 0.9)
    (2, True)
    """
    space = _checked_space(estimator, X, y, search_space, continuous, default_space, enqueue)
    n_trials = _trials_to_run(n_trials, max_trials, timeout)
    splits = make_splits(X, y, cv, validation_size, random_state, is_classifier(estimator))
    scorer, metric = check_scoring(estimator, scoring=scoring), _metric_name(estimator, scoring)
    study, storage_obj = _open_study(storage, study_name, load_if_exists, sampler, seed, pruner, heartbeat_interval,
                                     grace_period, max_retry)
    identity = study_identity(estimator, X, y, space, cv, validation_size, random_state, scoring)
    validation = f"{len(splits)}-fold CV" if cv is not None else f"hold-out {validation_size}"
    _prepare_study(study, storage_obj, identity, metric, validation, max_retry, enqueue)
    objective = make_objective(estimator, X, y, space, splits, scorer, max_trials, reuse_duplicates,
                               scoring_name=metric)
    _run_loop(study, objective, n_trials, timeout, max_trials, callbacks, catch, show_progress_bar, poll_interval)
    return _best_result(study, estimator, X, y, space, refit)


def _checked_space(estimator, X, y, search_space, continuous, default_space, enqueue) -> SearchSpace:
    """The search space of a call, once the estimator, the data, the fixed settings and the enqueued trials pass the
    checks that need no study (so that a bad call creates none)."""
    _check_estimator_and_data(estimator, X, y)
    space = SearchSpace(estimator, search_space, continuous=continuous, default=default_space)
    if space.kept:
        logger.info("the default search space leaves %s as the estimator sets it",
                    ", ".join(f"{k}={v!r}" for k, v in space.kept.items()))
    _check_fixed_settings(estimator, space)
    _check_enqueued(enqueue, space)
    return space


def _check_estimator_and_data(estimator, X, y) -> None:
    if not (hasattr(estimator, "fit") and hasattr(estimator, "get_params")):
        raise TypeError(
            f"estimator must be a scikit-learn style estimator (with fit and get_params), got {estimator!r}"
        )
    check_same_length(X, y)
    _check_X_as_fit_does(estimator, X)


def _check_X_as_fit_does(estimator, X) -> None:
    """Run a tsrep estimator's own checks of a training X on all of it, before any split.

    Trials see parts of X: an infinity in a validation part would otherwise surface as another error
    (values too far from the scale of the training part), and case numbers would count within the
    part. Here fit's own message names the case of X given to tune. Other estimators check their
    data themselves in each trial."""
    if not (hasattr(estimator, "_fit_setup_recipe") and hasattr(estimator, "_preprocess_collection")):
        return
    with warnings.catch_warnings():  # warnings about the data come again from each trial's fit
        warnings.simplefilter("ignore")
        clone(estimator)._preprocess_collection(X, store_metadata=True)


def _check_fixed_settings(estimator, space: SearchSpace) -> None:
    """Refuse before any trial a fixed setting that tsrep's estimator would refuse in every trial.

    The estimator's own checks run on one point of the space (fixed values, first choice or lower
    end of each tuned parameter, p snapped as in a trial): a fixed ``d_model=True`` is then one
    SearchSpaceError naming it, not a failed trial and a traceback. Other estimators are not probed
    (their checks may need data).
    """
    if not space.fixed or not hasattr(estimator, "_fit_setup_recipe"):
        return
    params, _ = adjust_params(space.first_point(), space.estimator_params)
    try:
        clone(estimator).set_params(**params)._validate_params()
    except (ValueError, TypeError) as err:
        fixed = ", ".join(f"{k}={v!r}" for k, v in space.fixed.items())
        raise SearchSpaceError(f"the fixed setting(s) {fixed} cannot be used: {err}") from None


def _check_enqueued(enqueue, space: SearchSpace) -> None:
    """Refuse an enqueued trial that sets a parameter the search space does not tune: Optuna would run the
    trial and silently leave that value out (only the space's tuned parameters are ever asked for)."""
    if enqueue is None:
        return
    if isinstance(enqueue, Mapping) or not isinstance(enqueue, (list, tuple)):
        raise TypeError(f"enqueue must be a list of dicts of parameter -> value, got {type(enqueue).__name__}")
    tuned = list(space.distributions)
    for i, params in enumerate(enqueue):
        if not isinstance(params, Mapping):
            raise TypeError(f"enqueue[{i}] must be a dict of parameter -> value, got {params!r}")
        for key in params:
            if key not in space.distributions:
                fixed = f" (the space fixes it at {space.fixed[key]!r})" if key in space.fixed else ""
                raise ValueError(
                    f"enqueue[{i}] sets {key!r}, which is not a tuned parameter of the search space{fixed}; "
                    f"the tuned parameters are: {', '.join(tuned) or 'none'}"
                )


def _trials_to_run(n_trials, max_trials, timeout) -> int | None:
    """n_trials, DEFAULT_N_TRIALS when nothing else ends the search; ValueError for a bad budget."""
    if n_trials is None and max_trials is None and timeout is None:
        n_trials = DEFAULT_N_TRIALS
    for name, value in (("n_trials", n_trials), ("max_trials", max_trials)):
        if value is not None and (not isinstance(value, int) or value < 1):
            raise ValueError(f"{name} must be a positive integer or None, got {value!r}")
    return n_trials


def _open_study(storage, study_name, load_if_exists, sampler, seed, pruner, heartbeat_interval, grace_period,
                max_retry) -> tuple[optuna.Study, object]:
    """(study, storage object): a new study, or the existing one of that name, which must maximise."""
    storage_obj = resolve_storage(
        "memory" if storage is None else storage,
        heartbeat_interval=heartbeat_interval, grace_period=grace_period, max_retry=max_retry,
    )
    if sampler is None:
        # Workers sharing a database see each other's running trials: constant_liar keeps them apart.
        distributed = isinstance(storage_obj, optuna.storages.RDBStorage)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            sampler = optuna.samplers.TPESampler(seed=seed, constant_liar=distributed)
    study = optuna.create_study(
        storage=storage_obj,
        study_name=study_name,
        direction="maximize",
        sampler=sampler,
        pruner=pruner if pruner is not None else default_pruner(),
        load_if_exists=load_if_exists,
    )
    if study.direction != optuna.study.StudyDirection.MAXIMIZE:
        raise ValueError(f"study {study.study_name!r} exists and minimises; tsrep studies maximise a score")
    return study, storage_obj


def _check_and_record_identity(study: optuna.Study, identity: dict, metric: str, validation: str) -> None:
    """check_study_identity, and in a new study also what it tunes and how trials are scored."""
    new_study = "tsrep_search_space" not in study.user_attrs
    check_study_identity(study, identity, new_study)
    if new_study:
        study.set_user_attr("tsrep_estimator", identity["estimator"])
        study.set_user_attr("tsrep_search_space", identity["space"])
        study.set_user_attr("tsrep_scoring", metric)
        study.set_user_attr("tsrep_validation", validation)


def _prepare_study(study: optuna.Study, storage_obj, identity: dict, metric: str, validation: str, max_retry,
                   enqueue) -> None:
    """Ready `study` for this call's trials: check (or record) what it is a study of, fail the trials a killed run
    of this machine left running, queue the `enqueue` trials, and log where the study lives."""
    _check_and_record_identity(study, identity, metric, validation)
    _fail_dead_owner_trials(study, max_retry)
    for params in enqueue or []:
        study.enqueue_trial(params, skip_if_exists=True)
    logger.info("study %r in %s", study.study_name, mask_url(getattr(storage_obj, "url", "memory")))


def _fail_dead_owner_trials(study: optuna.Study, max_retry) -> None:
    """Fail (and queue again) the trials a killed run of this machine left running, before the heartbeat's grace."""
    for number in fail_dead_owner_trials(study, max_retry):
        logger.warning("study %r: trial %d was left running by a process of this machine that is gone; "
                       "marked failed%s", study.study_name, number, " and queued again" if max_retry != 0 else "")


def _best_result(study: optuna.Study, estimator, X, y, space: SearchSpace, refit: bool) -> TuneResult:
    """The TuneResult of the study's best trial, its parameters refitted on all of (X, y) when refit."""
    try:
        best_trial = study.best_trial
    except ValueError:
        best_trial = None
    if best_trial is None:
        if refit:
            nan = [t for t in study.get_trials(deepcopy=False, states=(TrialState.FAIL,))
                   if "tsrep_nan_score" in t.user_attrs]
            if nan:
                first = nan[0].user_attrs["tsrep_nan_score"]
                more = f" (and in trial(s) {', '.join(str(t.number) for t in nan[1:])})" if nan[1:] else ""
                raise RuntimeError(
                    f"the scorer {first['scorer']!r} returned NaN in trial {nan[0].number} (fold {first['fold']})"
                    f"{more}, so study {study.study_name!r} has no completed trial to refit; a score must be a number: "
                    "check what the scorer computes on the validation parts (e.g. a metric undefined for them)"
                )
            raise RuntimeError(
                f"study {study.study_name!r} has no completed trial (all pruned or failed): nothing to refit; "
                "run more trials or use a less aggressive pruner"
            )
        return TuneResult(study, None)
    best_params = best_params_of(best_trial, space)
    best_estimator = clone(estimator).set_params(**best_params)
    if refit:
        best_estimator.fit(X, y)
    else:
        best_estimator = None
    return TuneResult(study, best_estimator, best_params, float(best_trial.value), best_trial)
