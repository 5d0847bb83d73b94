"""An ensemble's members trained together (``train_members_together=True``) against one after another, and one fit.

    python benchmarks/members_together.py --datasets GunPoint Coffee ArrowHead ItalyPowerDemand --offline DIR

For each UCR problem: fit+predict seconds and test accuracy of one default EA-DC-Transformer classifier, of
``n_estimators`` members trained together and of the same members fitted separately in this process (``n_jobs=1``),
all on one device with one torch thread on a CPU; then the ratios to the separate fits and to one fit. The
``--offline`` folder holds the UCR files (``Name/Name_TRAIN.ts`` or ``.tsv``); without it the archive is
downloaded.
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings


def fit_and_score(X, y, Xt, yt, **params) -> tuple[float, float]:
    from tsrep import EADCTransformerClassifier

    start = time.perf_counter()
    est = EADCTransformerClassifier(random_state=0, **params).fit(X, y)
    accuracy = float((est.predict(Xt) == yt).mean())
    return time.perf_counter() - start, accuracy


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", nargs="+", default=["GunPoint", "Coffee", "ArrowHead", "ItalyPowerDemand"])
    parser.add_argument("--n-estimators", type=int, default=3)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--offline", default=True, help="folder of the UCR files (default: the package's own)")
    args = parser.parse_args(argv)

    import torch

    from tsrep.data import load_archive

    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    settings = {"one": {}, "together": {"n_estimators": args.n_estimators, "train_members_together": True},
                "separate": {"n_estimators": args.n_estimators, "train_members_together": False}}
    print(f"| problem | one s | acc | {args.n_estimators} together s | acc | {args.n_estimators} separate s | acc "
          "| together / separate | together / one |")
    print("|---|---|---|---|---|---|---|---|---|")
    ratios = []
    # First use loads modules and compiles MiniRocket's kernels: paid here, not by the first row's first fit.
    X, y = load_archive(args.datasets[0], split="train", offline=args.offline)
    for params in settings.values():
        fit_and_score(X, y, X[:2], y[:2], device=args.device, max_epochs=1, min_steps=1, **params)
    for name in args.datasets:
        X, y = load_archive(name, split="train", offline=args.offline)
        Xt, yt = load_archive(name, split="test", offline=args.offline)
        row = {label: fit_and_score(X, y, Xt, yt, device=args.device, **params) for label, params in settings.items()}
        ratio = row["together"][0] / row["separate"][0]
        ratios.append(ratio)
        cells = " | ".join(f"{row[label][0]:.1f} | {row[label][1]:.3f}" for label in settings)
        print(f"| {name} | {cells} | {ratio:.2f} | {row['together'][0] / row['one'][0]:.2f} |", flush=True)
    print(f"median together / separate: {statistics.median(ratios):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
