"""Running the cells of a benchmark: models x datasets x seeds, each cell's hyperparameters chosen on a
validation split of TRAIN, each finished cell stored at once (tsrep.benchmarks.store).

Protocol of one cell (dataset, model, seed):

1. load TRAIN and TEST (tsrep.data.load_archive);
2. with more than one grid point: split TRAIN into a fitting part and a validation part
   (``validation_fraction``, stratified by class for classification when every class has two
   cases, seeded by the cell's seed), fit every grid point on the fitting part and score it on the
   validation part (accuracy, or RMSE for regression); the best point wins (ties: the first in
   grid order). TEST is never looked at;
3. refit the chosen point on all of TRAIN (``refit: true``; else keep the model fitted on the
   fitting part) and score TEST: accuracy, or RMSE in the targets' units. The test outputs (class
   probabilities, or the predictions of a regressor) are stored beside the score, so that the report
   can average the seeds of a (dataset, model) into a seed ensemble without another fit.

Every fit also carves its own early-stopping split from what it is given (the estimators'
``validation_fraction``), as the estimators always do.

Where cells run: in this process (``jobs=1``), in ``jobs`` joblib worker processes, which end within a
second of a killed parent, or on the workers of a Dask cluster (``scheduler="tcp://host:8786"``,
dask.distributed's Client and as_completed). Workers return rows; only this process writes them.

Progress inside a cell (``progress=True``): the fits of tsrep's models print a line on standard error after
their first epoch and then at most every PROGRESS_SECONDS (:class:`CellProgress`), so that a cell of minutes is
not a silent bar at 0. A joblib worker writes to the terminal of the process that started it; a Dask worker
forwards its lines to the clients (distributed's ``print``), and writes them in its own log too.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from tsrep.benchmarks.config import BenchmarkConfig, grid_points
from tsrep.benchmarks.registry import estimator_fingerprint
from tsrep.benchmarks.store import DEFAULT_NAME, ResultStore, cell_key
from tsrep.data.archive import dataset_task, load_archive
from tsrep.exceptions import SchedulerError


@dataclass(frozen=True)
class Cell:
    dataset: str
    model: str
    seed: int
    task: str
    params: dict = field(hash=False)
    grid: dict = field(hash=False)
    validation_fraction: float = 0.2
    refit: bool = True
    offline: object = None
    cache_dir: str | None = None
    device: str = "auto"
    config: str = ""
    # The registered model that builds the estimator of a variant's cell (`model` is then the variant's name,
    # under which the cell is stored and reported); None for a model's own cell.
    base: str | None = None
    # What the estimator is beyond `params` (tsrep.benchmarks.registry.estimator_fingerprint): its defaults, the
    # package version and the digest of the "auto" rules; empty for a cell made without it.
    estimator: dict = field(default_factory=dict, hash=False, compare=False)

    @property
    def estimator_model(self) -> str:
        """The registered model build_model makes this cell's estimator of."""
        return self.base or self.model

    def spec(self) -> dict:
        """What determines the result (the device does not: a CPU and a GPU run are the same cell)."""
        spec = {
            "dataset": self.dataset, "model": self.model, "seed": self.seed, "task": self.task,
            "params": self.params, "grid": self.grid, "validation_fraction": self.validation_fraction,
            "refit": self.refit,
        }
        if self.base is not None:  # only in a variant's spec: a model's cells keep the keys they were stored by
            spec["base"] = self.base
        if self.estimator:
            spec["estimator"] = self.estimator
        return spec

    @property
    def key(self) -> str:
        return cell_key(self.spec())


def make_cells(cfg: BenchmarkConfig, device: str = "auto") -> list[Cell]:
    cells, fingerprints = [], {}
    for dataset in cfg.datasets:
        task = dataset_task(dataset)
        for model in cfg.models:
            base = cfg.variants[model].model if model in cfg.variants else None
            params = cfg.params_for(model, dataset)
            built = (base or model, task, json.dumps(params, sort_keys=True, default=str))
            if built not in fingerprints:
                fingerprints[built] = estimator_fingerprint(base or model, task, params)
            for seed in cfg.seeds:
                cells.append(Cell(
                    dataset=dataset, model=model, seed=seed, task=task,
                    params=params, grid=cfg.grid_for(model),
                    validation_fraction=cfg.validation_fraction, refit=cfg.refit,
                    offline=cfg.offline, cache_dir=cfg.cache_dir, device=device, config=cfg.name,
                    base=base, estimator=fingerprints[built],
                ))
    return cells


def _subset(X, index):
    return X[index] if isinstance(X, np.ndarray) else [X[i] for i in index]


def split_train(y, fraction: float, seed: int, stratify: bool):
    """(fit indices, validation indices) of TRAIN; stratified when every class has at least two cases."""
    from sklearn.model_selection import train_test_split

    index = np.arange(len(y))
    strat = None
    if stratify:
        _, counts = np.unique(y, return_counts=True)
        n_val = int(np.ceil(fraction * len(y)))
        if counts.min() >= 2 and len(counts) <= n_val <= len(y) - len(counts):
            strat = y
    fit, val = train_test_split(index, test_size=fraction, random_state=seed, stratify=strat)
    return np.sort(fit), np.sort(val)


def score(task: str, y_true, y_pred) -> float:
    """Accuracy (classification) or RMSE (regression)."""
    if task == "classification":
        return float(np.mean(np.asarray(y_pred) == np.asarray(y_true)))
    diff = np.asarray(y_pred, dtype=float) - np.asarray(y_true, dtype=float)
    return float(np.sqrt(np.mean(diff**2)))


def outputs_on_test(task: str, estimator, X_test, y_test, predicted) -> dict:
    """What a seed ensemble of this cell needs (tsrep.benchmarks.report): the class probabilities of TEST
    (with the classes that order their columns) or the regression predictions, and the test targets."""
    outputs = {"targets": np.asarray(y_test), "classes": None, "outputs": None}
    if task == "regression":
        outputs["outputs"] = np.asarray(predicted, dtype=float)
    elif hasattr(estimator, "predict_proba") and hasattr(estimator, "classes_"):
        outputs["outputs"] = np.asarray(estimator.predict_proba(X_test), dtype=np.float32)
        outputs["classes"] = np.asarray(estimator.classes_)
    return outputs


def _better(task: str, a: float, b: float | None) -> bool:
    if b is None:
        return True
    return a > b if task == "classification" else a < b


def cell_row(cell: Cell, **values) -> dict:
    """The stored row of a cell: what identifies it, and `values` (score, status, ...)."""
    return {
        "key": cell.key, "config": cell.config, "dataset": cell.dataset, "model": cell.model, "seed": cell.seed,
        "task": cell.task, "metric": "accuracy" if cell.task == "classification" else "rmse",
        "device": cell.device, "spec": cell.spec(), **values,
    }


#: Seconds between two progress lines of a fit in a cell (the first epoch of every fit prints one at once).
PROGRESS_SECONDS = 30.0


class CellProgress:
    """A training callback (tsrep.training.callbacks) that prints where a cell's fit is: a line after the
    first epoch, then one at most every `interval` seconds (an epoch of a long fit takes well under that), e.g.

        GunPoint / ea-dc-transformer / seed 0: epoch 41/800, train loss 0.412, val score 0.950, 31 s

    Lines go to standard error through tqdm.write (the cells' bar is redrawn below them); on a Dask worker
    through distributed's print, which also forwards them to the connected clients.
    """

    def __init__(self, label: str, interval: float = PROGRESS_SECONDS):
        self.label = label
        self.interval = interval

    def on_fit_start(self, info: dict) -> None:
        self._epochs = info.get("epochs")
        self._phase = "pretraining epoch" if info.get("phase") == "pretrain" else "epoch"
        member = info.get("member")
        self._member = "" if member is None else f" (ensemble member {member + 1})"
        self._start = self._last = time.monotonic()
        self._shown = False

    def on_epoch_end(self, epoch: int, logs: dict) -> None:
        now = time.monotonic()
        if self._shown and now - self._last < self.interval:
            return None
        self._shown, self._last = True, now
        parts = [f"{self._phase} {epoch + 1}/{self._epochs}"]
        for key, name in (("train_loss", "train loss"), ("val_loss", "val loss"), ("val_score", "val score")):
            if isinstance(logs.get(key), (int, float)):
                parts.append(f"{name} {logs[key]:.4g}")
        _write_progress(f"{self.label}{self._member}: {', '.join(parts)}, {now - self._start:.0f} s")
        return None


def _write_progress(line: str) -> None:
    if "distributed" in sys.modules:  # imported in a Dask worker, never by a local run's processes
        from distributed import get_worker, print as dask_print

        try:
            get_worker()
        except ValueError:  # not on a worker: this process's own terminal
            pass
        else:
            dask_print(line, file=sys.stderr)
            return
    from tqdm.auto import tqdm

    if getattr(tqdm, "_instances", None) or not sys.stderr.isatty():
        tqdm.write(line, file=sys.stderr)  # this process's bars (the cells' bar) are redrawn below the line
        return
    # A joblib worker: the terminal's last line may be the cells' bar of the parent process; write over it
    # (carriage return, clear to the end of the line) rather than after it. The parent redraws it next cell.
    sys.stderr.write(f"\r\x1b[K{line}\n")
    sys.stderr.flush()


def run_cell(cell: Cell, progress: bool = False) -> dict:
    """Train and score one cell; returns the row to store (status "ok", or "error" with the message).
    With `progress`, the fits of tsrep's models print progress lines (:class:`CellProgress`)."""
    from tsrep.benchmarks.registry import AEON_PREFIX, build_model

    start = time.perf_counter()
    row = cell_row(cell)
    try:
        X_train, y_train = load_archive(cell.dataset, "train", cache_dir=cell.cache_dir, offline=cell.offline)
        X_test, y_test = load_archive(cell.dataset, "test", cache_dir=cell.cache_dir, offline=cell.offline)
        points = grid_points(cell.grid)
        # aeon's estimators take no callbacks (and fit in seconds); tsrep's all do.
        follow = progress and not cell.estimator_model.lower().startswith(AEON_PREFIX)

        def build(point, step: str = ""):
            label = f"{cell.dataset} / {cell.model} / seed {cell.seed}{step}"
            extra = {"callbacks": CellProgress(label)} if follow else {}
            return build_model(cell.estimator_model, cell.task, seed=cell.seed, device=cell.device,
                               **{**cell.params, **point, **extra})

        chosen, val_score = points[0], None
        estimator = None
        if len(points) > 1:
            fit_idx, val_idx = split_train(
                np.asarray(y_train), cell.validation_fraction, cell.seed, cell.task == "classification"
            )
            X_fit, y_fit = _subset(X_train, fit_idx), np.asarray(y_train)[fit_idx]
            X_val, y_val = _subset(X_train, val_idx), np.asarray(y_train)[val_idx]
            for i, point in enumerate(points):
                candidate = build(point, f", grid point {i + 1}/{len(points)}").fit(X_fit, y_fit)
                s = score(cell.task, y_val, candidate.predict(X_val))
                if _better(cell.task, s, val_score):
                    chosen, val_score, estimator = point, s, candidate
        if estimator is None or cell.refit:
            estimator = build(chosen, ", refit" if len(points) > 1 else "").fit(X_train, y_train)
        predicted = estimator.predict(X_test)
        row.update(outputs_on_test(cell.task, estimator, X_test, y_test, predicted))
        row.update(
            score=score(cell.task, y_test, predicted),
            # None where a model has no count of its own (an aeon estimator without a linear model)
            n_params=None if estimator.n_parameters_ is None else int(estimator.n_parameters_),
            params={**cell.params, **chosen},
            val_score=val_score,
            n_candidates=len(points),
            n_epochs=int(getattr(estimator, "n_epochs_", -1)),
            best_epoch=int(getattr(estimator, "best_epoch_", -1)),
            status="ok",
        )
    except Exception as err:  # one failing cell must not stop the others; it is stored and retried next run
        row.update(status="error", error=f"{type(err).__name__}: {err}\n{traceback.format_exc(limit=3)}")
        row.update(outputs=None)  # a failed cell leaves nothing to average
    row["seconds"] = time.perf_counter() - start
    return row


# Seconds between two checks, in a joblib worker, that the benchmark process that started it is alive.
PARENT_CHECK_SECONDS = 1.0
_watched_parent: int | None = None


def _exit_with_parent(parent_pid: int) -> None:
    """End this worker process within a second of the death of the process `parent_pid` (POSIX).

    joblib's workers notice a dead parent only when their task ends: a benchmark killed with SIGKILL
    would leave its cells training for minutes on cores that nobody reads the results of."""
    global _watched_parent
    if os.name != "posix" or parent_pid in (_watched_parent, os.getpid()):
        return
    _watched_parent = parent_pid
    direct_child = os.getppid() == parent_pid

    def parent_alive() -> bool:
        if direct_child:  # the children of a dead process are handed to another one
            return os.getppid() == parent_pid
        try:
            os.kill(parent_pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass
        return True

    def watch() -> None:
        while parent_alive():
            time.sleep(PARENT_CHECK_SECONDS)
        os._exit(1)

    threading.Thread(target=watch, name="tsrep-parent-watch", daemon=True).start()


def _worker_threads() -> int:
    """Torch threads per cell on a Dask worker: the machine's cores shared by the cells it runs at once."""
    try:
        from distributed import get_worker

        slots = int(getattr(get_worker(), "nthreads", 1))
    except (ImportError, ValueError):
        slots = 1
    return max(1, (os.cpu_count() or 1) // max(1, slots))


def _run_in_worker(cell: Cell, threads: int | None, parent_pid: int | None = None, progress: bool = False) -> dict:
    import torch

    if parent_pid is not None:
        _exit_with_parent(parent_pid)
    torch.set_num_threads(threads or _worker_threads())
    return _run_cell(cell, progress)


def _run_cell(cell: Cell, progress: bool) -> dict:
    # run_cell(cell) where no progress is asked for: a one-argument stand-in for run_cell keeps working.
    return run_cell(cell, progress=True) if progress else run_cell(cell)


def _probe_scheduler(address: str, timeout: float) -> None:
    """Open and close one connection to a tcp:// scheduler; OSError if nothing answers in `timeout` s.

    A Client that fails to connect leaves a half-made object whose clean-up prints tracebacks and
    waits seconds at exit: where nothing answers, no Client is made. Other schemes (tls://, which
    needs the security settings the Client reads) go to the Client directly, as does a call from a
    thread that runs an event loop already (a notebook)."""
    import asyncio

    from distributed.comm import connect
    from distributed.comm.addressing import parse_address
    from distributed.comm.registry import backends

    scheme = parse_address(address)[0]
    if scheme not in backends:
        raise ValueError(f"unknown address scheme {scheme!r}; known: {', '.join(sorted(backends))}")
    if scheme != "tcp":
        return
    try:
        asyncio.get_running_loop()
        return
    except RuntimeError:
        pass

    async def probe():
        comm = await connect(address, timeout=timeout)
        await comm.close()

    asyncio.run(probe())


def connect_scheduler(address: str, timeout: float = 10.0):
    """A distributed.Client of the scheduler at `address` (tcp://host:8786); SchedulerError after `timeout` s."""
    try:
        from distributed import Client
    except ImportError:
        raise SchedulerError(
            "running cells on a Dask cluster needs Dask's distributed package: pip install 'tsrep[dask]'"
        ) from None
    try:
        _probe_scheduler(address, timeout)
        return Client(address, timeout=timeout, set_as_default=False)
    except (ValueError, TypeError) as err:
        raise SchedulerError(f"{address!r} is not a Dask scheduler address ({_first_line(err)}); "
                             "give tcp://HOST:PORT") from None
    except (OSError, TimeoutError) as err:
        raise SchedulerError(
            f"cannot reach the Dask scheduler at {address!r} within {timeout:g} s ({_first_line(err)}); check that "
            "`dask scheduler` runs there and that this machine can reach its port"
        ) from None


def _first_line(err: BaseException) -> str:
    return (str(err).strip().splitlines() or [type(err).__name__])[0]


def _dask_rows(client, cells: list[Cell], threads: int | None, progress: bool = False):
    """Rows of `cells` as the cluster finishes them. Every cell is submitted at once (the scheduler
    places them); a cell whose worker died is placed again by the scheduler, up to its
    ``distributed.scheduler.allowed-failures`` (then it comes back as an error row, run again next time).
    The task key is the cell's key: clients of one scheduler share a cell instead of running it twice."""
    from distributed import as_completed

    futures = {client.submit(_run_in_worker, cell, threads, None, progress, key=f"tsrep-cell-{cell.key}"): cell
               for cell in cells}
    try:
        for future in as_completed(list(futures), loop=client.loop):
            cell = futures.pop(future)
            try:
                row = future.result()
            except Exception as err:  # KilledWorker (its workers kept dying), a worker without tsrep, ...
                row = cell_row(cell, status="error", seconds=0.0,
                               error=f"{type(err).__name__} on the Dask cluster: {err}")
            future.release()
            yield row
    finally:
        if futures:  # interrupted: leave nothing running for a client that is gone
            client.cancel(list(futures))


def check_device(device, local: bool = True) -> None:
    """Refuse a device torch cannot parse (and, for cells run on this machine, CUDA where there is none)
    before any cell runs: otherwise every cell fails with the same error."""
    if device in (None, "auto"):
        return
    import torch

    try:
        torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        raise ValueError(f"device {device!r} is not a device: use auto, cpu, cuda, cuda:N or mps") from None
    if local:
        from tsrep.estimators._checks import resolve_device

        resolve_device(device)


def _positive(name: str, value, allow_none: bool = False):
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")


def run_benchmark(
    cfg: BenchmarkConfig,
    out_dir,
    jobs: int = 1,
    device: str = "auto",
    threads: int | None = None,
    progress: bool = True,
    scheduler=None,
    store=None,
    scheduler_timeout: float = 10.0,
) -> tuple[ResultStore, list[Cell]]:
    """Run every cell of `cfg` not already in the results store; returns the store and all cells.

    Parameters
    ----------
    cfg : BenchmarkConfig
        The models, datasets, seeds and protocol.
    out_dir : str or path-like
        The output directory; the default store is ``out_dir/results.sqlite``.
    jobs : int, default 1
        Cells run at once on this machine (joblib processes); 1 with a scheduler.
    device : str, default "auto"
        Device of every cell's fits.
    threads : int or None
        Torch threads per cell; None: the CPU cores over `jobs` (on a Dask worker: its cores over its threads).
    progress : bool, default True
        Show a progress bar over the cells, and progress lines of the fits inside them (:class:`CellProgress`).
    scheduler : str, distributed.Client or None
        The address of a Dask scheduler (``tcp://host:8786``) or a client of one; None: ``cfg.scheduler``,
        and when that is None too the cells run on this machine. Only this process writes to the store.
    store : ResultStore, str, path-like or None
        An SQLAlchemy URL (``postgresql://user@host/db``), an SQLite path or a store; None: ``cfg.store``,
        else ``out_dir/results.sqlite``.
    scheduler_timeout : float, default 10
        Seconds to wait for the scheduler before SchedulerError.

    Returns
    -------
    (ResultStore, list of Cell)
    """
    from tqdm.auto import tqdm

    scheduler = cfg.scheduler if scheduler is None else scheduler
    _check_run_options(jobs, threads, device, scheduler)
    store = store if isinstance(store, ResultStore) else ResultStore(store or cfg.store or Path(out_dir) / DEFAULT_NAME)
    cells = make_cells(cfg, device)
    done = store.done_keys()
    todo = [c for c in cells if c.key not in done]
    _warn_superseded(store, todo)
    client, threads = _where_to_run(scheduler, bool(todo), jobs, threads, scheduler_timeout)
    bar = tqdm(total=len(cells), initial=len(cells) - len(todo), desc=f"{cfg.name} cells", disable=not progress,
               unit="cell", dynamic_ncols=True)
    try:
        _run_cells(todo, client, jobs, threads, _recorder(store, bar), progress)
    finally:
        bar.close()
        if client is not None and client is not scheduler:
            client.close()
    return store, cells


def _warn_superseded(store: ResultStore, todo: list[Cell]) -> None:
    """A UserWarning when cells about to run are stored already under another specification (superseded_cells)."""
    again = superseded_cells(store, todo)
    if again:
        warnings.warn(
            f"{len(again)} of the {len(todo)} cells to run are in the store {store.where} already, computed under "
            "another specification (a changed default or 'auto' rule, another package version, or other "
            "parameters in the config): they are fitted again, and the old rows are kept but not reported",
            UserWarning, stacklevel=3,
        )


def superseded_cells(store: ResultStore, cells: list[Cell]) -> list[Cell]:
    """The cells of `cells` whose (config, dataset, model, seed) the store holds a finished row of under another
    key: a result of another specification (estimator defaults, "auto" rules, package version or parameters),
    which is not reused."""
    frame = store.frame()
    if not len(frame):
        return []
    frame = frame[frame["status"] == "ok"]
    done = set(frame["key"])
    stored = {(r.config, r.dataset, r.model, int(r.seed)) for r in frame.itertuples()}
    return [c for c in cells if c.key not in done and (c.config, c.dataset, c.model, c.seed) in stored]


def _check_run_options(jobs, threads, device, scheduler) -> None:
    """ValueError for options no cell could run with, before the store is opened."""
    _positive("jobs", jobs)
    _positive("threads", threads, allow_none=True)
    if scheduler is not None and jobs != 1:
        raise ValueError("jobs applies to runs on this machine; on a Dask cluster its workers' threads decide "
                         "how many cells run at once")
    check_device(device, local=scheduler is None)


def _where_to_run(scheduler, cells_to_run: bool, jobs: int, threads, scheduler_timeout: float):
    """(Dask client or None, torch threads per cell): a client of `scheduler` when it has cells to run (connected
    here when it is an address); without a scheduler, `threads` or this machine's cores over `jobs`."""
    client = None
    if scheduler is not None and cells_to_run:
        client = scheduler if not isinstance(scheduler, str) else connect_scheduler(scheduler, scheduler_timeout)
    elif scheduler is None:
        threads = threads or max(1, (os.cpu_count() or 1) // jobs)
    return client, threads


def _run_cells(todo: list[Cell], client, jobs: int, threads, record, progress: bool) -> None:
    """Run the cells `todo`, handing each finished cell's row to `record`: on the Dask cluster of `client`, else in
    this process (``jobs=1``) or in `jobs` worker processes."""
    if client is not None:
        _run_on_cluster(client, todo, threads, record, progress)
    elif jobs == 1:
        _run_in_this_process(todo, threads, record, progress)
    elif todo:
        _run_in_processes(todo, jobs, threads, record, progress)


def _recorder(store: ResultStore, bar) -> Callable[[dict], None]:
    """record(row): store a finished cell's row and show it on the progress bar (a failure by its error)."""

    def record(row):
        store.write(row)
        bar.update(1)
        shown = f"{row['score']:.4g}" if row["status"] == "ok" else "ERROR"
        bar.set_postfix_str(f"{row['dataset']}/{row['model']}/s{row['seed']}: {shown} ({row['seconds']:.0f} s)")
        if row["status"] != "ok":
            bar.write(f"cell {row['dataset']} / {row['model']} / seed {row['seed']} failed: "
                      f"{row['error'].splitlines()[0]}")

    return record


def _run_on_cluster(client, todo: list[Cell], threads, record, progress: bool = False) -> None:
    rows = _dask_rows(client, todo, threads, progress)
    try:
        for row in rows:
            record(row)
    finally:
        rows.close()


def _run_in_this_process(todo: list[Cell], threads: int, record, progress: bool = False) -> None:
    import torch

    old = torch.get_num_threads()
    try:
        for cell in todo:
            # Set again before every cell: aeon's numba models (MiniRocket) reset the OpenMP threads torch runs on.
            torch.set_num_threads(threads)
            record(_run_cell(cell, progress))
    finally:
        torch.set_num_threads(old)


#: The start of loky's note that it replaced a worker between two tasks (filtered in _run_in_processes).
LOKY_RECYCLED_WORKER = "A worker stopped while some jobs were given to the executor"


def _run_in_processes(todo: list[Cell], jobs: int, threads: int, record, progress: bool = False) -> None:
    from joblib import Parallel, delayed

    rows = Parallel(n_jobs=jobs, return_as="generator_unordered")(
        delayed(_run_in_worker)(cell, threads, os.getpid(), progress) for cell in todo
    )
    with warnings.catch_warnings():
        # Between two cells loky replaces a worker whose memory has grown past its leak threshold (training
        # a network grows it) and reports that as "A worker stopped while some jobs were given to the
        # executor". No cell is lost (a worker that dies inside a cell raises instead): the note would only alarm.
        warnings.filterwarnings("ignore", message=LOKY_RECYCLED_WORKER, category=UserWarning)
        for row in rows:
            record(row)
