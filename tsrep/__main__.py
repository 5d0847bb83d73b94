"""`python -m tsrep`: the quick archive benchmark (seven models of paper 002's Tables I-II on shipped problems,
offline; the 'quick' config that ships with tsrep, see tsrep.benchmarks.cli), or with --dataset NAME: train an
EA-DC-Transformer on one problem shipped with aeon and print its test score."""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

SHIPPED = {
    "BasicMotions": "classification",
    "JapaneseVowels": "classification",
    "ArrowHead": "classification",
    "GunPoint": "classification",
    "ItalyPowerDemand": "classification",
    "OSULeaf": "classification",
    "Covid3Month": "regression",
    "CardanoSentiment": "regression",
}


def load(name: str, split: str):
    from aeon.datasets import load_classification, load_regression

    task = SHIPPED[name]
    loader = load_classification if task == "classification" else load_regression
    X, y = loader(name, split=split)
    return X, (y if task == "classification" else y.astype(float))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tsrep", description=__doc__)
    parser.add_argument("--dataset", default=None, choices=sorted(SHIPPED),
                        help="train and score one EA-DC-Transformer on this problem (default: the benchmark)")
    parser.add_argument("--config", default="quick", help="benchmark config (without --dataset; default quick)")
    parser.add_argument("--jobs", type=int, default=min(4, os.cpu_count() or 1),
                        help="benchmark cells run in parallel, one process each (default: CPU cores, at most 4)")
    parser.add_argument("--out", help="benchmark output directory (default results/archive/<config>)")
    parser.add_argument("--max-epochs", type=int, default=100)
    parser.add_argument("--d-model", type=int, default=64)
    parser.add_argument("--n-blocks", type=int, default=3)
    parser.add_argument("--n-heads", type=int, default=None,
                        help="attention heads; must divide the attention width round(p * d_model) (default: the "
                             "estimator's)")
    parser.add_argument("--alpha", type=float, default=0.5)
    parser.add_argument("--beta", type=float, default=0.5)
    parser.add_argument("--p", type=float, default=0.25)
    parser.add_argument("--min-steps", type=int, default=None,
                        help="at least this many optimiser steps, raising --max-epochs where needed (default: the "
                             "estimator's; 0: exactly --max-epochs)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    if args.dataset is None:  # the benchmark: tables of score / #params, pictures, a resumable results store
        from tsrep.benchmarks.cli import main as benchmark

        rest = ["--config", args.config, "--jobs", str(args.jobs), "--device", args.device]
        return benchmark(rest + (["--out", args.out] if args.out else []) + (["--quiet"] if args.quiet else []))

    from tsrep import EADCTransformerClassifier, EADCTransformerRegressor

    task = SHIPPED[args.dataset]
    cls = EADCTransformerClassifier if task == "classification" else EADCTransformerRegressor
    given = {k: v for k, v in (("n_heads", args.n_heads), ("min_steps", args.min_steps)) if v is not None}
    model = cls(
        d_model=args.d_model, n_blocks=args.n_blocks, alpha=args.alpha, beta=args.beta, p=args.p,
        max_epochs=args.max_epochs, random_state=args.seed, device=args.device, verbose=not args.quiet, **given,
    )
    try:  # bad settings (n_heads not dividing the attention width, ...) are a usage error, before any data
        model._validate_params()
    except ValueError as err:
        parser.error(f"invalid model settings: {err}")
    X_train, y_train = load(args.dataset, "train")
    X_test, y_test = load(args.dataset, "test")
    start = time.perf_counter()
    model.fit(X_train, y_train)
    pred = model.predict(X_test)
    seconds = time.perf_counter() - start
    if task == "classification":
        score = f"accuracy {np.mean(pred == y_test):.4f}"
    else:
        score = f"RMSE {np.sqrt(np.mean((pred - y_test) ** 2)):.4f} (std of test targets {np.std(y_test):.4f})"
    print(
        f"{args.dataset}: EA-DC-Transformer {score} | {model.n_parameters_:,} parameters | "
        f"epochs {model.n_epochs_} (kept {model.best_epoch_ + 1}) | fit+predict {seconds:.1f} s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
