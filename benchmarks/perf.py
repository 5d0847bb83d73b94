"""Speed and memory of the EA-DC-Transformer against a vanilla transformer, and fit+predict against peers.

One run measures, on this machine and in this process's torch thread setting:

1. **Per sequence length T** (batch B and channels C printed in the table), for
   * ``ea-dc-t``: tsrep's DCTransformerEncoder with the paper's defaults (d = 64, 3 blocks of 2
     layers, 8 heads, p = 0.25, alpha = beta = 0.5, 3 x 3 map kernel, dropout 0.1), mean pooling,
     MLP head;
   * ``ea-dc-t+ckpt``: the same with per-layer activation checkpointing;
   * ``ea-dc-t-p0``: the same with dropout 0, to set beside ``vanilla-p0`` (dropout-free both);
   * ``vanilla``: torch.nn.TransformerEncoder of the same width and number of layers (d = 64, 8 heads, 6
     layers, FFN 256, dropout 0.1, batch_first) with the same input projection, positional table,
     pooling and head. PyTorch picks its attention kernel: with attention dropout in training that
     is the math path of scaled_dot_product_attention (materialised maps), not flash attention;
   * ``vanilla-p0``: the same with dropout 0, where PyTorch takes its fused flash kernel on CPU:
     the lower bound of what plain attention costs;

   the training-step time (forward, cross-entropy, backward, RAdam step; best of --steps after
   one warm-up step, 2 at T = 1751), inference throughput (series per second in eval mode, no grad), the peak
   memory of the training steps, FLOPs per training step and the achieved FLOP rate, and the
   ratios ours / vanilla. Every (model, T) runs in a fresh subprocess.

   Memory: the increase of the subprocess's peak resident set size (getrusage ru_maxrss) over its
   resident set just before the first training step (model, optimizer and batch already built):
   everything the training steps touched, allocator caching included. A memory guard (RLIMIT_AS,
   --memory-limit-gb) turns an allocation beyond it into a reported failure instead of a machine
   that swaps or kills.

   FLOPs: torch.utils.flop_counter.FlopCounterMode over one training step (matrix products and
   convolutions; element-wise work is not counted). It does not count PyTorch's CPU flash-attention
   kernel, so for ``vanilla-p0`` the attention products are added analytically (the math path's
   count, 12 * B * T^2 * d per layer for forward and backward). The map-convolution count is
   checked against the analytic 2 * k^2 * K^2 FLOPs per map cell, times 3 for forward, input
   gradient and weight gradient (4 with checkpointing: the forward runs twice); the table prints
   counted / analytic, where "counted" is the step's convolution count minus that of the same
   model with beta = 0 (no map convolution).

2. **The EthanolConcentration-shaped step** (16 series, 3 channels, 1751 steps): EA-DC-T with
   checkpointing, without and with the patch front end (patch_len 8: 219 tokens), training-step
   time and peak memory.

3. **Fit + predict on shipped problems** (BasicMotions, JapaneseVowels, Covid3Month), test score
   and wall time of EADCTransformerClassifier / Regressor (--epochs, batch 16) next to aeon's
   MiniRocketClassifier / RocketRegressor and sktime's MVTSTransformerClassifier (same number of
   epochs; classification only), in the same run. Unequal-length JapaneseVowels is zero-padded
   to the longest series for the two peers that need equal length.

4. **Long series, score against cost of the front ends**: GunPoint (150 steps), OSULeaf (427) and
   ACSF1 (1460) with no front end (only where affordable), patches and downsampling.

Output: Markdown tables on stdout and in <output-dir>/perf.md, the raw numbers in perf.json, and
perf.png (training-step time and peak memory against T).

Run:    .venv/bin/python benchmarks/perf.py                 # full (about 30-60 min on 2 shared cores)
        .venv/bin/python benchmarks/perf.py --quick         # T in {32, 128}, fewer steps/epochs (minutes)
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import torch
from torch import nn

MODELS = ("ea-dc-t", "ea-dc-t+ckpt", "ea-dc-t-p0", "vanilla", "vanilla-p0")
D_MODEL, N_LAYERS, N_HEADS, FFN, MAP_KERNEL = 64, 6, 8, 256, 3
N_CLASSES = 4


# ----------------------------------------------------------------------------- models
class VanillaModel(nn.Module):
    """Linear(C -> d) * sqrt(d) + learned positions -> nn.TransformerEncoder -> mean pool -> MLP head."""

    def __init__(self, in_channels: int, max_len: int, dropout: float):
        super().__init__()
        self.input_proj = nn.Linear(in_channels, D_MODEL)
        self.pos = nn.Parameter(torch.empty(max_len, D_MODEL).uniform_(-0.02, 0.02))
        layer = nn.TransformerEncoderLayer(D_MODEL, N_HEADS, FFN, dropout, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, N_LAYERS, enable_nested_tensor=False)
        self.head = nn.Sequential(nn.Linear(D_MODEL, D_MODEL), nn.ReLU(), nn.Dropout(dropout),
                                  nn.Linear(D_MODEL, N_CLASSES))

    def forward(self, x):
        """x: (B, T, C) -> (B, N_CLASSES)"""
        h = self.input_proj(x) * math.sqrt(D_MODEL) + self.pos[: x.shape[1]]
        return self.head(self.encoder(h).mean(1))


def build_model(name: str, channels: int, length: int, patch_len: int | None = None, beta: float = 0.5) -> nn.Module:
    from tsrep.backbones import DCTransformerEncoder, SeriesModel

    if name.startswith("vanilla"):
        return VanillaModel(channels, length, 0.0 if name == "vanilla-p0" else 0.1)
    dropout = 0.0 if name.endswith("-p0") else 0.1  # "ea-dc-t-p0": dropout-free, to set beside vanilla-p0
    encoder = DCTransformerEncoder(channels, length, d_model=D_MODEL, n_blocks=N_LAYERS // 2, n_heads=N_HEADS,
                                   p=0.25, alpha=0.5, beta=beta, attn_kernel_size=MAP_KERNEL, dropout=dropout,
                                   checkpointing="ckpt" in name, patch_len=patch_len)
    return SeriesModel(encoder, N_CLASSES, "classification", "mean", dropout)


def analytic_map_conv_flops(name: str, batch: int, tokens: int) -> float:
    """FLOPs of the map convolutions of one training step: 2 k^2 K^2 per map cell, x3 (x4 checkpointed)."""
    passes = 4 if "ckpt" in name else 3
    return N_LAYERS * batch * tokens**2 * 2 * MAP_KERNEL**2 * N_HEADS**2 * passes


def flash_attention_flops(batch: int, length: int) -> float:
    """QK^T and PV of the math path, forward (4 B T^2 d) and backward (8 B T^2 d), all layers."""
    return N_LAYERS * 12 * batch * length**2 * D_MODEL


# ----------------------------------------------------------------------------- worker (one subprocess)
def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def worker(spec: dict) -> dict:
    """Measure one (model, T, B) in this process; returns a dict of numbers (or an error)."""
    from torch.utils.flop_counter import FlopCounterMode

    torch.set_num_threads(spec["threads"])
    limit = int(spec["memory_limit_gb"] * 2**30)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    torch.manual_seed(0)
    b, t, c = spec["batch"], spec["length"], spec["channels"]
    model = build_model(spec["model"], c, t, spec.get("patch_len"))
    x = torch.randn(b, t, c)
    y = torch.randint(0, N_CLASSES, (b,))
    optimizer = torch.optim.RAdam(model.parameters(), lr=1e-3, betas=(0.9, 0.99))

    def step():
        optimizer.zero_grad(set_to_none=True)
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()

    out = dict(spec)
    model.train()
    rss0 = _rss_bytes()
    try:
        for _ in range(spec["warmup"]):
            step()
        times = []
        for _ in range(spec["steps"]):
            start = time.perf_counter()
            step()
            times.append(time.perf_counter() - start)
        out["train_s"] = float(np.min(times))  # best of the timed steps: the machine may be shared
        out["train_times"] = times
        out["peak_mem_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - rss0
        if spec.get("count_flops", True):
            with FlopCounterMode(display=False) as counter:
                step()
            counts = {str(op): int(v) for op, v in counter.get_flop_counts()["Global"].items()}
            flops = float(counter.get_total_flops())
            if spec["model"] == "vanilla-p0":
                flops += flash_attention_flops(b, t)  # the CPU flash kernel is invisible to the counter
            out["flops"] = flops
            out["flop_counts"] = counts
            out["flop_rate"] = flops / out["train_s"]
            if spec["model"].startswith("ea-dc-t"):
                tokens = math.ceil(t / spec["patch_len"]) if spec.get("patch_len") else t
                conv2d = _map_conv_counted(spec, x, y, _conv_flops(counter.get_flop_counts()["Global"]))
                out["map_conv_counted_over_analytic"] = conv2d / analytic_map_conv_flops(spec["model"], b, tokens)
        if spec.get("inference", True):
            model.eval()
            with torch.no_grad():
                model(x)
                inf = []
                for _ in range(max(1, spec["steps"])):
                    start = time.perf_counter()
                    model(x)
                    inf.append(time.perf_counter() - start)
            out["infer_series_per_s"] = b / float(np.min(inf))
    except (RuntimeError, MemoryError) as err:  # the memory guard, or an allocator failure
        out["error"] = f"{type(err).__name__}: {str(err).splitlines()[0][:200]}"
        out["peak_mem_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - rss0
    return out


def _conv_flops(counts: dict) -> float:
    return float(sum(v for op, v in counts.items() if str(op).startswith("aten.convolution")))


def _map_conv_counted(spec: dict, x, y, conv_total: float) -> float:
    """Convolution FLOPs FlopCounterMode counted for the map convolutions: the step's convolution count
    minus that of the same model with beta = 0 (no map convolution, the same dilated 1-D ones)."""
    from torch.utils.flop_counter import FlopCounterMode

    torch.manual_seed(0)
    model = build_model(spec["model"], spec["channels"], spec["length"], spec.get("patch_len"), beta=0.0).train()
    with FlopCounterMode(display=False) as counter:
        nn.functional.cross_entropy(model(x), y).backward()
    return conv_total - _conv_flops(counter.get_flop_counts()["Global"])


def run_worker(spec: dict, timeout: float) -> dict:
    """Run `spec` in a fresh interpreter (peak memory per configuration); returns its dict."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", json.dumps(spec)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return dict(spec, error=f"timeout after {timeout:.0f} s")
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
    return dict(spec, error=f"exit {proc.returncode}: {tail[0][:200]}")


# ----------------------------------------------------------------------------- part 3 and 4: fit + predict
def _pad3d(cases, length):
    out = np.zeros((len(cases), cases[0].shape[0], length))
    for i, c in enumerate(cases):
        out[i, :, : c.shape[1]] = c
    return out


def _equal_length(X_train, X_test):
    """3-D arrays; lists of unequal-length series are zero-padded to the longest of both splits."""
    from tsrep.data import as_case_list

    if isinstance(X_train, np.ndarray) and isinstance(X_test, np.ndarray) and X_train.shape[-1] == X_test.shape[-1]:
        return X_train, X_test
    tr, te = as_case_list(X_train), as_case_list(X_test)
    length = max(c.shape[1] for c in tr + te)
    return _pad3d(tr, length), _pad3d(te, length)


def fit_predict(name: str, dataset: str, estimator, equal_length: bool) -> dict:
    from sklearn.metrics import accuracy_score, mean_squared_error

    from tsrep.data.archive import dataset_task, load_archive

    X_train, y_train = load_archive(dataset, split="train")
    X_test, y_test = load_archive(dataset, split="test")
    if equal_length:
        X_train, X_test = _equal_length(X_train, X_test)
    task = dataset_task(dataset)
    start = time.perf_counter()
    try:
        estimator.fit(X_train, y_train)
        pred = estimator.predict(X_test)
    except Exception as err:  # noqa: BLE001  (a peer that cannot take the input: reported, the run goes on)
        return {"dataset": dataset, "model": name, "error": f"{type(err).__name__}: {str(err)[:160]}"}
    seconds = time.perf_counter() - start
    if task == "classification":
        score, metric = float(accuracy_score(np.asarray(y_test), pred)), "accuracy"
    else:
        score = float(np.sqrt(mean_squared_error(np.asarray(y_test, dtype=float), pred)))
        metric = "RMSE"
    return {"dataset": dataset, "model": name, "metric": metric, "score": score, "seconds": seconds}


def ours(dataset: str, epochs: int, **params):
    from tsrep import EADCTransformerClassifier, EADCTransformerRegressor
    from tsrep.data.archive import dataset_task

    cls = EADCTransformerClassifier if dataset_task(dataset) == "classification" else EADCTransformerRegressor
    return cls(max_epochs=epochs, batch_size=16, random_state=0, device="cpu", **params)


def peers(dataset: str, epochs: int) -> list[tuple[str, object, bool]]:
    from tsrep.data.archive import dataset_task

    out = []
    if dataset_task(dataset) == "classification":
        from aeon.classification.convolution_based import MiniRocketClassifier

        out.append(("MiniRocket (aeon)", MiniRocketClassifier(random_state=0), True))
        try:
            from sktime.classification.deep_learning import MVTSTransformerClassifier

            out.append(("MVTSTransformer (sktime)",
                        MVTSTransformerClassifier(num_epochs=epochs, verbose=False, random_state=0), True))
        except ImportError:
            pass
    else:
        from aeon.regression.convolution_based import RocketRegressor

        out.append(("Rocket (aeon)", RocketRegressor(random_state=0), True))
    return out


# ----------------------------------------------------------------------------- report
def _fmt_bytes(n):
    return "n/a" if n is None else f"{n / 2**20:,.0f} MiB" if n < 2**30 else f"{n / 2**30:.2f} GiB"


def _get(rows, model, t, key):
    for r in rows:
        if r["model"] == model and r["length"] == t and "error" not in r:
            return r.get(key)
    return None


def _ratio(a, b):
    return f"{a / b:.2f}x" if a is not None and b else "n/a"


def micro_table(rows, lengths) -> str:
    lines = [
        "| T | B x C | model | train step | infer series/s | peak memory | GFLOP/step | GFLOP/s | map conv counted/analytic |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for t in lengths:
        for m in MODELS:
            r = next((r for r in rows if r["model"] == m and r["length"] == t), None)
            if r is None:
                continue
            shape = f"{r['batch']} x {r['channels']}"
            if "error" in r:
                lines.append(f"| {t} | {shape} | {m} | failed: {r['error']} | | {_fmt_bytes(r.get('peak_mem_bytes'))} | | | |")
                continue
            check = r.get("map_conv_counted_over_analytic")
            lines.append(
                f"| {t} | {shape} | {m} | {r['train_s'] * 1000:,.0f} ms | {r.get('infer_series_per_s', 0):,.1f} | "
                f"{_fmt_bytes(r['peak_mem_bytes'])} | {r['flops'] / 1e9:,.2f} | {r['flop_rate'] / 1e9:.2f} | "
                f"{'' if check is None else f'{check:.3f}'} |"
            )
    lines += ["", ("| T | time ours/vanilla | time ours/vanilla-p0 | time ours-p0/vanilla-p0 | time ckpt/vanilla | "
              "memory ours/vanilla | memory ckpt/vanilla | memory ckpt/vanilla-p0 | FLOP rate ours/vanilla | "
              "FLOP rate ours/vanilla-p0 |"),
              "|---|---|---|---|---|---|---|---|---|---|"]
    for t in lengths:
        def g(m, k, t=t):
            return _get(rows, m, t, k)

        lines.append(
            f"| {t} | {_ratio(g('ea-dc-t', 'train_s'), g('vanilla', 'train_s'))} | "
            f"{_ratio(g('ea-dc-t', 'train_s'), g('vanilla-p0', 'train_s'))} | "
            f"{_ratio(g('ea-dc-t-p0', 'train_s'), g('vanilla-p0', 'train_s'))} | "
            f"{_ratio(g('ea-dc-t+ckpt', 'train_s'), g('vanilla', 'train_s'))} | "
            f"{_ratio(g('ea-dc-t', 'peak_mem_bytes'), g('vanilla', 'peak_mem_bytes'))} | "
            f"{_ratio(g('ea-dc-t+ckpt', 'peak_mem_bytes'), g('vanilla', 'peak_mem_bytes'))} | "
            f"{_ratio(g('ea-dc-t+ckpt', 'peak_mem_bytes'), g('vanilla-p0', 'peak_mem_bytes'))} | "
            f"{_ratio(g('ea-dc-t', 'flop_rate'), g('vanilla', 'flop_rate'))} | "
            f"{_ratio(g('ea-dc-t', 'flop_rate'), g('vanilla-p0', 'flop_rate'))} |"
        )
    return "\n".join(lines)


def plot(rows, lengths, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for m in MODELS:
        pts = [(t, _get(rows, m, t, "train_s"), _get(rows, m, t, "peak_mem_bytes")) for t in lengths]
        pts = [p for p in pts if p[1] is not None]
        if not pts:
            continue
        ts = [p[0] for p in pts]
        # per series of the batch: B differs between lengths (the longest runs with a smaller batch)
        per = [next(r["batch"] for r in rows if r["length"] == t) for t in ts]
        axes[0].plot(ts, [p[1] / b for p, b in zip(pts, per)], "o-", label=m)
        axes[1].plot(ts, [p[2] / 2**20 / b for p, b in zip(pts, per)], "o-", label=m)
    batches = sorted({(r["length"], r["batch"]) for r in rows})
    labels = ("training step per series of the batch [s]", "peak memory of the step per series [MiB]")
    for ax, label in zip(axes, labels):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("series length T  (B per T: " + ", ".join(f"{t}:{b}" for t, b in batches) + ")")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.suptitle("EA-DC-Transformer vs nn.TransformerEncoder (d=64, 6 layers, 8 heads), CPU")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


# ----------------------------------------------------------------------------- profile
def profile_step(length: int, batch: int, channels: int, checkpointing: bool, rows: int = 12) -> str:
    """torch.profiler table (self CPU time) of one EA-DC-T training step after a warm-up step."""
    from torch.profiler import ProfilerActivity, profile

    torch.manual_seed(0)
    model = build_model("ea-dc-t+ckpt" if checkpointing else "ea-dc-t", channels, length).train()
    x, y = torch.randn(batch, length, channels), torch.randint(0, N_CLASSES, (batch,))
    optimizer = torch.optim.RAdam(model.parameters(), lr=1e-3)

    def step():
        optimizer.zero_grad(set_to_none=True)
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()

    step()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        step()
    return prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=rows, max_name_column_width=40)


# ----------------------------------------------------------------------------- main
def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="T in {32, 128}, 2 steps, 3 epochs, fewer datasets")
    parser.add_argument("--lengths", type=int, nargs="+", default=None)
    parser.add_argument("--batch", type=int, default=16, help="B for every T but the longest")
    parser.add_argument("--long-batch", type=int, default=2, help="B at T = 1751 (vanilla needs ~4 GiB per series)")
    parser.add_argument("--channels", type=int, default=3)
    parser.add_argument("--steps", type=int, default=None, help="timed training steps per configuration")
    parser.add_argument("--epochs", type=int, default=None, help="epochs of the deep models in parts 3 and 4")
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--memory-limit-gb", type=float, default=20.0)
    parser.add_argument("--skip", nargs="*", default=[], choices=["micro", "ethanol", "fit", "long"])
    parser.add_argument("--output-dir", type=Path, default=ROOT / "results" / "perf")
    parser.add_argument("--profile", type=int, nargs=2, metavar=("T", "B"), default=None,
                        help="only print a torch.profiler table of one EA-DC-T training step at T, B")
    parser.add_argument("--checkpointing", action="store_true", help="with --profile: checkpointed model")
    parser.add_argument("--plot-from", type=Path, default=None, help="only redraw perf.png from a perf.json")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv=None) -> None:
    args = parse_args(argv)
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker))))
        return
    if args.plot_from:
        rows = json.loads(args.plot_from.read_text())["micro"]
        plot(rows, sorted({r["length"] for r in rows}), args.plot_from.with_name("perf.png"))
        return
    if args.profile:
        torch.set_num_threads(args.threads)
        print(profile_step(*args.profile, args.channels, args.checkpointing))
        return
    lengths = args.lengths or ([32, 128] if args.quick else [32, 128, 512, 1751])
    steps = args.steps or (2 if args.quick else 3)
    epochs = args.epochs or (3 if args.quick else 30)
    args.output_dir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    report = [
        f"# benchmarks/perf.py — {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
        "",
        (f"torch {torch.__version__}, {args.threads} threads, {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} cores, load average at start {os.getloadavg()[0]:.1f}; "
        f"command: `{' '.join([Path(sys.executable).name, 'benchmarks/perf.py', *(argv or sys.argv[1:])])}`"),
        "",
    ]
    results: dict = {"args": {k: str(v) for k, v in vars(args).items()}}

    if "micro" not in args.skip:
        rows = []
        for t in lengths:
            b = args.long_batch if t >= 1000 else args.batch
            for m in MODELS:
                spec = {"model": m, "length": t, "batch": b, "channels": args.channels, "steps": min(steps, 2) if t >= 1000 else steps, "warmup": 1,
                            "threads": args.threads, "memory_limit_gb": args.memory_limit_gb}
                row = run_worker(spec, timeout=3600)
                rows.append(row)
                print(f"  {m} T={t} B={b}: " + (row.get("error") or
                      f"{row['train_s'] * 1000:.0f} ms, {_fmt_bytes(row['peak_mem_bytes'])}"), flush=True)
        results["micro"] = rows
        report += ["## Training step, inference, memory and FLOPs against T", "", micro_table(rows, lengths), ""]
        plot(rows, lengths, args.output_dir / "perf.png")

    if "ethanol" not in args.skip:
        b, t = (4, 1751) if args.quick else (16, 1751)
        rows = []
        for patch, warm, n in ((None, 0, 1), (8, 1, steps)):
            spec = {"model": "ea-dc-t+ckpt", "length": t, "batch": b, "channels": 3, "steps": n, "warmup": warm, "patch_len": patch,
                        "threads": args.threads, "memory_limit_gb": args.memory_limit_gb, "inference": False,
                        "count_flops": False}
            rows.append(run_worker(spec, timeout=3600))
            print(f"  ethanol-shaped patch={patch}: {rows[-1].get('error') or rows[-1]['train_s']}", flush=True)
        results["ethanol"] = rows
        lines = ["| front end | tokens | training step | steps timed (warm-up) | peak memory |", "|---|---|---|---|---|"]
        for r in rows:
            tokens = math.ceil(t / r["patch_len"]) if r["patch_len"] else t
            what = f"patch_len={r['patch_len']}" if r["patch_len"] else "none"
            timing = r.get("error") or f"{r['train_s']:.2f} s"
            lines.append(f"| {what} | {tokens} | {timing} | {r['steps']} ({r['warmup']}) | "
                         f"{_fmt_bytes(r.get('peak_mem_bytes'))} |")
        if all("error" not in r for r in rows):
            lines.append(f"\nSpeed-up of the patch front end: {rows[0]['train_s'] / rows[1]['train_s']:.1f}x")
        report += [f"## EthanolConcentration-shaped step ({b} x 3 x {t}, EA-DC-T with checkpointing)", "", *lines, ""]

    if "fit" not in args.skip:
        datasets = ["BasicMotions", "Covid3Month"] if args.quick else ["BasicMotions", "JapaneseVowels", "Covid3Month"]
        rows = []
        for ds in datasets:
            dataset_rows = [fit_predict("EA-DC-T (tsrep)", ds, ours(ds, epochs), equal_length=False)]
            for name, est, equal in peers(ds, epochs):
                dataset_rows.append(fit_predict(name, ds, est, equal_length=equal))
            rows += dataset_rows
            for r in dataset_rows:
                print(f"  {r['dataset']} {r['model']}: {r.get('error') or (r['score'], r['seconds'])}", flush=True)
        results["fit"] = rows
        report += [f"## Fit + predict on shipped problems ({epochs} epochs for the deep models, batch 16, seed 0)", "",
                   "| dataset | model | test score | fit + predict |", "|---|---|---|---|"]
        report += [f"| {r['dataset']} | {r['model']} | " + (f"failed: {r['error']} | |" if "error" in r else
                   f"{r['metric']} {r['score']:.4f} | {r['seconds']:.1f} s |") for r in rows]
        report.append("")

    if "long" not in args.skip:
        plan = [("GunPoint", {}), ("GunPoint", {"patch_len": 8}), ("GunPoint", {"downsample": 4})]
        if not args.quick:
            plan += [("OSULeaf", {"patch_len": 8}), ("OSULeaf", {"patch_len": 16, "patch_stride": 8}),
                     ("OSULeaf", {"downsample": 8}), ("ACSF1", {"patch_len": 16}), ("ACSF1", {"downsample": 16})]
        rows = []
        for ds, params in plan:
            label = ", ".join(f"{k}={v}" for k, v in params.items()) or "none (one token per step)"
            rows.append(dict(fit_predict("EA-DC-T (tsrep)", ds, ours(ds, epochs, **params), False), front_end=label))
            print(f"  {ds} {label}: {rows[-1].get('error') or (rows[-1]['score'], rows[-1]['seconds'])}", flush=True)
        results["long"] = rows
        report += [f"## Long series: front ends, score and cost ({epochs} epochs, batch 16, seed 0)", "",
                   "| dataset | front end | test accuracy | fit + predict |", "|---|---|---|---|"]
        report += [f"| {r['dataset']} | {r['front_end']} | " + (f"failed: {r['error']} | |" if "error" in r else
                   f"{r['score']:.4f} | {r['seconds']:.1f} s |") for r in rows]
        report.append("")

    report.append(f"Wall time {time.perf_counter() - started:.0f} s; load average at end {os.getloadavg()[0]:.1f}.")
    text = "\n".join(report)
    print(text)
    (args.output_dir / "perf.md").write_text(text + "\n")
    (args.output_dir / "perf.json").write_text(json.dumps(results, indent=1, default=str))


if __name__ == "__main__":
    main()
