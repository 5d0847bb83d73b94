"""``python -m tsrep``: the quick archive benchmark, or one EA-DC-Transformer on one shipped problem.

    python -m tsrep                                         # the quick benchmark (tsrep-benchmark --config quick)
    python -m tsrep --dataset JapaneseVowels                # train, test, print the score
    python -m tsrep --dataset BasicMotions --d-model 32 --n-heads 2 --param lr_schedule=cosine
    python -m tsrep --list-params                           # every estimator parameter and its default

Without --dataset it runs the quick archive benchmark: the seven models of the time-series tables of Wang et al.
(TPAMI 2023) on problems that ship with aeon, offline (the packaged 'quick' config; see ``tsrep-benchmark``).
With --dataset NAME it trains an EA-DC-Transformer on one problem shipped with aeon and prints its test score.
Every estimator parameter is reachable: the main ones have flags, any other is ``--param key=value`` (repeatable;
values read as Python literals: 3, 0.5, 1e-3, true, None, [0.9, 0.99], {betas: [0.9, 0.99]}, or else text).
Settings are checked before any data is loaded; a bad one is a one-line error naming it (exit status 2).
"""

from __future__ import annotations

import argparse
import ast
import difflib
import inspect
import os
import sys
import time

import numpy as np

from tsrep._cli import positive_int, steps
from tsrep.data.archive import CLI_SHIPPED
from tsrep.nn.attention_kinds import ATTENTION_KINDS

# Flags for the main estimator parameters: (flag, parameter, type, help). Each defaults to the estimator's own
# default (shown in --help); any other parameter is --param key=value.
MODEL_FLAGS = (
    ("--d-model", "d_model", int, "hidden width d"),
    ("--n-blocks", "n_blocks", int, "blocks of two layers; the dilation doubles per block"),
    ("--n-heads", "n_heads", int, "attention heads; must divide the attention width round(p * d_model)"),
    ("--p", "p", float, "share of the channels given to attention (0: dilated convolution only)"),
    ("--alpha", "alpha", float, "evolving attention: weight of the previous layer's map (Eq. 1)"),
    ("--beta", "beta", float, "evolving attention: weight of the convolved map (Eq. 1)"),
    ("--attention", "attention", str, f"{', '.join(ATTENTION_KINDS[:-1])} or {ATTENTION_KINDS[-1]}"),
    ("--max-epochs", "max_epochs", int, "epochs, raised where needed to take at least --min-steps steps"),
    ("--min-steps", "min_steps", steps,
     "at least this many optimiser steps ('auto': 800, and 60 per class where more; 0: exactly --max-epochs epochs)"),
    ("--batch-size", "batch_size", int, "cases per optimiser step"),
    ("--lr", "lr", float, "peak learning rate"),
    ("--pretrain-epochs", "pretrain_epochs", int, "epochs of masked-reconstruction pretraining first"),
    ("--n-estimators", "n_estimators", int, "seed ensemble of this many networks"),
)
# Parameters whose command-line default differs from the estimator's (a reproducible run with a progress bar).
CLI_DEFAULTS = {"random_state": 0, "verbose": True}
NONE_WORDS = ("None", "none", "null", "~")


def load(name: str, split: str):
    from aeon.datasets import load_classification, load_regression

    task = CLI_SHIPPED[name]
    loader = load_classification if task == "classification" else load_regression
    X, y = loader(name, split=split)
    return X, (y if task == "classification" else y.astype(float))


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


def build_parser(defaults: dict) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m tsrep", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default=None, choices=sorted(CLI_SHIPPED),
                        help="train and score one EA-DC-Transformer on this problem (default: the benchmark)")
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
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
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


def main(argv=None) -> int:
    defaults = estimator_defaults()
    parser = build_parser(defaults)
    args = parser.parse_args(argv)

    def usage_error(message: str):  # one line, exit status 2, no traceback
        parser.exit(2, f"{parser.prog}: error: {message}\n")

    if args.list_params:
        flags = {param: flag for flag, param, _, _ in MODEL_FLAGS} | {"random_state": "--seed"}
        for name, default in defaults.items():
            print(f"{name:22s} default {default!r:12s} {flags.get(name, '--param ' + name + '=...')}")
        return 0
    if args.dataset is None:  # the benchmark: tables of score / #params, pictures, a resumable results store
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

    from tsrep import EADCTransformerClassifier, EADCTransformerRegressor

    task = CLI_SHIPPED[args.dataset]
    cls = EADCTransformerClassifier if task == "classification" else EADCTransformerRegressor
    try:  # every setting is checked before any data is loaded
        params, set_by_user = model_params(args, defaults)
        check_heads(params, defaults, set_by_user)
        model = cls(**params)
        model._validate_params()
    except (ValueError, TypeError) as err:
        usage_error(f"invalid model settings: {err}")
    X_train, y_train = load(args.dataset, "train")
    X_test, y_test = load(args.dataset, "test")
    start = time.perf_counter()
    try:
        model.fit(X_train, y_train)
    except ValueError as err:  # settings that do not fit this data set (checked by fit before training)
        usage_error(f"invalid model settings for {args.dataset}: {err}")
    pred = model.predict(X_test)
    seconds = time.perf_counter() - start
    if task == "classification":
        score = f"accuracy {np.mean(pred == y_test):.4f}"
    else:
        score = f"RMSE {np.sqrt(np.mean((pred - y_test) ** 2)):.4f} (std of test targets {np.std(y_test):.4f})"
    members = model.estimators_ or [model]  # a seed ensemble (n_estimators > 1): its members' epochs
    epochs = ", ".join(f"{m.n_epochs_} (kept {m.best_epoch_ + 1})" for m in members)
    print(
        f"{args.dataset}: EA-DC-Transformer {score} | {model.n_parameters_:,} parameters | "
        f"epochs {epochs} | fit+predict {seconds:.1f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
