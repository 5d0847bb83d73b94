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
   fitting part) and score TEST: accuracy, or RMSE in the targets' units.

Every fit also carves its own early-stopping split from what it is given (the estimators'
``validation_fraction``), as the estimators always do.
"""

from __future__ import annotations

import os
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tsrep.benchmarks.config import BenchmarkConfig
from tsrep.benchmarks.store import ResultStore, cell_key
from tsrep.data.archive import dataset_task, load_archive


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

    def spec(self) -> dict:
        """What determines the result (the device does not: a CPU and a GPU run are the same cell)."""
        return {
            "dataset": self.dataset, "model": self.model, "seed": self.seed, "task": self.task,
            "params": self.params, "grid": self.grid, "validation_fraction": self.validation_fraction,
            "refit": self.refit,
        }

    @property
    def key(self) -> str:
        return cell_key(self.spec())


def make_cells(cfg: BenchmarkConfig, device: str = "auto") -> list[Cell]:
    cells = []
    for dataset in cfg.datasets:
        task = dataset_task(dataset)
        for model in cfg.models:
            for seed in cfg.seeds:
                cells.append(Cell(
                    dataset=dataset, model=model, seed=seed, task=task,
                    params=cfg.params_for(model, dataset), grid=cfg.grid_for(model),
                    validation_fraction=cfg.validation_fraction, refit=cfg.refit,
                    offline=cfg.offline, cache_dir=cfg.cache_dir, device=device, config=cfg.name,
                ))
    return cells


def grid_points(grid: dict) -> list[dict]:
    from sklearn.model_selection import ParameterGrid

    return list(ParameterGrid(grid)) if grid else [{}]


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


def _better(task: str, a: float, b: float | None) -> bool:
    if b is None:
        return True
    return a > b if task == "classification" else a < b


def run_cell(cell: Cell) -> dict:
    """Train and score one cell; returns the row to store (status "ok", or "error" with the message)."""
    from tsrep.benchmarks.registry import build_model

    start = time.perf_counter()
    row = {
        "key": cell.key, "config": cell.config, "dataset": cell.dataset, "model": cell.model, "seed": cell.seed,
        "task": cell.task, "metric": "accuracy" if cell.task == "classification" else "rmse",
        "device": cell.device, "spec": cell.spec(),
    }
    try:
        X_train, y_train = load_archive(cell.dataset, "train", cache_dir=cell.cache_dir, offline=cell.offline)
        X_test, y_test = load_archive(cell.dataset, "test", cache_dir=cell.cache_dir, offline=cell.offline)

        def build(point):
            return build_model(cell.model, cell.task, seed=cell.seed, device=cell.device, **{**cell.params, **point})

        points = grid_points(cell.grid)
        chosen, val_score = points[0], None
        estimator = None
        if len(points) > 1:
            fit_idx, val_idx = split_train(
                np.asarray(y_train), cell.validation_fraction, cell.seed, cell.task == "classification"
            )
            X_fit, y_fit = _subset(X_train, fit_idx), np.asarray(y_train)[fit_idx]
            X_val, y_val = _subset(X_train, val_idx), np.asarray(y_train)[val_idx]
            for point in points:
                candidate = build(point).fit(X_fit, y_fit)
                s = score(cell.task, y_val, candidate.predict(X_val))
                if _better(cell.task, s, val_score):
                    chosen, val_score, estimator = point, s, candidate
        if estimator is None or cell.refit:
            estimator = build(chosen).fit(X_train, y_train)
        row.update(
            score=score(cell.task, y_test, estimator.predict(X_test)),
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
    row["seconds"] = time.perf_counter() - start
    return row


def _run_in_worker(cell: Cell, threads: int) -> dict:
    import torch

    torch.set_num_threads(threads)
    return run_cell(cell)


def run_benchmark(
    cfg: BenchmarkConfig,
    out_dir,
    jobs: int = 1,
    device: str = "auto",
    threads: int | None = None,
    progress: bool = True,
) -> tuple[ResultStore, list[Cell]]:
    """Run every cell of `cfg` not already stored in out_dir/results.sqlite; returns the store and all cells."""
    from tqdm.auto import tqdm

    if not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs must be a positive integer, got {jobs!r}")
    out_dir = Path(out_dir)
    store = ResultStore(out_dir / "results.sqlite")
    cells = make_cells(cfg, device)
    done = store.done_keys()
    todo = [c for c in cells if c.key not in done]
    threads = threads or max(1, (os.cpu_count() or 1) // jobs)
    bar = tqdm(total=len(cells), initial=len(cells) - len(todo), desc=f"{cfg.name} cells", disable=not progress,
               unit="cell", dynamic_ncols=True)

    def record(row):
        store.write(row)
        bar.update(1)
        shown = f"{row['score']:.4g}" if row["status"] == "ok" else "ERROR"
        bar.set_postfix_str(f"{row['dataset']}/{row['model']}/s{row['seed']}: {shown} ({row['seconds']:.0f} s)")
        if row["status"] != "ok":
            bar.write(f"cell {row['dataset']} / {row['model']} / seed {row['seed']} failed: "
                      f"{row['error'].splitlines()[0]}")

    try:
        if jobs == 1:
            import torch

            old = torch.get_num_threads()
            torch.set_num_threads(threads)
            try:
                for cell in todo:
                    record(run_cell(cell))
            finally:
                torch.set_num_threads(old)
        elif todo:
            from joblib import Parallel, delayed

            rows = Parallel(n_jobs=jobs, return_as="generator_unordered")(
                delayed(_run_in_worker)(cell, threads) for cell in todo
            )
            for row in rows:
                record(row)
    finally:
        bar.close()
    return store, cells
