"""Value of masked-reconstruction pretraining with few labels.

For JapaneseVowels (classification, accuracy) and Covid3Month (regression, RMSE), per seed:

1. pretrain a TSRepEncoder on ALL training series (no labels) and save it as a checkpoint;
2. fine-tune an EADCTransformer{Classifier,Regressor} from that checkpoint (all parameters train;
   only the head is new) on 10 % and on 100 % of the labelled training cases (a stratified 10 %
   for classification, the same subset for both arms);
3. train the same estimator from scratch on the same labels ("no pretraining").

The test split is used only for the printed score. Prints every run and mean +- sample std over
seeds. Budgets are small by default (CPU); raise them with the flags.

    .venv/bin/python benchmarks/pretraining_few_labels.py --seeds 0 1 2 --pretrain-epochs 40 --epochs 60
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from aeon.datasets import load_covid_3month, load_japanese_vowels
from sklearn.model_selection import train_test_split

from tsrep import EADCTransformerClassifier, EADCTransformerRegressor, TSRepEncoder


def subset(y, fraction, seed, stratify):
    n = len(y)
    if fraction >= 1:
        return np.arange(n)
    idx, _ = train_test_split(np.arange(n), train_size=fraction, random_state=seed,
                              stratify=y if stratify else None)
    return np.sort(idx)


def select(X, idx):
    return [X[i] for i in idx] if isinstance(X, list) else X[idx]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--fractions", type=float, nargs="+", default=[0.1, 1.0])
    ap.add_argument("--pretrain-epochs", type=int, default=30)
    ap.add_argument("--epochs", type=int, default=40)
    ap.add_argument("--d-model", type=int, default=32)
    ap.add_argument("--n-blocks", type=int, default=2)
    ap.add_argument("--datasets", nargs="+", default=["JapaneseVowels", "Covid3Month"])
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    arch = dict(d_model=args.d_model, n_blocks=args.n_blocks, n_heads=4, p=0.25, batch_size=32, device="cpu")
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s); {arch}; "
          f"pretrain_epochs={args.pretrain_epochs}, max_epochs={args.epochs}")
    tmp = Path(tempfile.mkdtemp())
    for name in args.datasets:
        if name == "JapaneseVowels":
            load, Est, metric, kw = load_japanese_vowels, EADCTransformerClassifier, "accuracy", {}
        elif name == "Covid3Month":
            load, Est, metric, kw = load_covid_3month, EADCTransformerRegressor, "RMSE", {"scaling": "symlog"}
        else:
            raise SystemExit(f"unknown dataset {name}")
        X, y = load(split="train")
        Xt, yt = load(split="test")
        classify = metric == "accuracy"
        results: dict[tuple[str, float], list[float]] = {}
        for seed in args.seeds:
            t0 = time.perf_counter()
            enc = TSRepEncoder(pretrain_epochs=args.pretrain_epochs, random_state=seed, **arch, **kw).fit(X)
            ckpt = enc.save(tmp / f"{name}_{seed}.pt")
            print(f"{name} seed {seed}: pretraining loss {enc.loss_history_[0]:.3f} -> {enc.loss_history_[-1]:.3f} "
                  f"({time.perf_counter() - t0:.0f}s)", flush=True)
            for fraction in args.fractions:
                idx = subset(y, fraction, seed, classify)
                for arm in ("pretrained", "scratch"):
                    extra = {"pretrained_encoder": str(ckpt)} if arm == "pretrained" else {}
                    est = Est(max_epochs=args.epochs, random_state=seed, **arch, **kw, **extra)
                    est.fit(select(X, idx), y[idx])
                    pred = est.predict(Xt)
                    score = float(np.mean(pred == yt)) if classify else float(np.sqrt(np.mean((pred - yt) ** 2)))
                    results.setdefault((arm, fraction), []).append(score)
                    print(f"  {fraction:>4.0%} labels ({len(idx):>3} cases) {arm:<10} {metric} {score:.4f}", flush=True)
        print(f"\n{name}: test {metric}, mean +- std over seeds {args.seeds}")
        print(f"| labels | pretrained | no pretraining |\n|---|---|---|")
        for fraction in args.fractions:
            cells = []
            for arm in ("pretrained", "scratch"):
                v = np.array(results[(arm, fraction)])
                cells.append(f"{v.mean():.4f} +- {v.std(ddof=1) if len(v) > 1 else 0:.4f}")
            print(f"| {fraction:.0%} | {cells[0]} | {cells[1]} |")
        print(flush=True)


if __name__ == "__main__":
    main()
