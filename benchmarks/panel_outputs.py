"""The development panel's test outputs of one seed, saved to compare two versions of the code bit for bit.

A restructuring must not move a figure: this fits the default ``EADCTransformerClassifier(random_state=seed)`` on
each problem of the development panel (``tsrep/configs/ucr-dev.yaml``), one problem at a time, each in a fresh
process with one torch thread, and saves its ``predict_proba`` on TEST as ``<out>/<problem>.npy`` with a line of
accuracy and seconds in ``<out>/log.jsonl``. ``--compare A B`` then says, problem by problem, whether two such
folders hold the same arrays to the last bit (``numpy.array_equal``). On one machine and thread count a fit is
deterministic, so any difference is a change of what the code computes.

Run:    python benchmarks/panel_outputs.py --out before            # about 25 minutes of one CPU core
        PYTHONPATH=/path/to/other/checkout python benchmarks/panel_outputs.py --out after
        python benchmarks/panel_outputs.py --compare before after
        python benchmarks/panel_outputs.py --out quick --datasets GunPoint Coffee --seed 1
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

PANEL_CONFIG = Path(__file__).resolve().parents[1] / "tsrep" / "configs" / "ucr-dev.yaml"


def fit_one(problem: str, seed: int, out: Path) -> dict:
    """Fit and score one problem in this process; save its test probabilities."""
    import numpy as np
    import torch

    from tsrep import EADCTransformerClassifier
    from tsrep.data import load_archive

    torch.set_num_threads(1)
    X_train, y_train = load_archive(problem, split="train", offline=True)
    X_test, y_test = load_archive(problem, split="test", offline=True)
    start = time.perf_counter()
    model = EADCTransformerClassifier(random_state=seed).fit(X_train, y_train)
    proba = model.predict_proba(X_test)
    seconds = time.perf_counter() - start
    np.save(out / f"{problem}.npy", proba)
    accuracy = float(np.mean(model.classes_[proba.argmax(axis=1)] == np.asarray(y_test)))
    return {"problem": problem, "seed": seed, "accuracy": accuracy, "seconds": round(seconds, 1)}


def panel() -> list[str]:
    import yaml

    return list(yaml.safe_load(PANEL_CONFIG.read_text())["datasets"])


def run(problems: list[str], seed: int, out: Path) -> None:
    """Each problem in a fresh process (one thread), its line appended to out/log.jsonl and printed."""
    out.mkdir(parents=True, exist_ok=True)
    for problem in problems:
        job = json.dumps({"problem": problem, "seed": seed, "out": str(out)})
        done = subprocess.run([sys.executable, __file__, "--worker", job], capture_output=True, text=True,
                              env={**os.environ, "OMP_NUM_THREADS": "1"})
        line = done.stdout.strip().splitlines()[-1] if done.returncode == 0 else json.dumps(
            {"problem": problem, "error": done.stderr.strip().splitlines()[-1:]})
        with open(out / "log.jsonl", "a") as log:
            log.write(line + "\n")
        print(line, flush=True)


def compare(first: Path, second: Path) -> bool:
    """Print, per problem saved in `first`, whether `second` holds the same array; True when all are equal."""
    import numpy as np

    same = True
    for path in sorted(first.glob("*.npy")):
        other = second / path.name
        equal = other.is_file() and np.array_equal(np.load(path), np.load(other))
        same &= equal
        print(f"{path.stem}: {'identical' if equal else 'DIFFERENT' if other.is_file() else 'missing'}")
    return same


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="folder for the outputs and log.jsonl")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--datasets", nargs="+", help="panel problems to run (default: all twelve)")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("A", "B"), help="compare two output folders")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        job = json.loads(args.worker)
        print(json.dumps(fit_one(job["problem"], job["seed"], Path(job["out"]))))
        return 0
    if args.compare:
        return 0 if compare(*args.compare) else 1
    if args.out is None:
        parser.error("give --out DIR (or --compare A B)")
    run(args.datasets or panel(), args.seed, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
