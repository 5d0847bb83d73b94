"""Attention variants against EA-DC-T in one run: DEACON, interacting heads, crossed co-attention.

For each data set (JapaneseVowels: classification, accuracy; Covid3Month: regression, RMSE; both
shipped with aeon) every variant is fitted with the same small EA-DC-Transformer (same seed, same
training settings, epoch selected on a validation split of TRAIN only) and scored once on TEST.
The table gives score, difference to EA-DC-T, trainable parameters (and their change), fit time
and whether training stayed finite. Variants are plain estimator parameters, so any config can
name them:

    EA-DC-T             attention="evolving" (alpha = beta = 0.5)
    DC-T (vanilla)      attention="vanilla"
    interacting         attention="interacting"          (h*h maps, evolving over h*h channels)
    interacting-summed  attention="interacting-summed"   (Algorithm 1)
    crossed             attention="crossed"
    DEACON-direct-h     head_mixing="deacon-direct"      (m = h)
    DEACON-<form>-m     head_mixing="deacon-<form>", deacon_m=m < h

With ``--defaults`` every variant instead trains with the estimator's own defaults (d_model 64, 3 blocks, 4
heads, the default recipe: at least 800 optimiser steps), the variant's parameters alone changed: the check
that no attention kind or head mixing diverges over a whole default fit. ``--seeds`` repeats every cell.

Run:  python benchmarks/attention_variants.py --max-epochs 20
      python benchmarks/attention_variants.py --defaults --datasets JapaneseVowels BasicMotions --seeds 0 1 2
"""

from __future__ import annotations

import argparse
import datetime
import math
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np

try:
    import tsrep
except ImportError:  # not installed: run from a checkout
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import tsrep

import torch
from aeon.datasets import load_basic_motions, load_covid_3month, load_japanese_vowels

DATASETS = {
    # name: (loader, task, extra estimator parameters)
    "JapaneseVowels": (load_japanese_vowels, "classification", {}),
    "BasicMotions": (load_basic_motions, "classification", {}),
    # 140 training cases: a validation split of 28 selects epochs by noise (the models then end no
    # better than the training mean), so Covid3Month trains on all of TRAIN for max_epochs epochs;
    # case counts are heavy-tailed, hence symlog scaling (the recipe of tests/test_accuracy.py).
    "Covid3Month": (load_covid_3month, "regression", {"scaling": "symlog", "validation_fraction": 0.0}),
}


def variants(n_heads: int, m: int) -> dict[str, dict]:
    return {
        "EA-DC-T": {},
        "DC-T (vanilla)": {"attention": "vanilla"},
        "interacting": {"attention": "interacting"},
        "interacting-summed": {"attention": "interacting-summed"},
        "crossed": {"attention": "crossed"},
        f"DEACON-direct-{n_heads}": {"head_mixing": "deacon-direct"},
        f"DEACON-direct-{m}": {"head_mixing": "deacon-direct", "deacon_m": m},
        f"DEACON-average-{m}": {"head_mixing": "deacon-average", "deacon_m": m},
        f"DEACON-nonlinear-{m}": {"head_mixing": "deacon-nonlinear", "deacon_m": m},
    }


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=list(DATASETS))
    parser.add_argument("--variants", nargs="+", default=None, help="subset of variant names (default: all)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--defaults", action="store_true",
                        help="the estimator's defaults for everything but the variant (the model and recipe options "
                             "below are then ignored)")
    parser.add_argument("--max-epochs", type=int, default=20)
    parser.add_argument("--patience", type=int, default=10)
    parser.add_argument("--validation-fraction", type=float, default=0.2)
    parser.add_argument("--d-model", type=int, default=32)
    parser.add_argument("--n-blocks", type=int, default=2)
    parser.add_argument("--n-heads", type=int, default=4)
    parser.add_argument("--p", type=float, default=0.5)
    parser.add_argument("--alpha", type=float, default=0.5)
    parser.add_argument("--beta", type=float, default=0.5)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--deacon-m", type=int, default=None, help="m < h of the pruned DEACON variants (default h // 2)")
    parser.add_argument("--deacon-inner-steps", type=int, default=500)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (1 is fastest on a shared CPU)")
    parser.add_argument("--output", type=Path, default=None, help="also write the Markdown report here")
    return parser.parse_args(argv)


def load(name):
    loader, task, extra = DATASETS[name]
    X_train, y_train = loader(split="train")
    X_test, y_test = loader(split="test")
    if task == "regression":
        y_train, y_test = np.asarray(y_train, dtype=float), np.asarray(y_test, dtype=float)
    return X_train, y_train, X_test, y_test, task, extra


def fit_one(args, task, extra, params, X_train, y_train, X_test, y_test, seed):
    cls = tsrep.EADCTransformerClassifier if task == "classification" else tsrep.EADCTransformerRegressor
    kwargs = dict(
        d_model=args.d_model, n_blocks=args.n_blocks, n_heads=args.n_heads, p=args.p,
        alpha=args.alpha, beta=args.beta, batch_size=args.batch_size, max_epochs=args.max_epochs,
        patience=args.patience, validation_fraction=args.validation_fraction,
        deacon_inner_steps=args.deacon_inner_steps,
    )
    if args.defaults:
        kwargs, extra = {}, {}
    est = cls(**{**kwargs, **extra, **params, "device": args.device, "random_state": seed})
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        try:
            est.fit(X_train, y_train)
        except FloatingPointError as err:  # a non-finite training loss
            return {"error": str(err), "seconds": time.perf_counter() - t0}
    fit_s = time.perf_counter() - t0
    pred = est.predict(X_test)
    finite = bool(np.all(np.isfinite(est.history_.train_loss)))
    if task == "classification":
        score = float(np.mean(pred == y_test))
    else:
        finite = finite and bool(np.all(np.isfinite(pred)))
        score = float(np.sqrt(np.mean((pred - y_test) ** 2)))
    h_max = [str(w.message).split("->")[1].split("(")[0].strip() for w in caught if "h_max" in str(w.message)]
    return {
        "score": score,
        "params": int(est.n_parameters_),
        "fit_s": fit_s,
        "best": int(est.best_epoch_),
        "run": int(est.n_epochs_),
        "finite": finite,
        "note": f"n_heads > h_max = {h_max[0]} (Eq. 13 warning)" if h_max else "",
    }


def main(argv=None):
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    wall0 = time.perf_counter()
    n_heads = tsrep.EADCTransformerClassifier().n_heads if args.defaults else args.n_heads
    m = args.deacon_m if args.deacon_m is not None else max(1, n_heads // 2)
    chosen = variants(n_heads, m)
    if args.variants:
        unknown = set(args.variants) - set(chosen)
        if unknown:
            raise SystemExit(f"unknown variants {sorted(unknown)}; known: {list(chosen)}")
        chosen = {k: v for k, v in chosen.items() if k in args.variants or k == "EA-DC-T"}
    header = [
        f"# Attention variants vs EA-DC-T ({datetime.datetime.now().isoformat(timespec='seconds')})",
        f"python {platform.python_version()}, torch {torch.__version__} ({torch.get_num_threads()} threads), "
        f"tsrep {tsrep.__version__}, {platform.platform()}",
        (
            "model and recipe: the estimators' defaults, the variant's parameters alone changed"
            if args.defaults else
            f"model: d_model {args.d_model}, n_blocks {args.n_blocks}, n_heads {args.n_heads}, p {args.p}, "
            f"alpha {args.alpha}, beta {args.beta}, batch {args.batch_size}, RAdam lr 1e-3, dropout 0.1; "
            f"max_epochs {args.max_epochs}, patience {args.patience}, validation {args.validation_fraction} of TRAIN "
            f"(Covid3Month: none, symlog scaling)"
        ) + f"; seeds {' '.join(map(str, args.seeds))}; DEACON pruned m = {m}",
    ]
    print("\n".join(header), flush=True)
    lines = ["| data set | variant | seed | test score | vs EA-DC-T | #params | vs EA-DC-T | fit s | best/run epochs | finite | note |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    summary = {}  # (data set, variant) -> scores over the seeds, or None for a failed fit
    for name, seed in [(name, seed) for name in args.datasets for seed in args.seeds]:
        X_train, y_train, X_test, y_test, task, extra = load(name)
        metric = "acc" if task == "classification" else "RMSE"
        if task == "regression":  # the floor every model must beat: predict the training mean
            const = float(np.sqrt(np.mean((y_test - np.mean(y_train)) ** 2)))
            lines.append(f"| {name} ({metric}) | constant (training mean) | | {const:.4f} | | 0 | | | | | reference |")
            print(f"{name:15s} {'constant (train mean)':22s} {metric} {const:.4f}", flush=True)
        base = None
        for label, params in chosen.items():
            r = fit_one(args, task, extra, params, X_train, y_train, X_test, y_test, seed)
            cell = summary.setdefault((f"{name} ({metric})", label), [])
            if "error" in r:
                cell.append(None)
                print(f"{name:15s} {label:22s} seed {seed} FAILED after {r['seconds']:.1f} s: {r['error']}", flush=True)
                lines.append(f"| {name} | {label} | {seed} | failed | | | | {r['seconds']:.1f} | | no | {r['error'][:60]} |")
                continue
            cell.append(r["score"] if r["finite"] else None)
            if label == "EA-DC-T":
                base = r
            d_score = f"{r['score'] - base['score']:+.4f}" if base else ""
            d_params = f"{100.0 * (r['params'] / base['params'] - 1):+.1f} %" if base else ""
            print(f"{name:15s} {label:22s} seed {seed} {metric} {r['score']:.4f} ({d_score})  params {r['params']:,} ({d_params})  "
                  f"{r['fit_s']:.1f} s  epochs {r['best']}/{r['run']}  finite {r['finite']}", flush=True)
            lines.append(
                f"| {name} ({metric}) | {label} | {seed} | {r['score']:.4f} | {d_score} | {r['params']:,} | {d_params} | "
                f"{r['fit_s']:.1f} | {r['best']}/{r['run']} | {'yes' if r['finite'] else 'NO'} | {r['note']} |"
            )
    if len(args.seeds) > 1:  # the mean over the seeds, beside the plain EA-DC-T's
        lines += ["", "| data set | variant | mean test score over the seeds | vs EA-DC-T | finite fits |", "|---|---|---|---|---|"]
        for (name, label), scores in summary.items():
            done = [v for v in scores if v is not None]
            mean = float(np.mean(done)) if done else float("nan")
            base_scores = [v for v in summary.get((name, "EA-DC-T"), []) if v is not None]
            diff = f"{mean - float(np.mean(base_scores)):+.4f}" if base_scores and done else ""
            lines.append(f"| {name} | {label} | {mean:.4f} | {diff} | {len(done)} of {len(scores)} |")
    table = "\n".join(lines)
    footer = f"Wall time: {time.perf_counter() - wall0:.1f} s"
    print()
    print(table)
    print()
    print(footer, flush=True)
    if args.output is not None:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text("\n".join(header) + "\n\n" + table + "\n\n" + footer + "\n")
    return table


if __name__ == "__main__":
    main()
