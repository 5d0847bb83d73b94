"""Callbacks: code that follows a training run epoch by epoch, logs it, or stops it.

Every tsrep training loop (the estimators' ``fit``, ``TSRepEncoder.fit``'s pretraining,
:func:`tsrep.training.fit_classifier`) takes ``callbacks=``: one object or a list of them. A callback
is any object with at least one of these methods (:class:`Callback` has all three, doing nothing):

``on_fit_start(info)``
    Before the first epoch. ``info`` is a dict: ``"model"`` (the network being trained),
    ``"epochs"`` (the epoch budget), ``"start_epoch"`` (0, or the first epoch still to run when a fit
    resumes from a checkpoint), ``"params"`` (the estimator's parameters, or the loop's settings),
    ``"member"`` (index of the seed-ensemble member, or None), ``"phase"`` ("train" or "pretrain"),
    ``"estimator"`` (the estimator being fitted; absent in ``fit_classifier``) and, in the
    estimators' supervised training, ``"make_scorer"``: ``make_scorer(X, y)`` returns a
    function of no argument that scores the network as it stands on (X, y) with the estimator's
    validation score (accuracy, or minus the MSE), for pruning or logging on data of one's own.
``on_epoch_end(epoch, logs)``
    After every epoch (0-based ``epoch``). ``logs`` holds ``"train_loss"`` (mean training loss of
    the epoch), ``"val_loss"`` and ``"val_score"`` when the fit holds out a validation split (or,
    in ``fit_classifier``, has ``eval_data``), ``"lr"`` (learning rate at the
    end of the epoch) and ``"seconds"`` (wall time of the epoch). **Returning True stops training**
    after this epoch (XGBoost's ``after_iteration`` convention; Keras sets ``model.stop_training``,
    which needs a model object of its own). An exception raised here propagates out of ``fit``
    (which leaves an estimator unfitted): how the tuner's pruning stops a trial.
``on_fit_end(logs)``
    After the last epoch, and also when training raised (then ``logs["error"]`` is the exception,
    otherwise None), so that loggers always close their files. ``logs["history"]`` holds the
    per-epoch values.

Callbacks are estimator parameters: ``get_params`` lists them and ``clone`` deep-copies them, so
they must be picklable and copyable (the built-in loggers open their files in ``on_fit_start`` and
close them in ``on_fit_end``; a fitted estimator pickles with them). Under data parallelism the hooks
run on every rank; the built-in loggers write on rank 0 only, and the stop decision of rank 0 is the
one every rank follows.
"""

from __future__ import annotations

import csv
import math
import numbers
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from tsrep.training.distributed import broadcast_object, is_distributed, is_main_process

HOOKS = ("on_fit_start", "on_epoch_end", "on_fit_end")

#: Columns of :class:`CSVLogger`, in this order; any other value of ``logs`` follows, sorted by name.
CSV_COLUMNS = ("epoch", "train_loss", "val_loss", "val_score", "lr", "seconds")


class Callback:
    """Base class of callbacks: every hook does nothing (override the ones you need).

    Examples
    --------
    A callback that stops training once the training loss is below a threshold (``on_epoch_end``
    returning True stops the fit after that epoch):

    >>> import numpy as np
    >>> from tsrep import EADCTransformerClassifier
    >>> rng = np.random.default_rng(0)
    >>> X, y = rng.normal(size=(20, 2, 30)), np.array(["a", "b"] * 10)
    >>> from tsrep.training.callbacks import Callback
    >>> class StopBelow(Callback):
    ...     def __init__(self, threshold):
    ...         self.threshold = threshold
    ...
    ...     def on_epoch_end(self, epoch, logs):
    ...         return logs["train_loss"] < self.threshold
    >>> clf = EADCTransformerClassifier(d_model=8, n_blocks=1, n_heads=2, min_steps=0, random_state=0, max_epochs=50,
    ...                                 callbacks=StopBelow(5.0))
    >>> clf = clf.fit(X, y)
    >>> clf.n_epochs_  # a two-class cross-entropy starts near 0.7: stopped after the first epoch
    1
    """

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if not k.startswith("_") and not k.endswith("_"))
        return f"{type(self).__name__}({shown})"

    def on_fit_start(self, info: dict) -> None:
        pass

    def on_epoch_end(self, epoch: int, logs: dict) -> bool | None:
        return None

    def on_fit_end(self, logs: dict) -> None:
        pass


def check_callbacks(callbacks, name: str = "callbacks") -> list:
    """The callbacks as a list: None gives [], one object gives [object]; an object with none of the
    hooks is a TypeError naming `name`."""
    if callbacks is None:
        return []
    items = list(callbacks) if isinstance(callbacks, (list, tuple)) else [callbacks]
    for i, cb in enumerate(items):
        if not any(callable(getattr(cb, hook, None)) for hook in HOOKS):
            where = name if not isinstance(callbacks, (list, tuple)) else f"{name}[{i}]"
            raise TypeError(
                f"{where} is a {type(cb).__name__} with none of the callback methods {', '.join(HOOKS)}; "
                "give tsrep.training.callbacks.Callback subclasses (or objects with at least one of those methods)"
            )
    return items


def _as_number(value):
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return float(value)
    return None


class CallbackList:
    """Calls the hooks of several callbacks in order (what the training loops use)."""

    def __init__(self, callbacks, name: str = "callbacks"):
        self.callbacks = check_callbacks(callbacks, name)
        self.started = False

    def fit_start(self, info: dict) -> None:
        self.started = True
        for cb in self.callbacks:
            hook = getattr(cb, "on_fit_start", None)
            if callable(hook):
                hook(info)

    def epoch_end(self, epoch: int, logs: dict) -> bool:
        """True when a callback asks to stop (rank 0's answer on every rank)."""
        stop = False
        for cb in self.callbacks:
            hook = getattr(cb, "on_epoch_end", None)
            answer = hook(epoch, dict(logs)) if callable(hook) else None
            if isinstance(answer, (bool, np.bool_)) and answer:
                stop = True
        if self.callbacks and is_distributed():
            stop = bool(broadcast_object(stop))
        return stop

    @contextmanager
    def fitting(self, info: dict, history):
        """``fit_start(info)`` on entry and ``fit_end({"error": ..., "history": history})`` on exit, also
        when the block raises (then "error" is the exception, which propagates)."""
        logs = {"error": None, "history": history}
        try:
            self.fit_start(info)  # inside: callbacks started before one that fails are ended too
            yield
        except BaseException as exc:
            logs["error"] = exc
            raise
        finally:
            self.fit_end(logs)

    def fit_end(self, logs: dict) -> None:
        """Every callback's on_fit_end, even when an earlier one raises (the first error is re-raised)."""
        if not self.started:
            return
        self.started = False
        first = None
        for cb in self.callbacks:
            hook = getattr(cb, "on_fit_end", None)
            if callable(hook):
                try:
                    hook(logs)
                except Exception as exc:  # noqa: BLE001 - the others must still close their files
                    first = first or exc
        if first is not None and logs.get("error") is None:
            raise first


@contextmanager
def _needs_extra(logger: str, package: str):
    """Turn a failed import of the optional `package` inside the block into an ImportError saying how to install it
    (``pip install tsrep[package]``)."""
    try:
        yield
    except ImportError as exc:
        raise ImportError(
            f"{logger} needs the {package} package: pip install 'tsrep[{package}]' (or pip install {package}); "
            f"import failed with: {exc}"
        ) from exc


class _FileLogger(Callback):
    """A logger that opens what it writes to at the start of a fit, on rank 0 only (:meth:`_open`), and closes
    it at the end of the fit or before the next; pickles and copies hold nothing open."""

    #: Attributes that hold what is open (None when closed).
    _OPEN: tuple = ()

    def __getstate__(self):
        return {**self.__dict__, **dict.fromkeys(self._OPEN)}

    def on_fit_start(self, info: dict) -> None:
        self.close()
        if is_main_process():
            self._open(info)

    def _open(self, info: dict) -> None:
        raise NotImplementedError

    def on_fit_end(self, logs: dict) -> None:
        self.close()

    def close(self) -> None:
        raise NotImplementedError


def _member_path(path: Path, member) -> Path:
    """`path` for a seed-ensemble member: ``log.csv`` -> ``log.member-2.csv``."""
    if member is None:
        return path
    return path.with_name(f"{path.stem}.member-{member}{path.suffix}")


class CSVLogger(_FileLogger):
    """One CSV row per epoch: columns ``epoch, train_loss, val_loss, val_score, lr, seconds`` (empty
    cells where a value does not exist, e.g. ``val_*`` without a validation split), then any other
    value of ``logs`` by name.

    The file is rewritten at the start of every fit; a fit that resumes from a checkpoint keeps the
    rows of the epochs it does not run again. Seed-ensemble members write ``<stem>.member-<i><suffix>``.
    Written by rank 0 only under data parallelism; each row is flushed at once.

    Parameters
    ----------
    path : str or path-like
        The CSV file (its directory is created).

    Examples
    --------
    >>> import numpy as np
    >>> from tsrep import EADCTransformerClassifier
    >>> rng = np.random.default_rng(0)
    >>> X, y = rng.normal(size=(20, 2, 30)), np.array(["a", "b"] * 10)
    >>> import csv, tempfile
    >>> from pathlib import Path
    >>> from tsrep.training.callbacks import CSVLogger
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = Path(tmp) / "log.csv"
    ...     clf = EADCTransformerClassifier(d_model=8, n_blocks=1, n_heads=2, min_steps=0, random_state=0, max_epochs=3,
    ...                                     callbacks=CSVLogger(path)).fit(X, y)
    ...     rows = list(csv.DictReader(path.read_text().splitlines()))
    >>> len(rows), list(rows[0])  # no validation split on 20 cases: val_* cells are empty
    (3, ['epoch', 'train_loss', 'val_loss', 'val_score', 'lr', 'seconds'])
    """

    _OPEN = ("_file", "_writer", "_columns")

    def __init__(self, path):
        self.path = path
        self._file = None
        self._writer = None
        self._columns = None

    def __deepcopy__(self, memo):
        return type(self)(self.path)

    def _open(self, info: dict) -> None:
        path = _member_path(Path(self.path), info.get("member"))
        start = int(info.get("start_epoch", 0))
        kept: list[dict] = []
        if start > 0 and path.is_file():
            with open(path, newline="") as f:
                kept = [row for row in csv.DictReader(f) if row.get("epoch", "").isdigit() and int(row["epoch"]) < start]
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._file = open(path, "w", newline="")
        except OSError as exc:
            raise OSError(f"CSVLogger cannot write {str(path)!r}: {exc.strerror or exc}") from exc
        self._columns = list(kept[0].keys()) if kept else None
        self._writer = None
        if kept:
            self._writer = csv.DictWriter(self._file, self._columns, extrasaction="ignore")
            self._writer.writeheader()
            self._writer.writerows(kept)
            self._file.flush()

    def on_epoch_end(self, epoch: int, logs: dict) -> None:
        if self._file is None:
            return
        row = {"epoch": epoch, **{k: v for k, v in logs.items() if _as_number(v) is not None or v is None}}
        if self._writer is None:
            extra = sorted(k for k in row if k not in CSV_COLUMNS)
            self._columns = [*CSV_COLUMNS, *extra]
            self._writer = csv.DictWriter(self._file, self._columns, extrasaction="ignore")
            self._writer.writeheader()
        self._writer.writerow({k: "" if row.get(k) is None else row[k] for k in self._columns})
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
        self._file, self._writer = None, None


def _after_existing_event_files(log_dir: Path) -> None:
    """Wait (at most a second) until a new event file's name sorts after those in `log_dir`.

    Readers replay a directory's event files in name order, and names start with the creation time
    in whole seconds, then host and pid: a resumed fit's file created in the same second as the
    crashed fit's could sort first (a lower pid), and the purge of the redone epochs would then
    apply to the wrong file.
    """
    newest = 0
    for path in log_dir.glob("events.out.tfevents.*"):
        stamp = path.name.split(".")[3]
        if stamp.isdigit():
            newest = max(newest, int(stamp))
    deadline = time.time() + 1.5  # a file stamped in the future (clock skew) is not waited for
    while int(time.time()) <= newest and time.time() < deadline:
        time.sleep(0.05)


class TensorBoardLogger(_FileLogger):
    """Every numeric value of ``logs`` as a TensorBoard scalar (tag = its name, step = the epoch),
    with ``torch.utils.tensorboard.SummaryWriter``. Needs the ``tensorboard`` package
    (``pip install tsrep[tensorboard]``). Rank 0 only under data parallelism; seed-ensemble members
    write to ``<log_dir>/member-<i>``. A fit resumed from a checkpoint purges the events of the epochs
    it runs again.

    Parameters
    ----------
    log_dir : str or path-like
        Directory of the event files (``tensorboard --logdir`` it).

    Examples
    --------
    >>> import numpy as np
    >>> from tsrep import EADCTransformerClassifier
    >>> rng = np.random.default_rng(0)
    >>> X, y = rng.normal(size=(20, 2, 30)), np.array(["a", "b"] * 10)
    >>> import tempfile
    >>> from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    >>> from tsrep.training.callbacks import TensorBoardLogger
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     clf = EADCTransformerClassifier(d_model=8, n_blocks=1, n_heads=2, min_steps=0, random_state=0, max_epochs=3,
    ...                                     callbacks=TensorBoardLogger(tmp)).fit(X, y)
    ...     events = EventAccumulator(tmp).Reload()  # what TensorBoard shows
    ...     steps = [event.step for event in events.Scalars("train_loss")]
    >>> steps
    [0, 1, 2]
    """

    _OPEN = ("_writer",)

    def __init__(self, log_dir):
        self.log_dir = log_dir
        self._writer = None

    def __deepcopy__(self, memo):
        return type(self)(self.log_dir)

    def _open(self, info: dict) -> None:
        with _needs_extra("TensorBoardLogger", "tensorboard"):
            from torch.utils.tensorboard import SummaryWriter
        log_dir = Path(self.log_dir)
        if info.get("member") is not None:
            log_dir = log_dir / f"member-{info['member']}"
        # A resumed fit: events of the epochs it runs again (logged before a crash) are dropped.
        start = int(info.get("start_epoch", 0))
        if start > 0:
            _after_existing_event_files(log_dir)
        self._writer = SummaryWriter(log_dir=str(log_dir), purge_step=start if start > 0 else None)

    def on_epoch_end(self, epoch: int, logs: dict) -> None:
        if self._writer is None:
            return
        for key, value in logs.items():
            number = _as_number(value)
            if number is not None and math.isfinite(number):
                self._writer.add_scalar(key, number, epoch)
        self._writer.flush()

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
        self._writer = None


class MLflowLogger(Callback):
    """Every numeric value of ``logs`` as an MLflow metric (step = the epoch) and the estimator's
    parameters as MLflow params. Needs ``mlflow`` (``pip install tsrep[mlflow]``). Rank 0 only.

    Parameters
    ----------
    tracking_uri : str or None, default=None
        Where runs go: a database (e.g. ``"sqlite:///mlflow.db"``) or a server URL; None: MLflow's
        own setting (``MLFLOW_TRACKING_URI``, else MLflow's default, ``sqlite:///mlflow.db`` in the
        working directory since MLflow 3). MLflow 3 refuses new runs in a ``file:`` store (the file
        backend is in maintenance mode).
    experiment_name : str or None, default=None
    run_name : str or None, default=None
        Seed-ensemble members get ``<run_name>-member-<i>``.
    log_params : bool, default=True

    A run is started in ``on_fit_start`` (nested when a run is already active) and ended in
    ``on_fit_end``; ``run_id_`` is the id of the last run.

    Examples
    --------
    >>> import numpy as np
    >>> from tsrep import EADCTransformerClassifier
    >>> rng = np.random.default_rng(0)
    >>> X, y = rng.normal(size=(20, 2, 30)), np.array(["a", "b"] * 10)
    >>> import tempfile
    >>> import mlflow
    >>> from tsrep.training.callbacks import MLflowLogger
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     logger = MLflowLogger(tracking_uri=f"sqlite:///{tmp}/mlflow.db",
    ...                           experiment_name="tsrep-demo", run_name="tiny")
    ...     clf = EADCTransformerClassifier(d_model=8, n_blocks=1, n_heads=2, min_steps=0, random_state=0, max_epochs=3,
    ...                                     callbacks=logger).fit(X, y)
    ...     client = mlflow.MlflowClient(tracking_uri=logger.tracking_uri)
    ...     run = client.get_run(logger.run_id_)
    ...     losses = client.get_metric_history(logger.run_id_, "train_loss")
    >>> run.info.run_name, run.data.params["d_model"], [m.step for m in losses]
    ('tiny', '8', [0, 1, 2])
    """

    def __init__(self, tracking_uri=None, experiment_name=None, run_name=None, log_params=True):
        self.tracking_uri = tracking_uri
        self.experiment_name = experiment_name
        self.run_name = run_name
        self.log_params = log_params
        self._run = None

    def __getstate__(self):
        return {**self.__dict__, "_run": None}

    def __deepcopy__(self, memo):
        return type(self)(self.tracking_uri, self.experiment_name, self.run_name, self.log_params)

    @staticmethod
    def _mlflow():
        with _needs_extra("MLflowLogger", "mlflow"):
            import mlflow
        return mlflow

    def on_fit_start(self, info: dict) -> None:
        if not is_main_process():
            return
        mlflow = self._mlflow()
        if self.tracking_uri is not None:
            mlflow.set_tracking_uri(self.tracking_uri)
        if self.experiment_name is not None:
            mlflow.set_experiment(self.experiment_name)
        name = self.run_name
        if name is not None and info.get("member") is not None:
            name = f"{name}-member-{info['member']}"
        self._run = mlflow.start_run(run_name=name, nested=mlflow.active_run() is not None)
        self.run_id_ = self._run.info.run_id
        if self.log_params and info.get("params"):
            mlflow.log_params({k: repr(v) if not isinstance(v, (str, int, float, bool)) else v
                               for k, v in info["params"].items() if k != "callbacks"})

    def on_epoch_end(self, epoch: int, logs: dict) -> None:
        if self._run is None:
            return
        metrics = {k: _as_number(v) for k, v in logs.items()}
        self._mlflow().log_metrics(
            {k: v for k, v in metrics.items() if v is not None and math.isfinite(v)}, step=epoch
        )

    def on_fit_end(self, logs: dict) -> None:
        if self._run is None:
            return
        self._run = None
        self._mlflow().end_run(status="FAILED" if logs.get("error") is not None else "FINISHED")


class OptunaPruning(Callback):
    """Report a score to an Optuna trial after every epoch and stop the fit (``optuna.TrialPruned``)
    when the trial's pruner says so: what :func:`tsrep.tuning.tune` adds to every trial's fits.

    Parameters
    ----------
    trial : optuna.Trial
    X, y : the data scored after every epoch (the trial's validation fold), with the estimator's
        validation score through ``info["make_scorer"]``; without it (a loop with no scorer) the
        epoch's ``val_score`` is reported, when there is one.
    step_offset : int, default=0
        Added to the epoch: fold k of a cross-validated trial reports after the epochs of the
        folds before it.
    transform : callable or None
        Applied to X before scoring (the earlier steps of a Pipeline).

    Examples
    --------
    Pruning a hand-written Optuna study (:func:`tsrep.tuning.tune` does this for you):

    >>> import numpy as np
    >>> from tsrep import EADCTransformerClassifier
    >>> rng = np.random.default_rng(0)
    >>> X, y = rng.normal(size=(20, 2, 30)), np.array(["a", "b"] * 10)
    >>> import optuna
    >>> from tsrep.training.callbacks import OptunaPruning
    >>> def objective(trial):
    ...     clf = EADCTransformerClassifier(d_model=8, n_blocks=1, n_heads=2, min_steps=0, random_state=0, max_epochs=3,
    ...                                     alpha=trial.suggest_float("alpha", 0.0, 1.0),
    ...                                     callbacks=OptunaPruning(trial, X[15:], y[15:]))
    ...     return clf.fit(X[:15], y[:15]).score(X[15:], y[15:])
    >>> study = optuna.create_study(direction="maximize", pruner=optuna.pruners.MedianPruner())
    >>> study.optimize(objective, n_trials=2)
    >>> [len(trial.intermediate_values) for trial in study.trials]  # a score after every epoch
    [3, 3]
    """

    def __init__(self, trial, X=None, y=None, step_offset=0, transform=None):
        self.trial = trial
        self.X = X
        self.y = y
        self.step_offset = step_offset
        self.transform = transform
        self._score = None

    def __getstate__(self):  # the trial's storage does not travel: a pickled estimator drops the trial
        return {**self.__dict__, "trial": None, "_score": None, "transform": None}

    def __deepcopy__(self, memo):  # clone: share the (uncopyable) trial, copy nothing else
        return type(self)(self.trial, self.X, self.y, self.step_offset, self.transform)

    def on_fit_start(self, info: dict) -> None:
        self._score = None
        make_scorer = info.get("make_scorer")
        if self.X is not None and make_scorer is not None:
            X = self.X if self.transform is None else self.transform(self.X)
            self._score = make_scorer(X, self.y)

    def on_epoch_end(self, epoch: int, logs: dict) -> None:
        import optuna

        score = self._score() if self._score is not None else logs.get("val_score")
        if self.trial is None or score is None or not math.isfinite(score):
            return
        self.trial.report(float(score), self.step_offset + epoch)
        if self.trial.should_prune():
            raise optuna.TrialPruned(f"pruned at epoch {epoch} (validation score {score:.4f})")

    def on_fit_end(self, logs: dict) -> None:
        self._score = None


def current_lr(optimizer) -> float:
    """Learning rate of the optimiser's first parameter group."""
    groups = getattr(optimizer, "param_groups", None) or [{}]
    return float(groups[0].get("lr", float("nan")))
