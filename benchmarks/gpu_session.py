"""The GPU checks of the "Fast fits" work, prepared here and run in one command on a lent GPU machine.

A GPU is lent to a session for minutes, on a bare machine that reaches no network (PyTorch and Triton are
there; aeon is not). This script makes those minutes count:

    python benchmarks/gpu_session.py prepare            # here: wheels and data into .whl/ and .gpu_data/
    python3 benchmarks/gpu_session.py run --out $OUT   # there: every check, one after the other

`prepare` downloads the wheels of what tsrep imports and the GPU image lacks (aeon and Deprecated, the
versions installed here, for CPython 3.12), copies the development panel's UCR files into .gpu_data/, lists
both in .git/info/exclude, and prints the command to give the device tool (with its `carry` list).

`run` installs the wheels into /tmp/site and then runs, each under its own time limit, writing what it
prints to OUT/<check>.log and a summary to OUT/summary.md:

1. long-series: ``benchmarks/long_series_gpu.py`` (one training step at T = 512, 2048, 4096 with per-step
   tokens: reference and fused evolving attention against ``nn.TransformerEncoder``; time and memory ratios).
2. default-fits: ``benchmarks/cost_table.py --device cuda`` on --problems (default: six panel problems), one
   default EA-DC-T fit at a time, fit+predict seconds and accuracy, and their median.
3. ensemble: GunPoint, one default fit against ``n_estimators=5`` trained together (stacked weights under
   vmap, the default on a GPU) and against five members in worker processes sharing the GPU (``n_jobs=5``,
   ``train_members_together=False``), and the ratios of their fit times to one fit's.

The checks' targets (the "Fast fits" issue): a default fit of a panel problem in at most 5 s (median), five
members in at most twice one member's time, and at T = 2048 a step within 5x of TransformerEncoder's time and
8x its peak memory.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WHEELS, DATA = ROOT / ".whl", ROOT / ".gpu_data"
#: What tsrep imports that the GPU image does not hold (the device tool's list of its packages).
MISSING_THERE = ("aeon", "Deprecated")
PROBLEMS = ("GunPoint", "ArrowHead", "Coffee", "Beef", "Lightning7", "ECG5000")
DEFAULT_LIMITS = {"long-series": 150, "default-fits": 240, "ensemble": 180}


def prepare(problems) -> None:
    from importlib.metadata import version

    # Here, not at the top: `run` starts on a machine without aeon, before its wheels are installed.
    from tsrep.data import load_archive

    WHEELS.mkdir(exist_ok=True)
    platforms = [f"--platform={p}" for p in ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64")]
    for name in MISSING_THERE:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--python-version", "3.12",
             "--implementation", "cp", *platforms, "-d", str(WHEELS), f"{name}=={version(name)}"],
            check=True,
        )
    for problem in problems:
        folder = Path(load_archive(problem, split="train", offline=True, return_metadata=True)[2]["path"])
        target = DATA / problem
        target.mkdir(parents=True, exist_ok=True)
        for path in folder.glob(f"{problem}_T*"):
            shutil.copy2(path, target / path.name)
    exclude = ROOT / ".git" / "info" / "exclude"
    exclude.parent.mkdir(parents=True, exist_ok=True)
    listed = exclude.read_text().splitlines() if exclude.exists() else []
    with exclude.open("a") as f:
        for entry in ("/.whl/", "/.gpu_data/"):
            if entry not in listed:
                f.write(entry + "\n")
    size = sum(p.stat().st_size for d in (WHEELS, DATA) for p in d.rglob("*") if p.is_file()) / 2**20
    print(f"\n.whl/ and .gpu_data/ ready ({size:.1f} MiB to carry). Give the device tool:\n"
          f'  command: PYTHONUNBUFFERED=1 python3 benchmarks/gpu_session.py run --out "$OUT"\n'
          f'  carry: [".whl", ".gpu_data"], timeout_s: 600')


def install_wheels() -> dict:
    """pip-install the carried wheels into /tmp/site; the environment the checks run with."""
    site = Path("/tmp/site")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
                    "--no-cache-dir", "--upgrade", "--target", str(site), *map(str, WHEELS.glob("*.whl"))], check=True)
    paths = [str(site), str(ROOT), os.environ.get("PYTHONPATH", "")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p), "PYTHONUNBUFFERED": "1"}


def check(name: str, command: list[str], out: Path, env: dict, limit: float) -> tuple[str, float]:
    """Run one check under its time limit; its output to OUT/<name>.log. Returns (last lines, seconds)."""
    start = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=limit, cwd=ROOT)
        text, status = done.stdout + done.stderr, f"exit {done.returncode}"
    except subprocess.TimeoutExpired as stopped:
        text = (stopped.stdout or b"").decode() if isinstance(stopped.stdout, bytes) else (stopped.stdout or "")
        status = f"stopped after {limit:.0f} s"
    seconds = time.perf_counter() - start
    (out / f"{name}.log").write_text(text)
    tail = "\n".join(text.strip().splitlines()[-25:])
    print(f"== {name}: {status}, {seconds:.0f} s\n{tail}\n", flush=True)
    return f"### {name} ({status}, {seconds:.0f} s)\n\n```\n{tail}\n```\n", seconds


ENSEMBLE = """
import json, sys, time, torch
from tsrep import EADCTransformerClassifier
from tsrep.data import load_archive
X, y = load_archive("GunPoint", split="train", offline=sys.argv[1])
Xt, yt = load_archive("GunPoint", split="test", offline=sys.argv[1])
row = {}
for label, params in (("one", {}), ("five", {"n_estimators": 5, "train_members_together": True}),
                      ("five_processes", {"n_estimators": 5, "n_jobs": 5, "train_members_together": False})):
    est = EADCTransformerClassifier(random_state=0, device="cuda", **params)
    start = time.perf_counter(); est.fit(X, y); torch.cuda.synchronize()
    row[label + "_fit_s"] = time.perf_counter() - start
    row[label + "_accuracy"] = float((est.predict(Xt) == yt).mean())
row["ratio"] = row["five_fit_s"] / row["one_fit_s"]  # target: at most 2
row["ratio_processes"] = row["five_processes_fit_s"] / row["one_fit_s"]
print(json.dumps(row))
"""


def run(out: Path, problems, limits: dict) -> int:
    import torch

    out.mkdir(parents=True, exist_ok=True)
    env = install_wheels()
    device = torch.cuda.get_device_name() if torch.cuda.is_available() else "no CUDA device"
    sections = [f"# GPU checks: {device}, torch {torch.__version__}\n"]
    fits = out / "default_fits.json"
    for name, command in (
        ("long-series", [sys.executable, "benchmarks/long_series_gpu.py"]),
        ("default-fits", [sys.executable, "benchmarks/cost_table.py", "--device", "cuda", "--models",
                          "ea-dc-transformer", "--offline", str(DATA), "--datasets", *problems, "--output", str(fits)]),
        ("ensemble", [sys.executable, "-c", ENSEMBLE, str(DATA)]),
    ):
        section, _ = check(name, command, out, env, limits[name])
        sections.append(section)
    if fits.exists():
        rows = [r for r in json.loads(fits.read_text()) if "fit_s" in r]
        if rows:
            median = statistics.median(r["fit_s"] for r in rows)
            sections.append(f"Median default fit over {len(rows)} problem(s): {median:.1f} s (target: at most 5 s)\n")
    (out / "summary.md").write_text("\n".join(sections))
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("step", choices=("prepare", "run"))
    parser.add_argument("--out", type=Path, default=Path("gpu_session_out"), help="run: where the logs go ($OUT)")
    parser.add_argument("--problems", nargs="+", default=list(PROBLEMS), help="the panel problems of default-fits")
    parser.add_argument("--limit", nargs=2, action="append", metavar=("CHECK", "SECONDS"), default=[],
                        help=f"a check's time limit (defaults {DEFAULT_LIMITS})")
    args = parser.parse_args(argv)
    limits = dict(DEFAULT_LIMITS)
    for name, seconds in args.limit:
        if name not in DEFAULT_LIMITS:
            parser.error(f"--limit takes a check of {sorted(DEFAULT_LIMITS)}, got {name!r}")
        try:
            limits[name] = float(seconds)
        except ValueError:
            limits[name] = -1.0
        if not limits[name] > 0:
            parser.error(f"--limit {name} takes a positive number of seconds, got {seconds!r}")
    if args.step == "prepare":
        prepare(args.problems)
        return 0
    return run(args.out, args.problems, limits)


if __name__ == "__main__":
    sys.exit(main())
