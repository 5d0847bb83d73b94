"""Paired PreciseBN measurement: one fit per problem, scored as fitted and after BatchNorm's recompute.

A default EA-DC-Transformer classifier is fitted with ``precise_bn=False``; its test accuracy is taken with the
running averages training left ("last"), then the statistics are recomputed exactly as ``precise_bn=True`` does
at the end of ``fit`` (same batches, same generator seed: tests/test_precise_bn.py checks the two are equal) and
the test accuracy is taken again. Both figures come from one fit, so their difference carries no fit-to-fit noise.

    python benchmarks/precise_bn_paired.py --config ucr-dev47 --seed 2 --out results/precise_bn
    python benchmarks/precise_bn_paired.py --datasets InsectEPGRegularTrain --seed 1 --out results/precise_bn

One torch thread per process; run several processes on disjoint ``--datasets`` to use more cores. Rows are
appended to ``<out>/rows.jsonl`` (a problem already there for the seed is skipped).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

from tsrep import EADCTransformerClassifier
from tsrep.benchmarks.config import load_config
from tsrep.data import load_archive
from tsrep.training import recompute_batchnorm_statistics


def measure(name: str, seed: int) -> dict:
    X, y = load_archive(name, split="train", offline=True)
    X_test, y_test = load_archive(name, split="test", offline=True)
    start = time.perf_counter()
    est = EADCTransformerClassifier(random_state=seed, precise_bn=False).fit(X, y)
    fit_seconds = time.perf_counter() - start
    last, train_last = np.mean(est.predict(X_test) == y_test), np.mean(est.predict(X) == y)
    start = time.perf_counter()
    recompute_batchnorm_statistics(
        est.module_, est._prepare_X(X, fit=False), est.batch_size, "cpu", torch.Generator().manual_seed(seed)
    )
    recompute_seconds = time.perf_counter() - start
    precise, train_precise = np.mean(est.predict(X_test) == y_test), np.mean(est.predict(X) == y)
    return {"dataset": name, "seed": seed, "n_train": len(y), "acc_last": float(last), "acc_precise": float(precise),
            "train_last": float(train_last), "train_precise": float(train_precise), "fit_s": fit_seconds,
            "recompute_s": recompute_seconds}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="ucr-dev47", help="benchmark config whose datasets to run")
    parser.add_argument("--datasets", nargs="+", help="these problems instead of the config's")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("results/precise_bn"))
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    names = args.datasets or load_config(args.config).datasets
    args.out.mkdir(parents=True, exist_ok=True)
    rows_path = args.out / "rows.jsonl"
    done = set()
    if rows_path.exists():
        done = {(r["dataset"], r["seed"]) for r in map(json.loads, rows_path.read_text().splitlines()) if r}
    for name in names:
        if (name, args.seed) in done:
            continue
        row = measure(name, args.seed)
        with rows_path.open("a") as f:
            f.write(json.dumps(row) + "\n")
        print(f"{name} seed {args.seed}: last {row['acc_last']:.3f}, PreciseBN {row['acc_precise']:.3f} "
              f"(fit {row['fit_s']:.0f} s, recompute {row['recompute_s']:.2f} s)", flush=True)


if __name__ == "__main__":
    main()
