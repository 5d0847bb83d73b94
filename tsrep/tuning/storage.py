"""Where studies live: an SQLite file by default, any Optuna storage URL, heartbeats for distributed workers.

* ``None`` -> the default SQLite file, ``$TSREP_STUDY_DB`` or ``./tsrep-studies.db`` (tsrep-tune's
  default; :func:`tsrep.tuning.tune` without a storage keeps its study in memory);
* ``"memory"`` (or ``":memory:"``) -> Optuna's in-memory storage (gone with the process);
* a path without ``://`` -> an SQLite file there;
* any SQLAlchemy URL Optuna accepts (``sqlite:///x.db``, ``postgresql://user@host:5432/db``,
  ``mysql+pymysql://...``) -> :class:`optuna.storages.RDBStorage`;
* an ``optuna.storages.BaseStorage`` object, used as it is.

Database storages get Optuna's heartbeat: a running trial whose worker stops beating for
``grace_period`` seconds (killed, machine lost) is marked FAIL by the next worker that looks, and
``RetryHeartbeatStaleTrialCallback`` (formerly ``RetryFailedTrialCallback``) queues it again with the
same parameters, up to ``max_retry`` times.

A trial killed on this machine need not wait for the grace period: every trial records its owner
(host, process id and that process's start time), and a run that opens the study marks FAIL, and
queues again, the RUNNING trials whose owner was a process of this machine that no longer exists
(:func:`fail_dead_owner_trials`). Trials of other machines are left to the heartbeat.
"""

from __future__ import annotations

import copy
import os
import socket
import warnings
from pathlib import Path

import optuna
from optuna.storages import BaseStorage, InMemoryStorage, RDBStorage

from tsrep._database_urls import mask_url, with_postgres_driver
from tsrep.exceptions import StorageError

DEFAULT_DB_ENV = "TSREP_STUDY_DB"
DEFAULT_DB_NAME = "tsrep-studies.db"
DEFAULT_HEARTBEAT_INTERVAL = 60
MEMORY = ("memory", ":memory:")

try:  # Optuna >= 4.9 renamed the callback and its storage argument
    from optuna.storages import RetryHeartbeatStaleTrialCallback as _RetryCallback

    _CALLBACK_ARG = "heartbeat_stale_trial_callback"
except ImportError:  # pragma: no cover - older Optuna
    from optuna.storages import RetryFailedTrialCallback as _RetryCallback

    _CALLBACK_ARG = "failed_trial_callback"


def default_storage_url() -> str:
    path = Path(os.environ.get(DEFAULT_DB_ENV) or DEFAULT_DB_NAME).expanduser().resolve()
    return f"sqlite:///{path}"


def _explain(url: str, error: BaseException) -> str:
    first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    masked = mask_url(url)
    if url.startswith("sqlite"):
        target = url.split(":///", 1)[-1]
        hint = f"check that the directory of {target!r} exists and is writable"
    else:
        hint = "check that the database server is running and reachable, and the URL's host, port, database and user"
    return f"cannot open the Optuna storage {masked}: {first} ({hint})"


def resolve_storage(
    storage=None,
    *,
    heartbeat_interval: int | None = DEFAULT_HEARTBEAT_INTERVAL,
    grace_period: int | None = None,
    max_retry: int | None = 3,
    connect_timeout: int = 10,
) -> BaseStorage:
    """An Optuna storage for ``storage`` (see the module docstring). Raises StorageError if unreachable."""
    if isinstance(storage, BaseStorage):
        return storage
    if storage is None:
        storage = default_storage_url()
    if not isinstance(storage, (str, os.PathLike)):
        raise TypeError(f"storage must be None, a URL, a path or an optuna storage, got {type(storage).__name__}")
    url = os.fspath(storage)
    if url in MEMORY:
        return InMemoryStorage()
    if "://" not in url:
        url = f"sqlite:///{Path(url).expanduser().resolve()}"
    if url.startswith("sqlite:///"):
        target = url[len("sqlite:///"):]
        if target and target != ":memory:" and not Path(target).parent.is_dir():
            raise StorageError(
                f"cannot open the Optuna storage {url}: directory {str(Path(target).parent)!r} does not exist"
            )
    url = with_postgres_driver(url)
    engine_kwargs: dict = {"pool_pre_ping": True}
    if url.startswith(("postgresql", "postgres")):
        engine_kwargs["connect_args"] = {"connect_timeout": int(connect_timeout)}
    elif url.startswith("mysql"):
        engine_kwargs["connect_args"] = {"connect_timeout": int(connect_timeout)}
    kwargs: dict = {}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            if heartbeat_interval:
                kwargs["heartbeat_interval"] = int(heartbeat_interval)
                kwargs["grace_period"] = int(grace_period) if grace_period else 2 * int(heartbeat_interval)
                if max_retry is None or max_retry > 0:
                    kwargs[_CALLBACK_ARG] = _RetryCallback(max_retry=max_retry)
            return RDBStorage(url, engine_kwargs=engine_kwargs, **kwargs)
    except ImportError as e:
        driver = "psycopg (pip install 'tsrep[postgres]')" if "postgres" in url else "the database driver"
        raise StorageError(f"cannot open the Optuna storage {mask_url(url)}: install {driver} ({e})") from e
    except Exception as e:  # sqlalchemy's OperationalError, ArgumentError, ...
        if type(e).__module__.startswith("sqlalchemy") or isinstance(e, (OSError, ValueError)):
            raise StorageError(_explain(url, e)) from e
        raise


def _process_start(pid: int) -> str | None:
    """When process `pid` started (Linux: clock ticks after boot); None where unknown or the process
    has ended (a zombie waiting for its parent counts as ended). With the pid it names one process: a
    pid reused by a later process has another start time."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[-1].split()  # after the command name, which may hold spaces
    return None if fields[0] in ("Z", "X") else fields[19]


def owner_record(trial_number: int) -> dict:
    """Who runs a trial: this machine and process (stored as the trial's ``tsrep_owner`` user attribute).

    The trial's number is part of it: a retried trial inherits its original's user attributes, and
    must not be taken for the original's (dead) owner's."""
    pid = os.getpid()
    return {"host": socket.gethostname(), "pid": pid, "started": _process_start(pid), "trial": trial_number}


def _owner_is_gone(owner: dict) -> bool:
    """True only when certain: the owner ran on this machine and its process no longer exists."""
    pid = owner.get("pid")
    if os.name != "posix" or owner.get("host") != socket.gethostname() or not isinstance(pid, int):
        return False
    if pid == os.getpid():
        return False
    if owner.get("started") is not None and _process_start(os.getpid()) is not None:
        return _process_start(pid) != owner["started"]  # gone, or the pid now names another process
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def fail_dead_owner_trials(study: optuna.Study, max_retry: int | None = 3) -> list[int]:
    """Mark FAIL the RUNNING trials whose owner was a process of this machine that is gone (killed,
    crashed), and queue each again with the same parameters as the heartbeat's retry does (up to
    `max_retry` retries of one trial; None: no limit). Returns the numbers of the trials failed."""
    failed = []
    storage = study._storage
    for trial in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
        owner = trial.user_attrs.get("tsrep_owner")
        if not isinstance(owner, dict) or owner.get("trial") != trial.number or not _owner_is_gone(owner):
            continue
        try:
            if not storage.set_trial_state_values(trial._trial_id, state=optuna.trial.TrialState.FAIL):
                continue
        except optuna.exceptions.UpdateFinishedTrialError:
            continue  # another process failed it first (and queued its retry)
        failed.append(trial.number)
        if max_retry is None or max_retry > 0:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                _RetryCallback(max_retry=max_retry)(study, copy.deepcopy(storage.get_trial(trial._trial_id)))
    return failed


def heartbeat_enabled(storage: BaseStorage) -> bool:
    from optuna.storages._heartbeat import is_heartbeat_enabled

    return is_heartbeat_enabled(storage)


def fail_stale_trials(study: optuna.Study) -> None:
    """Mark trials of dead workers FAIL (and queue their retries), if the storage has heartbeats."""
    if heartbeat_enabled(study._storage):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            optuna.storages.fail_stale_trials(study)
