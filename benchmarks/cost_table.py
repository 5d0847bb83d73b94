"""What a default fit costs: fit+predict seconds of the EA-DC-Transformer, tsrep's ResNet and aeon's MiniRocket, in one run.

For each problem, each model at its defaults (``EADCTransformerClassifier(random_state=seed)``,
``BackboneClassifier(backbone="resnet", random_state=seed)``, aeon's ``MiniRocketClassifier(random_state=seed)``;
on request ``ea-dc-t-network``, the EA-DC-Transformer with ``blend_minirocket=False``: its network alone at the full
budget, and ``ea-dc-t-ensemble``, ``n_estimators=3`` with its members one after another) is fitted on the archive
TRAIN split and scored on TEST, each cell in a fresh subprocess with a fixed number of torch threads (one by
default), the models of a problem next to each other so that a machine's drift reaches them alike. The table
gives test accuracy and fit+predict seconds per cell and the ratio of each deep model's
seconds to MiniRocket's on the same problem; the last row holds the medians over the problems. The ratios, not
the seconds, carry to another machine. MiniRocket reads series zero-padded on the right to the longest length of
TRAIN and TEST (it takes equal-length input); its first cell on a machine also compiles its numba kernels, so a
warm-up fit runs before the table's cells. The clock measures a fit in a process that has its modules: MiniRocket's
are imported when it is built, so a tsrep model's cell imports before the clock what its fit would import on first
use (aeon's convolution transforms for the blended MiniRocket; the compiler front end torch loads with its first
optimiser) and reports those seconds apart (``imports_s``): a fresh process's first fit pays them once.

Run:    python benchmarks/cost_table.py                       # the development panel (configs/ucr-dev.yaml), CPU
        python benchmarks/cost_table.py --jobs 2              # two cells at a time (one thread each)
        python benchmarks/cost_table.py --device cuda --datasets GunPoint Ham
        python benchmarks/cost_table.py --models ea-dc-transformer minirocket --output cost.json
        python benchmarks/cost_table.py --flops                # also each deep fit's arithmetic (TFLOP) and GFLOP/s

``--flops`` adds, for the deep models, the floating-point operations of the whole fit (torch's FlopCounterMode
over a separate one-epoch fit of the same model, forward and backward, times the epochs the timed fit ran; every
epoch runs the same batches) and the rate the timed fit achieved (TFLOP / fit seconds): how far a fit is from
what the machine's matrix units could do, and so whether a cheaper fit needs less arithmetic or less overhead.

``--offline`` reads the problems without download (the shipped ones and those of the ``ucr`` extra; with a
directory, from there first).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

MODELS = {
    "ea-dc-transformer": "EA-DC-T", "ea-dc-t-network": "EA-DC-T network alone",
    "ea-dc-t-ensemble": "EA-DC-T n_estimators=3", "resnet": "ResNet (tsrep)", "minirocket": "MiniRocket (aeon)",
}
PANEL_CONFIG = Path(__file__).resolve().parents[1] / "tsrep" / "configs" / "ucr-dev.yaml"


def build(model: str, seed: int, device: str):
    if model == "ea-dc-transformer":
        from tsrep import EADCTransformerClassifier

        return EADCTransformerClassifier(random_state=seed, device=device)
    if model == "ea-dc-t-network":  # no MiniRocket blended in: the network's full budget, the release before's default
        from tsrep import EADCTransformerClassifier

        return EADCTransformerClassifier(random_state=seed, device=device, blend_minirocket=False)
    if model == "ea-dc-t-ensemble":  # the documented ensemble: three members, one after another in this process
        from tsrep import EADCTransformerClassifier

        return EADCTransformerClassifier(random_state=seed, device=device, n_estimators=3, n_jobs=1)
    if model == "resnet":
        from tsrep.estimators import BackboneClassifier

        return BackboneClassifier(backbone="resnet", random_state=seed, device=device)
    from aeon.classification.convolution_based import MiniRocketClassifier

    return MiniRocketClassifier(random_state=seed)


def equal_length(X_train, X_test):
    """Both splits as 3-D arrays, series zero-padded on the right to the longest of either (NaN read as 0)."""
    import numpy as np

    from tsrep.data import as_case_list

    train, test = as_case_list(X_train), as_case_list(X_test)
    length = max(c.shape[1] for c in train + test)
    pad = lambda cases: np.stack([np.pad(np.nan_to_num(c), ((0, 0), (0, length - c.shape[1]))) for c in cases])  # noqa: E731
    return pad(train), pad(test)


def fit_flops(model: str, seed: int, device: str, X_train, y_train, epochs: int) -> float:
    """Floating-point operations of a fit of `epochs` epochs: one epoch of the same model counted, times epochs."""
    from torch.utils.flop_counter import FlopCounterMode

    estimator = build(model, seed, device).set_params(min_steps=1, max_epochs=1)
    with FlopCounterMode(display=False) as counter:
        estimator.fit(X_train, y_train)
    return float(counter.get_total_flops()) * epochs


def import_first_use_modules(model: str) -> float:
    """Import what a tsrep model's fit imports on first use; returns the seconds it took (0 for MiniRocket, whose
    modules come with building it)."""
    if model == "minirocket":
        return 0.0
    import torch

    start = time.perf_counter()
    from aeon.transformations.collection.convolution_based import MiniRocket  # noqa: F401  (the blend's transform)

    torch.optim.AdamW([torch.zeros(1, requires_grad=True)])  # torch's first optimiser loads torch._dynamo
    return time.perf_counter() - start


def run_cell(problem: str, model: str, seed: int, device: str, threads: int, offline, flops: bool = False) -> dict:
    """One fit + predict in this process: the worker's job."""
    import numpy as np
    import torch

    from tsrep.data import load_archive

    torch.set_num_threads(threads)
    imports_s = import_first_use_modules(model)
    X_train, y_train = load_archive(problem, split="train", offline=offline)
    X_test, y_test = load_archive(problem, split="test", offline=offline)
    if model == "minirocket":
        X_train, X_test = equal_length(X_train, X_test)
    estimator = build(model, seed, device)
    start = time.perf_counter()
    estimator.fit(X_train, y_train)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    fit_s = time.perf_counter() - start
    start = time.perf_counter()
    predicted = estimator.predict(X_test)
    predict_s = time.perf_counter() - start
    row = {
        "problem": problem, "model": model, "seed": seed, "accuracy": float(np.mean(predicted == y_test)),
        "fit_s": fit_s, "predict_s": predict_s, "imports_s": imports_s,
        "device": torch.cuda.get_device_name() if device.startswith("cuda") else "cpu", "torch": torch.__version__,
    }
    if flops and model not in ("minirocket", "ea-dc-t-ensemble"):  # an ensemble has no epochs of its own
        row["tflop_fit"] = fit_flops(model, seed, device, X_train, y_train, estimator.n_epochs_) / 1e12
    return row


def in_subprocess(cell: dict, timeout) -> dict:
    try:
        done = subprocess.run([sys.executable, __file__, "--worker", json.dumps(cell)],
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        done = subprocess.CompletedProcess([], 1, "", f"stopped after --cell-timeout {timeout:.0f} s")
    if done.returncode == 0:
        return json.loads(done.stdout.strip().splitlines()[-1])
    last = (done.stderr.strip().splitlines() or ["no output"])[-1]
    return {"problem": cell["problem"], "model": cell["model"], "error": last[:200]}


def table(rows: list[dict], models: list[str]) -> str:
    """Markdown: a line per problem, accuracy and seconds per model, the deep models' seconds over MiniRocket's."""
    cells = {(r["problem"], r["model"]): r for r in rows}
    problems = list(dict.fromkeys(r["problem"] for r in rows))
    deep = [m for m in models if m != "minirocket"]
    ratio_of = "minirocket" in models
    flops = [m for m in deep if any("tflop_fit" in r for r in rows if r.get("model") == m)]
    head = (["problem"] + [f"{MODELS[m]} acc | s" for m in models]
            + ([f"{MODELS[m]} / MiniRocket" for m in deep] if ratio_of else [])
            + [f"{MODELS[m]} TFLOP a fit | GFLOP/s" for m in flops])
    n_columns = 1 + 2 * len(models) + (len(deep) if ratio_of else 0) + 2 * len(flops)
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * n_columns]
    seconds = {m: [] for m in models}
    ratios = {m: [] for m in deep}
    for problem in problems:
        line = [problem]
        for m in models:
            r = cells.get((problem, m))
            if r is None or "error" in r:
                line += ["failed" if r else "not run", ""]
                continue
            total = r["fit_s"] + r["predict_s"]
            seconds[m].append(total)
            line += [f"{r['accuracy']:.3f}", f"{total:.1f}"]
        if ratio_of:
            base = cells.get((problem, "minirocket"))
            for m in deep:
                r = cells.get((problem, m))
                if base and r and "error" not in base and "error" not in r:
                    ratio = (r["fit_s"] + r["predict_s"]) / (base["fit_s"] + base["predict_s"])
                    ratios[m].append(ratio)
                    line.append(f"{ratio:.0f}x")
                else:
                    line.append("")
        for m in flops:
            r = cells.get((problem, m))
            ok = r is not None and "tflop_fit" in r
            line += [f"{r['tflop_fit']:.2f}", f"{1000 * r['tflop_fit'] / r['fit_s']:.0f}"] if ok else ["", ""]
        lines.append("| " + " | ".join(line) + " |")
    median = ["**median**"]
    for m in models:
        median += ["", f"{statistics.median(seconds[m]):.1f}" if seconds[m] else ""]
    if ratio_of:
        median += [f"{statistics.median(ratios[m]):.0f}x" if ratios[m] else "" for m in deep]
    for m in flops:
        counted = [r["tflop_fit"] for r in rows if r.get("model") == m and "tflop_fit" in r]
        median += [f"{statistics.median(counted):.2f}", ""]
    lines.append("| " + " | ".join(median) + " |")
    return "\n".join(lines)


def panel() -> list[str]:
    import yaml

    return list(yaml.safe_load(PANEL_CONFIG.read_text())["datasets"])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", nargs="+", default=None, help="default: the development panel (ucr-dev)")
    parser.add_argument(
        "--models", nargs="+", default=["ea-dc-transformer", "resnet", "minirocket"], choices=list(MODELS)
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cpu", help="'cpu', 'cuda' or 'cuda:N' (the deep models)")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads per cell")
    parser.add_argument("--jobs", type=int, default=1, help="cells at a time (each in its own process)")
    parser.add_argument("--offline", nargs="?", const=True, default=True,
                        help="no download (default); with a directory, read problems from there first")
    parser.add_argument("--cell-timeout", type=float, default=None, help="stop a cell after this many seconds")
    parser.add_argument("--output", default=None, help="write the rows as JSON here too")
    parser.add_argument("--flops", action="store_true",
                        help="also count each deep fit's floating-point operations (a separate one-epoch fit)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(run_cell(**json.loads(args.worker))), flush=True)
        return 0
    if args.jobs < 1 or args.threads < 1:
        parser.error("--jobs and --threads take a positive number")
    problems = args.datasets or panel()
    base = {"seed": args.seed, "device": args.device, "threads": args.threads, "offline": args.offline}
    counted = {**base, "flops": True} if args.flops else base
    if "minirocket" in args.models:  # numba compiles MiniRocket's kernels on a machine's first fit: not a cost of the table
        in_subprocess({**base, "problem": problems[0], "model": "minirocket"}, args.cell_timeout)
    cells = [{**(base if m == "minirocket" else counted), "problem": p, "model": m}
             for p in problems for m in args.models]
    rows = []
    started = time.perf_counter()
    with ThreadPoolExecutor(args.jobs) as pool:
        for row in pool.map(lambda cell: in_subprocess(cell, args.cell_timeout), cells):
            rows.append(row)
            print(json.dumps(row), flush=True)
            if args.output:
                Path(args.output).write_text(json.dumps(rows, indent=1))
    devices = sorted({r["device"] for r in rows if "device" in r})
    print(f"\nseed {args.seed}, device {', '.join(devices) or '?'}, {args.threads} torch thread(s) per cell, "
          f"{args.jobs} cell(s) at a time, {time.perf_counter() - started:.0f} s in all")
    print(table(rows, args.models))
    imports = [r["imports_s"] for r in rows if r.get("imports_s")]
    if imports:
        print(f"Not in the seconds above: a fresh process's first fit of a tsrep model also imports modules, a median "
              f"{statistics.median(imports):.1f} s here (aeon's convolution transforms, torch's compiler front end).")
    return 0 if all("error" not in r for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
