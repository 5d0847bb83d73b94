"""Tune alpha, beta and p of the EA-DC-Transformer on JapaneseVowels, against the default (0.5, 0.5, 0.25).

Budget (stated by the options, printed with the results): ``--n-trials`` Optuna trials (TPE over
the paper's grid alpha, beta in {0.1, ..., 0.9}, p in {0.125, ..., 0.875}; the first trial is the
default alpha=0.5, beta=0.5, p=0.25, so default and tuned are scored by the same procedure), each
fitting for at most ``--max-epochs`` epochs, pruned by Optuna's MedianPruner on the per-epoch
validation accuracy. Everything else is fixed (d_model, n_blocks, batch size, lr 1e-3, RAdam).

Selection uses TRAIN only: each trial fits on 80 % of TRAIN and is scored on a stratified 20 %
hold-out of TRAIN (the estimator's own early-stopping split comes out of the 80 %). Then the
default and the best configuration are refitted on all of TRAIN and scored once on TEST.

Run:  python benchmarks/tune_japanese_vowels.py --n-trials 12 --max-epochs 30
"""

from __future__ import annotations

import argparse
import datetime
import platform
import sys
import time
from pathlib import Path

import numpy as np

try:
    import tsrep
except ImportError:  # not installed: run from a checkout
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import tsrep

import optuna
import torch
from aeon.datasets import load_japanese_vowels
from optuna.trial import TrialState
from sklearn.base import clone

from tsrep import EADCTransformerClassifier
from tsrep.tuning import save_config, tune
from tsrep.tuning.space import ALPHA_BETA_GRID, P_GRID

DEFAULT = {"alpha": 0.5, "beta": 0.5, "p": 0.25}


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n-trials", type=int, default=12)
    ap.add_argument("--timeout", type=float, default=None, help="seconds after which no new trial starts")
    ap.add_argument("--max-epochs", type=int, default=30)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--d-model", type=int, default=64, choices=(64, 128))
    ap.add_argument("--n-blocks", type=int, default=3, choices=(2, 3, 4, 5))
    ap.add_argument("--continuous", action="store_true", help="continuous alpha, beta, p instead of the grid")
    ap.add_argument("--seed", type=int, default=0, help="estimator and split seed")
    ap.add_argument("--sampler-seed", type=int, default=0)
    ap.add_argument("--storage", default="memory", help="Optuna storage (default: in memory)")
    ap.add_argument("--study-name", default=None)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch CPU threads (default 1: on a shared 2-core machine 2 threads ran 8x slower)")
    ap.add_argument("--config-out", type=Path, default=None, help="write the best configuration (YAML) here")
    return ap.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    if args.threads:
        torch.set_num_threads(args.threads)
    X_train, y_train = load_japanese_vowels(split="train")
    X_test, y_test = load_japanese_vowels(split="test")
    X_train, X_test = list(X_train), list(X_test)
    y_train, y_test = np.asarray(y_train), np.asarray(y_test)
    base = EADCTransformerClassifier(
        d_model=args.d_model, n_blocks=args.n_blocks, batch_size=args.batch_size, max_epochs=args.max_epochs,
        random_state=args.seed, device=args.device,
    )
    if args.continuous:
        space = {"alpha": {"low": 0.1, "high": 0.9}, "beta": {"low": 0.1, "high": 0.9}, "p": {"low": 0.125, "high": 0.875}}
    else:
        space = {"alpha": list(ALPHA_BETA_GRID), "beta": list(ALPHA_BETA_GRID), "p": list(P_GRID)}
    pruner = optuna.pruners.MedianPruner(n_startup_trials=3, n_warmup_steps=max(1, args.max_epochs // 3))

    print(f"# JapaneseVowels: tuning alpha, beta, p ({datetime.date.today()})")
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, Python {platform.python_version()}, "
          f"optuna {optuna.__version__}, tsrep {tsrep.__version__}")
    print(f"TRAIN {len(y_train)} cases, TEST {len(y_test)} cases, {len(np.unique(y_train))} classes")
    print(f"budget: {args.n_trials} trials (trial 0 = default {DEFAULT}), timeout {args.timeout}, "
          f"max_epochs {args.max_epochs} per fit, batch {args.batch_size}, d_model {args.d_model}, "
          f"n_blocks {args.n_blocks}; {'continuous' if args.continuous else 'grid'} space; MedianPruner"
          f"(n_startup_trials=3, n_warmup_steps={max(1, args.max_epochs // 3)}); validation: stratified 20 % of TRAIN")

    start = time.perf_counter()
    result = tune(
        base, X_train, y_train, n_trials=args.n_trials, timeout=args.timeout, storage=args.storage,
        study_name=args.study_name, search_space=space, default_space=False, pruner=pruner,
        seed=args.sampler_seed, random_state=args.seed, refit=False, enqueue=[DEFAULT], show_progress_bar=True,
    )
    tuning_s = time.perf_counter() - start
    study = result.study
    print("\n| trial | alpha | beta | p | state | validation acc | epochs |")
    print("|---|---|---|---|---|---|---|")
    for t in study.trials:
        used = {**t.params, **t.user_attrs.get("adjusted", {})}
        value = f"{t.value:.4f}" if t.value is not None else "-"
        epochs = t.user_attrs.get("epochs", [max(t.intermediate_values, default=-1) + 1])
        print(f"| {t.number} | {used.get('alpha')} | {used.get('beta')} | {used.get('p')} | {t.state.name.lower()} | "
              f"{value}{' (inner split, at pruning)' if t.state == TrialState.PRUNED else ''} | {epochs[0]} |")
    default_trial = study.trials[0]
    if default_trial.state != TrialState.COMPLETE or result.best_trial is None:
        print("the default trial did not complete; no comparison")
        return 1

    rows = []
    configs = [("default", default_trial.params, default_trial.value), ("tuned (best)", result.best_params, result.best_value)]
    fitted_cache = {}
    for label, params, val in configs:
        key = tuple(sorted((k, params[k]) for k in DEFAULT))
        if key not in fitted_cache:
            t0 = time.perf_counter()
            model = clone(base).set_params(**{k: params[k] for k in DEFAULT}).fit(X_train, y_train)
            acc = float(np.mean(model.predict(X_test) == y_test))
            fitted_cache[key] = (acc, time.perf_counter() - t0, model.best_epoch_ + 1, model.n_epochs_)
        acc, secs, best_epoch, n_epochs = fitted_cache[key]
        rows.append((label, params, val, acc, secs, best_epoch, n_epochs))
    print("\n| configuration | alpha | beta | p | best validation acc (20 % of TRAIN) | TEST acc (refit on TRAIN) | refit+predict s | kept/run epochs |")
    print("|---|---|---|---|---|---|---|---|")
    for label, params, val, acc, secs, be, ne in rows:
        print(f"| {label} | {params['alpha']} | {params['beta']} | {params['p']} | {val:.4f} | {acc:.4f} | {secs:.1f} | {be}/{ne} |")
    states = {s.name.lower(): sum(t.state == s for t in study.trials) for s in TrialState}
    print(f"\ntrials: { {k: v for k, v in states.items() if v} }; tuning {tuning_s:.1f} s; "
          f"total {time.perf_counter() - start:.1f} s")
    if args.config_out:
        best = clone(base).set_params(**{k: result.best_params[k] for k in DEFAULT})
        print(f"wrote {save_config(best, args.config_out, dataset='JapaneseVowels')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
