"""Fit time and accuracy of the EA-DC-Transformer's cost options against its default, on one machine, in one run.

For each problem and each setting of the cost options (``mixed_precision="bf16"``, ``compile=True``, both), one
``EADCTransformerClassifier(random_state=seed, **setting)`` is fitted on the archive TRAIN split and scored on TEST,
each in a fresh subprocess (so that no compiled graph or allocator cache carries over from one cell to the next),
one cell at a time. The table gives fit and predict seconds, test accuracy, epochs trained and the fit-time ratio
to the default of the same problem in the same run: the ratio, not the seconds, is what carries to another machine.

The options are meant for GPUs: on a CPU without native bfloat16 arithmetic, ``bf16`` is many times slower than
float32, and ``compile`` needs a C++ compiler and pays minutes of compilation per new input shape.

Run:    python benchmarks/cost_options.py --datasets GunPoint --device cuda
        python benchmarks/cost_options.py --datasets GunPoint Ham --options default compile --offline DIR
        python benchmarks/cost_options.py --datasets GunPoint --time-limit 300 --output cost.json
        python benchmarks/cost_options.py --device cpu --options default bf16 --set min_steps=20 max_epochs=2

``--offline`` takes a directory of UCR TSV or .ts files (``DIR/Name/Name_TRAIN.tsv``) or nothing (no download:
the shipped problems and those of the ``ucr`` extra); ``--time-limit`` starts no cell after that many seconds and
lists the cells it left out.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

SETTINGS = {
    "default": {},
    "bf16": {"mixed_precision": "bf16"},
    "compile": {"compile": True},
    "bf16+compile": {"mixed_precision": "bf16", "compile": True},
    # CUDA graphs: one launch replays a step's kernels (for small models whose steps are bound by launches).
    "compile-cudagraphs": {"compile": {"mode": "reduce-overhead"}},
}


def run_cell(problem: str, setting: str, seed: int, device: str, threads: int, offline, extra: dict) -> dict:
    """One fit + predict in this process: the worker's job."""
    import numpy as np
    import torch

    from tsrep import EADCTransformerClassifier
    from tsrep.data import load_archive

    torch.set_num_threads(threads)
    X_train, y_train = load_archive(problem, split="train", offline=offline)
    X_test, y_test = load_archive(problem, split="test", offline=offline)
    model = EADCTransformerClassifier(random_state=seed, device=device, **extra, **SETTINGS[setting])
    start = time.perf_counter()
    model.fit(X_train, y_train)
    on = next(model.module_.parameters()).device
    if on.type == "cuda":
        torch.cuda.synchronize(on)
    fit_s = time.perf_counter() - start
    start = time.perf_counter()
    predicted = model.predict(X_test)
    predict_s = time.perf_counter() - start
    return {
        "problem": problem,
        "setting": setting,
        "seed": seed,
        "accuracy": float(np.mean(predicted == y_test)),
        "fit_s": fit_s,
        "predict_s": predict_s,
        "epochs": int(model.n_epochs_),
        "device": torch.cuda.get_device_name(on) if on.type == "cuda" else "cpu",
        "torch": torch.__version__,
    }


def table(rows: list[dict]) -> str:
    """Markdown: one line per cell, the fit-time ratio against the same problem's default in this run."""
    default_fit = {r["problem"]: r["fit_s"] for r in rows if r["setting"] == "default" and "fit_s" in r}
    lines = [
        "| problem | setting | accuracy | fit s | predict s | epochs | fit / default fit |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['problem']} | {r['setting']} | failed: {r['error']} | | | | |")
            continue
        base = default_fit.get(r["problem"])
        ratio = f"{r['fit_s'] / base:.2f}" if base else "(no default in this run)"
        lines.append(
            f"| {r['problem']} | {r['setting']} | {r['accuracy']:.3f} | {r['fit_s']:.1f} | {r['predict_s']:.2f} | "
            f"{r['epochs']} | {ratio} |"
        )
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", nargs="+", default=["GunPoint"])
    parser.add_argument("--options", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="auto", help="'auto', 'cpu', 'cuda' or 'cuda:N'")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads per cell")
    parser.add_argument("--offline", nargs="?", const=True, default=None,
                        help="no download; with a directory, read problems from there first")
    parser.add_argument("--set", nargs="+", default=[], metavar="NAME=VALUE",
                        help="other estimator parameters for every cell, VALUE read as JSON (max_tokens=32)")
    parser.add_argument("--time-limit", type=float, default=None, help="start no cell after this many seconds")
    parser.add_argument("--cell-timeout", type=float, default=None, help="stop a cell after this many seconds")
    parser.add_argument("--output", default=None, help="write the rows as JSON here too")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.worker:
        cell = json.loads(args.worker)
        print(json.dumps(run_cell(**cell)), flush=True)
        return 0

    extra = {}
    for item in args.set:
        name, sep, value = item.partition("=")
        if not sep or not name:
            parser.error(f"--set takes NAME=VALUE, got {item!r}")
        try:
            extra[name] = json.loads(value)
        except json.JSONDecodeError:
            extra[name] = value
    clash = sorted(set(extra) & {k for s in SETTINGS.values() for k in s} | set(extra) & {"random_state", "device"})
    if clash:
        parser.error(f"--set cannot set {', '.join(clash)}: --options, --seed and --device set those")
    if "default" not in args.options:
        print("note: without 'default' in --options no ratio is printed", file=sys.stderr)
    settings = ["default"] + [s for s in args.options if s != "default"] if "default" in args.options else args.options
    start, rows, left_out = time.perf_counter(), [], []
    for problem in args.datasets:
        for setting in settings:
            if args.time_limit is not None and time.perf_counter() - start > args.time_limit:
                left_out.append(f"{problem}/{setting}")
                continue
            cell = {"problem": problem, "setting": setting, "seed": args.seed, "device": args.device,
                    "threads": args.threads, "offline": args.offline, "extra": extra}
            try:
                done = subprocess.run([sys.executable, __file__, "--worker", json.dumps(cell)],
                                      capture_output=True, text=True, timeout=args.cell_timeout)
            except subprocess.TimeoutExpired:
                done = subprocess.CompletedProcess([], 1, "", f"stopped after --cell-timeout {args.cell_timeout:.0f} s")
            if done.returncode == 0:
                row = json.loads(done.stdout.strip().splitlines()[-1])
            else:
                last = (done.stderr.strip().splitlines() or ["no output"])[-1]
                row = {"problem": problem, "setting": setting, "error": last[:200]}
            rows.append(row)
            print(json.dumps(row), flush=True)
            if args.output:
                with open(args.output, "w") as handle:
                    json.dump(rows, handle, indent=1)
    print()
    devices = sorted({r["device"] for r in rows if "device" in r})
    shown = ", ".join(f"{k}={v!r}" for k, v in extra.items())
    print(f"seed {args.seed}{', ' + shown if shown else ''}, device {', '.join(devices) or '?'}, {args.threads} torch CPU thread(s) per cell")
    print(table(rows))
    if left_out:
        print(f"not run (time limit {args.time_limit:.0f} s): {', '.join(left_out)}")
    return 0 if all("error" not in r for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
