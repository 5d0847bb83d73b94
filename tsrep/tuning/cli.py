"""`tsrep-tune`: tune an EA-DC-Transformer on an archive problem with Optuna.

Examples::

    tsrep-tune --dataset BasicMotions --n-trials 20
    tsrep-tune --dataset JapaneseVowels --set d_model=64 --set n_blocks=3 --set max_epochs=30 --timeout 3600
    # distributed: the same command on every worker, one database
    tsrep-tune --dataset BasicMotions --storage postgresql://user:pw@db-host/optuna --study-name bm --max-trials 100

Writes ``<output>/best.yaml`` (the best configuration, loadable with ``tsrep.tuning.load_config``)
and PNG pictures of the study. The study itself lives in the storage (an SQLite file by default)
and running the same command again adds trials to it.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

import yaml

from tsrep._cli import folds, fraction, positive_float, positive_int

# numpy, Optuna, torch and aeon are imported where they are used, once the arguments are read: --help and
# usage errors do not wait for them.

MODELS = {
    "classifier": "EADCTransformerClassifier",
    "regressor": "EADCTransformerRegressor",
    "EADCTransformerClassifier": "EADCTransformerClassifier",
    "EADCTransformerRegressor": "EADCTransformerRegressor",
}


class CLIError(ValueError):
    pass


class UsageError(CLIError):
    """A bad option found once the data or the estimator are known: reported as argparse reports its own."""


def study_folder_problem(name: str) -> str | None:
    """Why a study name cannot name the folder tuning/<study name> (None when it can): a path ('../x',
    '/abs') would put best.yaml and the pictures outside tuning/."""
    from tsrep.benchmarks.config import plain_folder_name

    if plain_folder_name(name):
        return None
    return (f"the study name names the output folder tuning/<study name> and must be a single plain folder name "
            f"(not empty, no '/' or '\\', not '.' or '..', not an absolute path), got {name!r}; "
            "give --output to write elsewhere")


def load_dataset(name: str, split: str):
    """(X, y, task) of a problem, read by tsrep's archive loader (tsrep.data.load_archive)."""
    import numpy as np

    from tsrep.data import load_archive

    try:
        X, y, meta = load_archive(name, split=split, return_metadata=True)
    except (ValueError, OSError) as e:  # unknown name (with close names), not on disk and offline, ...
        raise CLIError(str(e)) from e
    task = meta.get("task", "classification")
    return X, (np.asarray(y, dtype=float) if task == "regression" else y), task


def parse_assignment(text: str):
    if "=" not in text:
        raise CLIError(f"--set expects NAME=VALUE (YAML value: 64, [0.1, 0.5], {{low: 0.1, high: 0.9}}), got {text!r}")
    name, _, value = text.partition("=")
    try:
        return name.strip(), yaml.safe_load(value)
    except yaml.YAMLError as e:
        raise CLIError(f"--set {text!r}: the value is not valid YAML ({e})") from e


def read_search_space(path: Path) -> dict:
    """The mapping of a --search-space YAML file; CLIError naming the file (and line) for anything else."""
    if not path.is_file():
        raise CLIError(f"--search-space {str(path)!r} {'is a directory' if path.is_dir() else 'does not exist'}; "
                       "give a YAML file")
    try:
        loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise CLIError(f"--search-space {str(path)!r} is not a text file") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise CLIError(f"--search-space {str(path)!r} is not valid YAML{where}: {problem}") from None
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise CLIError(f"--search-space {str(path)!r} must hold a mapping of parameter -> spec, "
                       f"got a {type(loaded).__name__}")
    return loaded


def check_output(output: Path) -> None:
    """Refuse an output directory that cannot be written before any trial runs (not after all of them)."""
    from tsrep.training.resume import check_writable_directory

    try:
        check_writable_directory(output, "--output")
    except OSError as e:
        raise CLIError(str(e)) from None


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="tsrep-tune", description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--dataset", required=True, help="problem name (aeon loaders; shipped ones work offline)")
    ap.add_argument("--model", default="auto", choices=["auto", *MODELS], help="default: from the dataset's task")
    ap.add_argument("--n-trials", type=positive_int, default=None, help="trials this run adds (default 20 unless --max-trials/--timeout)")
    ap.add_argument("--max-trials", type=positive_int, default=None,
                    help="finished trials the whole study should hold, across all workers (distributed budget)")
    ap.add_argument("--timeout", type=positive_float, default=None, help="seconds after which no new trial starts")
    ap.add_argument("--storage", default=None,
                    help="Optuna storage URL or SQLite path (default: $TSREP_STUDY_DB or ./tsrep-studies.db); 'memory'")
    ap.add_argument("--study-name", default=None, help="default: <dataset>-<model>")
    ap.add_argument("--output", type=Path, default=None, help="directory for best.yaml and the PNGs (default tuning/<study>)")
    ap.add_argument("--search-space", type=Path, default=None, help="YAML mapping of search-space overrides")
    ap.add_argument("--set", dest="assignments", action="append", default=[], metavar="NAME=VALUE",
                    help="search-space override: a fixed value, a list of choices or a {low, high} range (repeatable)")
    ap.add_argument("--continuous", action="store_true", help="continuous alpha, beta, p instead of the paper's grid")
    ap.add_argument("--cv", type=folds, default=None,
                    help="score trials by K-fold CV on TRAIN, K >= 2 (default: one hold-out split)")
    ap.add_argument("--validation-size", type=fraction, default=0.2, help="hold-out fraction of TRAIN (default 0.2)")
    ap.add_argument("--pruner", default="median", choices=["median", "percentile", "halving", "hyperband", "none"])
    ap.add_argument("--max-epochs", type=int, default=None, help="estimator max_epochs (default: the estimator's)")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    ap.add_argument("--seed", type=int, default=0, help="estimator random_state and validation split seed")
    ap.add_argument("--sampler-seed", type=int, default=None, help="TPE seed (leave unset for distributed workers)")
    ap.add_argument("--heartbeat-interval", type=int, default=60, help="seconds; 0 turns heartbeats off")
    ap.add_argument("--grace-period", type=int, default=None, help="seconds without heartbeat before a trial is failed")
    ap.add_argument("--max-retry", type=int, default=3, help="retries of a trial whose worker died")
    ap.add_argument("--test-score", action="store_true", help="refit the best on TRAIN and report its TEST score")
    ap.add_argument("--no-plots", action="store_true")
    ap.add_argument("--quiet", action="store_true", help="no progress bar or per-trial lines")
    return ap


def make_pruner(name: str):
    import optuna

    from tsrep.tuning.tune import default_pruner

    return {
        "median": default_pruner,
        "percentile": lambda: optuna.pruners.PercentilePruner(25.0, n_startup_trials=5, n_warmup_steps=5),
        "halving": lambda: optuna.pruners.SuccessiveHalvingPruner(),
        "hyperband": lambda: optuna.pruners.HyperbandPruner(),
        "none": lambda: optuna.pruners.NopPruner(),
    }[name]()


def run(args) -> int:
    from sklearn.base import clone, is_classifier

    from tsrep.tuning import tune
    from tsrep._database_urls import mask_url

    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    X, y, task = load_dataset(args.dataset, "train")
    estimator, model_name = _estimator(args, task)
    space = _search_space(args)
    study_name = args.study_name or f"{args.dataset}-{model_name.replace('EADCTransformer', '').lower()}"
    problem = study_folder_problem(study_name) if args.output is None else None
    if problem:  # the name given, or one made of --dataset
        raise UsageError(f"argument --study-name: {problem}")
    _check_assignments(args, estimator)
    _check_folds(args, y, is_classifier(estimator))
    output = args.output or Path("tuning") / study_name
    check_output(output)
    storage = _storage_url(args.storage)

    print(f"tsrep-tune: {args.dataset} ({task}, {len(y)} training cases), {model_name}, study {study_name!r} "
          f"in {mask_url(str(storage))}", flush=True)
    start = time.perf_counter()
    result = tune(
        estimator, X, y,
        n_trials=args.n_trials, timeout=args.timeout, max_trials=args.max_trials,
        storage=storage, study_name=study_name, load_if_exists=True,
        search_space=space, continuous=args.continuous,
        pruner=make_pruner(args.pruner), seed=args.sampler_seed,
        cv=args.cv, validation_size=args.validation_size, random_state=args.seed,
        refit=False, heartbeat_interval=args.heartbeat_interval or None, grace_period=args.grace_period,
        max_retry=args.max_retry, callbacks=[_trial_reporter(args.quiet)], show_progress_bar=not args.quiet,
    )
    states = _trial_states(result.study)
    print(f"study {study_name!r}: {len(result.study.trials)} trials {states}; "
          f"this run {time.perf_counter() - start:.1f} s")
    if result.best_trial is None:
        print("no completed trial yet: no configuration written")
        return 1
    best = clone(estimator).set_params(**result.best_params)
    _write_best(args, result, best, X, y, mask_url(str(storage)), states, output)
    if not args.no_plots:
        _write_plots(result.study, output)
    return 0


def _estimator(args, task: str):
    """(estimator, class name): --model's, or the one of the data set's task, with --seed, --device, --max-epochs."""
    from tsrep.tuning.config import resolve_model

    model_name = MODELS[args.model] if args.model != "auto" else (
        "EADCTransformerClassifier" if task == "classification" else "EADCTransformerRegressor"
    )
    estimator = resolve_model(model_name)(random_state=args.seed, device=args.device)
    if args.max_epochs is not None:
        estimator.set_params(max_epochs=args.max_epochs)
    return estimator, model_name


def _check_assignments(args, estimator) -> None:
    """Each --set range or list of choices against the estimator's parameter constraints, naming the option
    (every trial drawing a refused value would fail). Fixed values and unknown names are left to tune, which
    checks them with the whole space."""
    from tsrep.tuning.space import SearchSpace, SearchSpaceError

    known = estimator.get_params(deep=False)
    for text in args.assignments:
        name, spec = parse_assignment(text)
        if name not in known:
            continue
        try:
            SearchSpace(estimator, {name: spec}, default=False)
        except SearchSpaceError as e:
            raise UsageError(f"argument --set: {text!r}: {e}") from None


def _check_folds(args, y, classifier: bool) -> None:
    """--cv against the training cases: K folds need K cases (of every class, folds being stratified)."""
    if args.cv is None:
        return
    if classifier:
        import numpy as np

        classes, counts = np.unique(np.asarray(y), return_counts=True)
        smallest = int(counts.min())
        if args.cv > smallest:
            hint = f"use --cv {smallest} or fewer" if smallest >= 2 else "leave --cv out (one hold-out split)"
            raise UsageError(
                f"argument --cv: {args.cv} stratified folds need {args.cv} training cases of every class, but "
                f"class {classes.tolist()[counts.argmin()]!r} of {args.dataset} has {smallest}; {hint}"
            )
    elif args.cv > len(y):
        raise UsageError(
            f"argument --cv: {args.cv} folds need {args.cv} training cases, but {args.dataset} has {len(y)}; "
            f"use --cv {len(y)} or fewer"
        )


def _search_space(args) -> dict:
    """The overrides of --search-space, then of every --set (a later one wins)."""
    space = {}
    if args.search_space is not None:
        space.update(read_search_space(args.search_space))
    space.update(dict(parse_assignment(a) for a in args.assignments))
    return space


def _storage_url(storage: str | None) -> str:
    """--storage as an Optuna storage URL: a path is an SQLite file; the default is default_storage_url()."""
    from tsrep.tuning.storage import default_storage_url

    storage = storage or default_storage_url()
    if "://" not in storage and storage not in ("memory", ":memory:"):
        storage = f"sqlite:///{Path(storage).expanduser().resolve()}"
    return storage


def _trial_reporter(quiet: bool):
    """The Optuna callback printing one line a finished trial (nothing when quiet)."""
    from tqdm.auto import tqdm

    def report(study, trial):
        if quiet:
            return
        try:
            best = f"best {study.best_value:.4f} (trial {study.best_trial.number})"
        except ValueError:
            best = "no completed trial yet"
        value = f"{trial.value:.4f}" if trial.value is not None else "-"
        seconds = (trial.datetime_complete - trial.datetime_start).total_seconds() if trial.datetime_complete else 0
        tqdm.write(f"trial {trial.number:>4} {trial.state.name.lower():<8} value {value} | {best} | "
                   f"{seconds:.1f} s | {trial.params}")

    return report


def _trial_states(study) -> dict:
    """{state: number of trials} of the study, states in lower case."""
    states = {}
    for t in study.get_trials(deepcopy=False):
        states[t.state.name.lower()] = states.get(t.state.name.lower(), 0) + 1
    return states


def _write_best(args, result, best, X, y, storage: str, states: dict, output: Path) -> None:
    """best.yaml in output: the best configuration and how it was found (with --test-score, its TEST score)."""
    from sklearn.base import clone

    from tsrep.tuning import save_config

    study = result.study
    metric = study.user_attrs.get("tsrep_scoring", "score")
    tuning = {
        "study_name": study.study_name,
        "storage": storage,
        "best_trial": result.best_trial.number,
        "best_validation": {"metric": metric, "value": result.best_value,
                            "on": study.user_attrs.get("tsrep_validation")},
        "trials": states,
        "search_space": study.user_attrs.get("tsrep_search_space"),
    }
    if args.test_score:
        X_test, y_test, _ = load_dataset(args.dataset, "test")
        fitted = clone(best).fit(X, y)
        test = float(fitted.score(X_test, y_test))
        tuning["test"] = {"metric": metric, "value": test}
        print(f"refit on TRAIN, TEST {metric}: {test:.4f}")
    output.mkdir(parents=True, exist_ok=True)
    path = save_config(best, output / "best.yaml", dataset=args.dataset, tuning=tuning)
    print(f"best validation {metric} {result.best_value:.4f} (trial {result.best_trial.number}): {result.best_params}")
    print(f"wrote {path}")


def _write_plots(study, output: Path) -> None:
    from tsrep.tuning.plots import save_study_plots

    try:
        for kind, png in save_study_plots(study, output).items():
            print(f"wrote {png}")
    except ImportError as e:
        print(f"no pictures: {e}", file=sys.stderr)


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    # Checked before any data is loaded; a name made of --dataset is checked in run.
    problem = study_folder_problem(args.study_name) if args.output is None and args.study_name is not None else None
    if problem:
        parser.error(f"argument --study-name: {problem}")
    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s")
    logging.getLogger("tsrep").setLevel(logging.WARNING if args.quiet else logging.INFO)
    import optuna

    from tsrep.tuning.config import ConfigError
    from tsrep.tuning.space import SearchSpaceError
    from tsrep.tuning.storage import StorageError
    from tsrep.tuning.tune import StudyMismatchError

    optuna.logging.set_verbosity(optuna.logging.WARNING)  # our per-trial lines replace Optuna's
    try:
        return run(args)
    except UsageError as e:
        parser.error(str(e))
    except (CLIError, SearchSpaceError, StorageError, ConfigError, StudyMismatchError) as e:
        print(f"tsrep-tune: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        # Optuna has marked the interrupted trial FAIL; the finished ones are in the storage.
        kept = "they are lost with the in-memory storage" if args.storage in ("memory", ":memory:") else (
            "they are kept in the study's storage; run the same command again to go on")
        print(f"\ntsrep-tune: interrupted: the trial under way is marked failed, the finished trials stay; {kept}",
              file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
